/**
 * Every reactor run gets a fresh QuickJS context of its own, prepared ahead of time while its worker
 * is idle and freed after the run (src/sandbox/engine/context-pool.ts): nothing one run leaves in
 * its global state (globals, prototypes, built-ins) reaches the next run on the same worker, of the
 * same tenant or another. One worker, so every run lands on it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { createQuickJsSandbox, type QuickJsSandbox } from '../../src/sandbox/quickjs-sandbox.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { VISA } from './helpers.js';

const LEAVE = `module.exports = (req) => {
  globalThis.secret = req.args.card;
  Object.prototype.leaked = req.args.card.number;
  Array.prototype.includes = () => 'tampered';
  JSON.parse = () => 'tampered';
  return { raw: 'left' };
}`;
const LOOK = `module.exports = () => ({ raw: [typeof secret, typeof ({}).leaked, [1].includes(1), JSON.parse('1')] })`;
const CLEAN = ['undefined', 'undefined', true, 1];

describeEachStore('reactor runs never share a context', (store) => {
  let sandbox: QuickJsSandbox;
  let vault: TestVault;
  /** Per tenant: a caller that may use tokens, and its reactors. */
  let tenants: { user: Caller; leave: string; look: string; card: string }[];

  beforeAll(async () => {
    sandbox = await createQuickJsSandbox({ workers: { size: 1 } });
    vault = await store.vault({ reactors: { sandbox } });
    const setUp = async (adminKey: string) => {
      const admin = await vault.authenticate(adminKey);
      const app = await vault.applications.create(admin, { name: 'user', type: 'private', permissions: ['token:create', 'token:use'] });
      const user = await vault.authenticate(app.key!);
      const reactor = async (code: string) => {
        const formula = await vault.formulas.create(admin, { name: 'f', code });
        return (await vault.reactors.create(admin, { name: 'r', formula: { id: formula.id }, configuration: {} })).id;
      };
      const card = (await vault.tokens.create(user, { type: 'card', data: VISA })).id;
      return { user, leave: await reactor(LEAVE), look: await reactor(LOOK), card };
    };
    const other = await vault.createTenant({ name: 'other' });
    tenants = [await setUp(vault.adminKey), await setUp(other.application.key!)];
  });
  afterAll(() => sandbox.close());

  it('sees nothing of the run before it on the same worker, in its own tenant or another', async () => {
    for (const [from, to] of [
      [0, 0],
      [0, 1],
      [1, 0],
    ] as const) {
      const a = tenants[from]!;
      const b = tenants[to]!;
      await expect(vault.reactors.react(a.user, a.leave, { args: { card: `{{ ${a.card} }}` } })).resolves.toEqual({ raw: 'left' });
      await expect(vault.reactors.react(b.user, b.look, {})).resolves.toEqual({ raw: CLEAN });
    }
    expect(sandbox.stats()).toMatchObject({ spawned: 1, crashed: 0, terminated: 0 });
  });
});
