/**
 * Reactor runs share the sandbox's workers by who invokes them (reactor-runner.ts, run-owner.ts,
 * worker-pool.ts): one application flooding with spinning reactors neither takes every worker nor
 * fills the queue, so another application's reactor still answers; and each run names its owner
 * (the invoking application; a session: the public application that created it; saving code: the
 * saving application).
 *
 * The vault is given a sandbox that records what it is asked to run; waits are on those requests
 * and on the answers, and the spinning runs end when the sandbox closes, not at a deadline.
 */
import { afterEach, expect, it } from 'vitest';
import { createQuickJsSandbox, type QuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import type { RunOwner, Sandbox } from '../../src/sandbox/sandbox.js';
import { describeEachStore } from '../support/stores.js';
import { fixture } from './helpers.js';

/** A QuickJS sandbox that records the owner of every run it is asked for. */
interface RecordingSandbox {
  sandbox: Sandbox;
  inner: QuickJsSandbox;
  owners: (RunOwner | undefined)[];
  /** Resolves once `count` runs have been asked for in all. */
  reached(count: number): Promise<void>;
}

const opened: QuickJsSandbox[] = [];
afterEach(async () => {
  for (const sandbox of opened.splice(0)) await sandbox.close();
});

async function recordingSandbox(workers: { size: number; maxQueued?: number }): Promise<RecordingSandbox> {
  const inner = await createQuickJsSandbox({ workers });
  opened.push(inner);
  const owners: (RunOwner | undefined)[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  const sandbox: Sandbox = {
    check: (code) => inner.check(code),
    run(input) {
      owners.push(input.owner);
      const result = inner.run(input);
      for (const w of waiting.filter((x) => owners.length >= x.count)) w.resolve();
      return result;
    },
  };
  const reached = (count: number) => (owners.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ count, resolve })));
  return { sandbox, inner, owners, reached };
}

describeEachStore('reactor runs share the sandbox by application', (store) => {
  it("one application's flood of spinning reactors leaves another application's reactor answering; the flood's excess gets 503 at once", async () => {
    // Two workers: one application holds at most one and queues at most ceil(8 / 4) = 2 runs.
    const rec = await recordingSandbox({ size: 2, maxQueued: 8 });
    const { vault, reactor } = await fixture({ reactors: { sandbox: rec.sandbox, limits: { timeoutMs: 60_000 } } }, store);
    const spin = await reactor('module.exports = () => { for (;;) {} }');
    const trivial = await reactor('module.exports = () => ({ raw: 1 })');
    const flooder = await vault.caller({ name: 'flooder', permissions: ['token:use'] });
    const bystander = await vault.caller({ name: 'bystander', permissions: ['token:use'] });

    const asked = rec.owners.length;
    const flood = Array.from({ length: 5 }, () =>
      vault.reactors.react(flooder, spin, {}).then(
        () => null,
        (error: Error) => error,
      ),
    );
    await rec.reached(asked + 5);
    expect(rec.inner.stats()).toMatchObject({ busy: 1, queued: 2 });

    await expect(vault.reactors.react(bystander, trivial, {})).resolves.toEqual({ raw: 1 });
    // Answered while the flood still spins and waits.
    expect(rec.inner.stats()).toMatchObject({ busy: 1, queued: 2 });

    await rec.inner.close();
    const refused = (await Promise.all(flood)).filter((e) => e?.message.startsWith('This application already has 2 reactor runs waiting'));
    expect(refused).toHaveLength(2);
    expect(refused[0]).toMatchObject({ status: 503, kind: 'ServiceUnavailableError' });
  });

  it('names the invoking application as the owner of its runs; a session the public application that created it; saving code the saving application', async () => {
    const rec = await recordingSandbox({ size: 1 });
    const { vault, admin, user, reactor } = await fixture({ reactors: { sandbox: rec.sandbox } }, store);
    const trivial = await reactor('module.exports = () => ({ raw: 1 })');
    expect(rec.owners).toEqual([{ tenantId: admin.tenantId, applicationId: admin.applicationId }]);

    await vault.reactors.react(user, trivial, {});
    const browser = await vault.caller({ name: 'browser', type: 'public', permissions: ['token:create'] });
    const { session_key, nonce } = await vault.sessions.create(browser);
    await vault.sessions.authorize(user, { nonce, permissions: ['token:use'] });
    const session = await vault.authenticate(session_key);
    await vault.reactors.react(session, trivial, {});
    expect(rec.owners.slice(1)).toEqual([
      { tenantId: user.tenantId, applicationId: user.applicationId },
      { tenantId: browser.tenantId, applicationId: browser.applicationId },
    ]);
  });
});
