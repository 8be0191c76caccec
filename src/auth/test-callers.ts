import { type ApplicationGrants, type Caller, mintApplicationCaller } from './caller.js';

/**
 * `makeCaller` of tokenvault/testing: a Caller for any tenant and grants, without an application or
 * key, for unit tests of code that takes a Caller. Minted as a test Caller, which only a test vault
 * accepts: a vault from `createVault` refuses it, so the testing entry opens no way around
 * `vault.authenticate(key)` (docs/testing.md).
 */
export function makeTestCaller(app: ApplicationGrants): Caller {
  return mintApplicationCaller(app, 'test');
}

/** A test vault's `caller()`: the Caller of an application it created, with that application's key. */
export function testApplicationCaller(app: ApplicationGrants, key: string): Caller & { key: string } {
  return mintApplicationCaller(app, 'test', { key });
}
