/**
 * The steps of no-leak-proxy-calls.property.test.ts that change whose credentials a proxy's key
 * stands on (docs/proxies.md, When a proxy's key ends), and the model they
 * keep: a proxy made by a non-administrator (the run's binder) ends when the binder's key is
 * regenerated, and stays ended until an administrator confirms it or rotates its key (after which
 * it stands on no application). Regenerating a bound application's key ends nothing: only the
 * maker's credentials count. The property then proves that no call, anonymous or not, reaches the
 * destination or any data through an ended key.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import type { PProxy, Principal, Shared } from './proxy-call-harness.js';

/** Whose credentials the model's proxy stands on (null: an administrator's), and whether they changed since. */
export interface MakerState {
  maker: 'binder' | null;
  ended: boolean;
}

const n = fc.nat(30);
export const makerStep = fc.oneof(
  fc.record({ kind: fc.constant('regenerate' as const), who: fc.constantFrom('maker' as const, 'bound' as const), app: n }),
  fc.record({ kind: fc.constant('confirm' as const), proxy: n }),
);
export type MakerStep = typeof makerStep extends fc.Arbitrary<infer T> ? T : never;

/** The model of a proxy the run just made. */
export const madeBy = (byBinder: boolean): MakerState => ({ maker: byBinder ? 'binder' : null, ended: false });

/** An administrator gave the proxy a new key: it stands on no application's credentials any more. */
export function rotatedByAdministrator(proxy: PProxy): void {
  proxy.maker = null;
  proxy.ended = false;
}

/** Runs a maker step against the vault and the model. */
export async function runMakerStep(world: { shared: Shared; admin: Caller; binder: Principal; bound: Principal[]; proxies: PProxy[] }, s: MakerStep): Promise<void> {
  const { vault } = world.shared;
  if (s.kind === 'regenerate') {
    const app = s.who === 'maker' ? world.binder : world.bound[s.app % world.bound.length]!;
    const renewed = await vault.applications.regenerateKey(world.admin, app.model.id);
    world.shared.never.add(renewed.key!);
    app.key = renewed.key!;
    app.caller = await vault.authenticate(app.key);
    if (s.who === 'maker') for (const proxy of world.proxies) if (proxy.maker === 'binder') proxy.ended = true;
    return;
  }
  const proxy = world.proxies[s.proxy % world.proxies.length]!;
  const confirmed = await vault.proxies.confirm(world.admin, proxy.id);
  // It stands on the maker's current credentials again; the view says so.
  proxy.ended = false;
  const expected = proxy.maker === null ? null : { application_id: world.binder.model.id, status: 'current' };
  expect(confirmed.key_credentials, "a confirmed proxy stands on its maker's current credentials").toEqual(expected);
}
