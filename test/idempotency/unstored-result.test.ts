/**
 * A run that succeeded but whose result could not be stored keeps its key. A
 * retry answers 409 saying so, never runs again (its side effect happened), and the key is usable
 * again when it expires, 24 hours after the run (docs/http-api.md, Idempotency). The store is a
 * real one, refusing only the writes named.
 */
import { afterEach, expect, it } from 'vitest';
import type { Logger } from '../../src/common/logger.js';
import { ConflictError } from '../../src/errors/errors.js';
import { IDEMPOTENCY_TTL_MS } from '../../src/idempotency/idempotency-service.js';
import type { IdempotencyResponse } from '../../src/storage/store.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL } from '../support/tokens.js';
import { refusingStore } from '../support/refusing-store.js';
import { type TestStore, describeEachStore } from '../support/stores.js';
import { SUITE_START } from '../support/suite-start.js';
import { expectProblem, harness } from '../http/helpers.js';

const KEY = 'SVC-IDEMPOTENCY-KEY';
const UNSTORED = /ran, but its response could not be stored, so it is neither replayed nor run again; check its outcome and send any new request with a new key/;

/** The write of a result: completeIdempotencyKey with a body (the mark of an unstored one has none). */
const isResultWrite = (method: string, args: unknown[]) => method === 'completeIdempotencyKey' && (args[1] as IdempotencyResponse).body !== null;

describeEachStore('idempotency after a failed result write', (store) => {
  const open: TestVault[] = [];
  const logged: string[] = [];
  const logger: Logger = { info() {}, warn() {}, error: (message, fields) => logged.push(JSON.stringify([message, fields])) };
  afterEach(async () => {
    for (const vault of open.splice(0)) await vault.close();
    // Logged as a fault of the store, naming neither the client's key nor any data.
    for (const line of logged.splice(0)) expect(line).not.toMatch(/order-7|charge-1|charged/);
  });

  /** A test vault on a fresh store of this kind that refuses what `refuses` names. */
  async function refusingVault(refuses: (method: string, args: unknown[]) => boolean): Promise<TestVault> {
    const vault = await createTestVault({ start: SUITE_START, logger, store: refusingStore(store.factory()(), refuses) });
    open.push(vault);
    return vault;
  }

  /** The TestStore harness() takes, giving it such a vault. */
  const refusingKind = (refuses: (method: string, args: unknown[]) => boolean): TestStore => ({ ...store, vault: () => refusingVault(refuses) });

  async function inProcess(refuses: (method: string, args: unknown[]) => boolean) {
    const vault = await refusingVault(refuses);
    const app = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
    const charge = () => vault.idempotency.run(app, { key: 'order-7', fingerprint: 'charge order 7' }, () => vault.tokens.create(app, { type: 'token', data: 'charged' }));
    const charges = async () => (await vault.tokens.list(app, {})).data.length;
    return { vault, charge, charges };
  }

  it('in process: the first caller gets the real result (stored: false); a retry is a 409 and does not run; the key is usable again at its expiry', async () => {
    const { vault, charge, charges } = await inProcess(isResultWrite);
    const first = await charge();
    expect(first).toMatchObject({ replayed: false, stored: false });
    expect(first.result.data).toBe('charged');
    const retry = charge();
    await expect(retry).rejects.toBeInstanceOf(ConflictError);
    await expect(retry).rejects.toThrow(UNSTORED);
    expect(await charges()).toBe(1);
    // Still refused just before its 24 hours are over, run again (a new request) after them.
    vault.clock.advance(IDEMPOTENCY_TTL_MS - 1);
    await expect(charge()).rejects.toThrow(UNSTORED);
    vault.clock.advance(1);
    expect((await charge()).replayed).toBe(false);
    expect(await charges()).toBe(2);
  });

  it('in process: when the store refuses the mark too, the key stays claimed (409) and the mark is written before the next request once the store answers', async () => {
    let down = false;
    const { vault, charge, charges } = await inProcess((method, args) => isResultWrite(method, args) || (down && method === 'completeIdempotencyKey'));
    down = true;
    expect((await charge()).stored).toBe(false);
    // The claim written before the run still holds the key: a retry meanwhile is "in progress".
    await expect(charge()).rejects.toThrow(/still in progress/);
    down = false;
    // Past the claim's lease, the kept mark is written first: the retry is refused, not run.
    vault.clock.advance(10 * 60 * 1000);
    await expect(charge()).rejects.toThrow(UNSTORED);
    expect(await charges()).toBe(1);
  });

  it("over HTTP: a reactor's charge runs once; the first answer is the real one (marked not stored), the retry a 409 saying why", async () => {
    const h = await harness({}, refusingKind(isResultWrite));
    const ledger = await h.vault.caller({
      name: 'ledger',
      permissions: ['token:create', 'token:read'],
      rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }] as never,
    });
    // The "charge": a token the reactor's code creates through req.bt, counted afterwards.
    const code = "module.exports = async (req) => ({ raw: { charge: (await req.bt.tokens.create({ type: 'token', data: 'charge' })).id } })";
    const reactor = await h.call('POST', '/reactors', { key: h.adminKey, body: { name: 'charge', code, application: { id: ledger.applicationId } } });
    expect(reactor.status, reactor.text).toBe(201);
    const invoker = (await h.vault.caller({ name: 'invoker', permissions: ['token:use'] })).key;
    const react = () => h.call('POST', `/reactors/${reactor.body.id}/react`, { key: invoker, body: { args: {} }, headers: { [KEY]: 'charge-1' } });

    const first = await react();
    expect(first.status, first.text).toBe(200);
    expect(first.body.raw.charge).toEqual(expect.any(String));
    expect(first.headers.get('svc-idempotent-stored')).toBe('false');
    const openapi = (await h.call('GET', '/openapi.json')).body;
    expect(openapi.paths['/reactors/{id}/react'].post.responses['200'].headers['SVC-Idempotent-Stored'].schema).toEqual({ type: 'string', enum: ['false'] });
    const retry = await react();
    expect(expectProblem(retry, 409).detail).toMatch(UNSTORED);
    const charges = await h.call('GET', '/tokens', { key: ledger.key });
    expect(charges.body.data.map((token: { id: string }) => token.id)).toEqual([first.body.raw.charge]);
    expect(h.errors).toEqual([]);
    expect(logged.some((line) => line.includes('could not store an idempotent response'))).toBe(true);
  });
});
