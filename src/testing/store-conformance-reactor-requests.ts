import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { JobRecord, ReactorRequestRecord, Store } from '../storage/store.js';
import { APP_A, T0, TENANT_A, TENANT_B } from './store-fixtures.js';

const KIND = 'reactor.run';

/** A pending asynchronous run of TENANT_A with the given fields. */
function makeRequest(overrides: Partial<ReactorRequestRecord> = {}): ReactorRequestRecord {
  return {
    tenantId: TENANT_A,
    id: randomUUID(),
    reactorId: randomUUID(),
    applicationId: APP_A,
    status: 'pending',
    callbackUrl: null,
    timeoutMs: 10_000,
    args: new Uint8Array([7, 8, 9]),
    result: null,
    error: null,
    createdAt: T0,
    startedAt: null,
    completedAt: null,
    expiresAt: null,
    ...overrides,
  };
}

/** The job that runs a request. */
function jobFor(request: ReactorRequestRecord): JobRecord {
  return {
    id: randomUUID(),
    tenantId: request.tenantId,
    kind: KIND,
    key: null,
    payload: JSON.stringify({ tenantId: request.tenantId, requestId: request.id }),
    runAt: T0,
    attempts: 0,
    maxAttempts: 5,
    leaseOwner: null,
    leaseExpiresAt: null,
    createdAt: T0,
    lastError: null,
  };
}

/** Registers the Store conformance tests of asynchronous reactor runs (see runStoreConformance). */
export function reactorRequestConformance(current: () => Store): void {
  let store: Store;
  beforeEach(() => {
    store = current();
  });
  const claimAll = () => store.claimJobs('conformance', T0 + 1, 60_000, 100, [KIND]);

  describe('asynchronous reactor runs', () => {
    it('stores a request with the job that runs it; another tenant does not see the request', async () => {
      const request = makeRequest();
      const job = jobFor(request);
      await store.createReactorRequest(request, job);
      expect(await store.getReactorRequest(TENANT_A, request.id)).toEqual({ ...request, args: expect.anything() });
      expect([...(await store.getReactorRequest(TENANT_A, request.id))!.args]).toEqual([7, 8, 9]);
      expect(await store.getReactorRequest(TENANT_B, request.id)).toBeNull();
      expect((await claimAll()).map((j) => [j.id, j.payload])).toEqual([[job.id, job.payload]]);
    });

    it('stores both or neither: a request whose id is taken fails and leaves no job', async () => {
      const first = makeRequest();
      const firstJob = jobFor(first);
      await store.createReactorRequest(first, firstJob);
      const again = makeRequest({ id: first.id, reactorId: 'other' });
      await expect(store.createReactorRequest(again, jobFor(again))).rejects.toThrow();
      expect((await store.getReactorRequest(TENANT_A, first.id))?.reactorId).toBe(first.reactorId);
      expect((await claimAll()).map((j) => j.id)).toEqual([firstJob.id]);
    });

    it('starts a request once (startedAt kept), finishes it once, and refuses both after', async () => {
      const request = makeRequest();
      await store.createReactorRequest(request, jobFor(request));
      expect(await store.startReactorRequest(TENANT_A, request.id, T0 + 10)).toBe(true);
      expect(await store.startReactorRequest(TENANT_A, request.id, T0 + 20)).toBe(true);
      expect(await store.getReactorRequest(TENANT_A, request.id)).toMatchObject({ status: 'running', startedAt: T0 + 10 });
      const outcome = { status: 'completed', result: new Uint8Array([1]), error: null, completedAt: T0 + 30, expiresAt: T0 + 40 } as const;
      expect(await store.finishReactorRequest(TENANT_B, request.id, outcome)).toBe(false);
      expect(await store.finishReactorRequest(TENANT_A, request.id, outcome)).toBe(true);
      expect(await store.finishReactorRequest(TENANT_A, request.id, { ...outcome, status: 'failed', result: null, error: '{}' })).toBe(false);
      expect(await store.startReactorRequest(TENANT_A, request.id, T0 + 50)).toBe(false);
      expect(await store.getReactorRequest(TENANT_A, request.id)).toMatchObject({ status: 'completed', error: null, completedAt: T0 + 30, expiresAt: T0 + 40, startedAt: T0 + 10 });
    });
  });
}
