import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/common/logger.js';
import { SWEEP_CONCERNS } from '../../src/jobs/sweeper.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Store } from '../../src/storage/store.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import { faultyStore } from '../support/faulty-store.js';
import { describeEachStore, type TestStore } from '../support/stores.js';
import { SUITE_START } from '../support/suite-start.js';
import { CARD } from '../support/tokens.js';

const HOUR = 60 * 60 * 1000;
const INTERVAL = 60_000;

function recordingLogger() {
  const entries: { level: string; message: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (message: string, fields: Record<string, unknown> = {}) =>
      void entries.push({ level, message, fields });
  const logger: Logger = { info: at('info'), warn: at('warn'), error: at('error') };
  return { logger, entries };
}

/** Flips a byte of the token's sealed body in its stored row (the real table, through the real store). */
async function corrupt(vault: TestVault, id: string): Promise<void> {
  const row = (await vault.store.getToken(vault.tenantId, id, vault.clock.now()))!;
  const damaged = Buffer.from(row.ciphertext);
  damaged[damaged.length - 1]! ^= 0xff;
  expect(await vault.store.replaceCiphertext(vault.tenantId, id, row.ciphertext, { ciphertext: damaged, keyVersion: row.keyVersion, cvcPurgeAt: row.cvcPurgeAt })).toBe(true);
}

describeEachStore('the sweep', (kind) => {
  it('a token whose stored data cannot be opened is counted, logged by id, skipped, and not retried on every sweep; the other purges run', async () => {
    const { logger, entries } = recordingLogger();
    const vault = await kind.vault({ logger });
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const [first, damaged, last] = [
      await vault.tokens.create(app, { type: 'card', data: CARD }),
      await vault.tokens.create(app, { type: 'card', data: CARD }),
      await vault.tokens.create(app, { type: 'card', data: CARD }),
    ];
    const expiring = await vault.tokens.create(app, { type: 'token', data: 'x', expires_at: new Date(vault.clock.now() + HOUR).toISOString() });
    await corrupt(vault, damaged!.id);
    vault.clock.advance(HOUR / 2);
    const later = await vault.tokens.create(app, { type: 'card', data: CARD });
    vault.clock.advance(HOUR / 2);
    expect(await vault.sweep()).toMatchObject({ expired: 1, cvcRemoved: 2, cvcUnreadable: 1 });
    for (const token of [first!, last!]) expect((await vault.store.getToken(vault.tenantId, token.id, vault.clock.now()))!.cvcPurgeAt).toBeNull();
    expect(await vault.store.getDeletedToken(vault.tenantId, expiring.id)).toMatchObject({ deletedBy: 'system:expiry' });
    const logged = entries.filter((e) => e.message.startsWith('sweep: a stored token could not be opened'));
    expect(logged).toEqual([
      {
        level: 'error',
        message: 'sweep: a stored token could not be opened; its cvc removal is skipped',
        fields: expect.objectContaining({ tenantId: vault.tenantId, tokenId: damaged!.id, error: 'decryption_failed' }),
      },
    ]);
    expect(JSON.stringify(entries)).not.toMatch(/4242424242424242|"cvc":"/);
    expect(vault.sweepStats().unreadableRows).toBe(1);
    const metrics = createMetrics();
    metrics.setSweepStats(() => vault.sweepStats());
    expect(await metrics.render()).toMatch(/^tokenvault_sweep_unreadable_rows_total 1$/m);

    // The next sweep passes over it (set aside for an hour) and removes the next token's cvc.
    vault.clock.advance(HOUR / 2);
    expect(await vault.sweep()).toMatchObject({ cvcRemoved: 1, cvcUnreadable: 0 });
    expect((await vault.store.getToken(vault.tenantId, later.id, vault.clock.now()))!.cvcPurgeAt).toBeNull();
    expect(vault.sweepStats().unreadableRows).toBe(1);
    // Tried again once its hour is over (a restored key would make it readable): reported again.
    vault.clock.advance(HOUR / 2);
    expect(await vault.sweep()).toMatchObject({ cvcRemoved: 0, cvcUnreadable: 1 });
    expect(vault.sweepStats().unreadableRows).toBe(2);
  });

  it('each concern is its own job: one the store refuses holds back none of the others', async () => {
    const { vault, faults, cleanup } = await faultyVault(kind, ['purgeExpiredTokens']);
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const card = await vault.tokens.create(app, { type: 'card', data: CARD });
    const expiring = await vault.tokens.create(app, { type: 'token', data: 'x', expires_at: new Date(vault.clock.now() + HOUR).toISOString() });
    vault.clock.advance(HOUR);
    // Expiry is the first concern: the cvc removal after it runs all the same.
    expect(await vault.worker.runDue()).toBe(SWEEP_CONCERNS.length);
    expect((await vault.store.getToken(vault.tenantId, card.id, vault.clock.now()))!.cvcPurgeAt).toBeNull();
    expect(await vault.store.getDeletedToken(vault.tenantId, expiring.id)).toBeNull();
    expect(vault.sweepStats().failures).toMatchObject({ expiry: 1, cvc: 0, sessions: 0 });
    // vault.sweep() runs every concern too, and names the one that failed.
    const error = (await vault.sweep().catch((e: unknown) => e)) as AggregateError;
    expect(error).toBeInstanceOf(AggregateError);
    expect(error.message).toBe('the sweep failed for: expiry');
    expect(faults.rejected).toBe(2);
    await vault.close();
    await cleanup();
  });

  it('a recurring sweep job failing many times in a row still runs later, within one interval of each try', async () => {
    const { vault, faults, cleanup } = await faultyVault(kind, ['purgeExpiredTokens']);
    const app = await vault.caller({ permissions: ['token:create'] });
    const expiring = await vault.tokens.create(app, { type: 'token', data: 'x', expires_at: new Date(vault.clock.now() + 1000).toISOString() });
    for (let i = 0; i < 15; i++) {
      vault.clock.advance(INTERVAL);
      await vault.worker.runDue();
    }
    expect(faults.rejected).toBe(15);
    faults.fail(false);
    vault.clock.advance(INTERVAL);
    await vault.worker.runDue();
    expect(await vault.store.getDeletedToken(vault.tenantId, expiring.id)).toMatchObject({ deletedBy: 'system:expiry' });
    await vault.close();
    await cleanup();
  });

  it('a clock stepped back two hours: the sweep still runs within one interval', async () => {
    const { logger, entries } = recordingLogger();
    const vault = await kind.vault({ sweepIntervalMs: INTERVAL, logger });
    const app = await vault.caller({ permissions: ['token:create'] });
    // The worker has seen the clock (it polls every second when started).
    vault.clock.advance(INTERVAL - 1);
    expect(await vault.worker.runDue()).toBe(0);
    vault.clock.set(vault.clock.now() - 2 * HOUR);
    const expiring = await vault.tokens.create(app, { type: 'token', data: 'x', expires_at: new Date(vault.clock.now() + 1000).toISOString() });
    expect(await vault.worker.runDue()).toBe(0);
    expect(entries.map((e) => e.message)).toContain('job queue: the clock went back; recurring jobs are made due within their interval');
    vault.clock.advance(INTERVAL);
    expect(await vault.worker.runDue()).toBe(SWEEP_CONCERNS.length);
    expect(await vault.store.getDeletedToken(vault.tenantId, expiring.id)).toMatchObject({ deletedBy: 'system:expiry' });
  });
});

/** A sweeping test vault (one-minute interval) on a fresh store of this kind whose `methods` reject until `fail(false)`. */
async function faultyVault(kind: TestStore, methods: Parameters<typeof faultyStore>[1]) {
  const real: Store = kind.create();
  const faults = faultyStore(real, methods);
  const vault = await createTestVault({ start: SUITE_START, store: faults.store, sweepIntervalMs: INTERVAL, logger: recordingLogger().logger });
  return { vault, faults, cleanup: () => kind.cleanup(real) };
}

describe('sweep concerns', () => {
  it('are the sweep\u2019s every kind of removal', () => {
    expect(SWEEP_CONCERNS).toEqual(['expiry', 'cvc', 'idempotency', 'reactorResults', 'sessions', 'tokenIntents', 'deliveries', 'audit']);
  });
});
