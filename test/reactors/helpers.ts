import type { Caller } from '../../src/auth/caller.js';
import type { Logger } from '../../src/common/logger.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import type { VaultOptions } from '../../src/vault.js';
import type { TestStore } from '../support/stores.js';
import { SUITE_START } from '../support/suite-start.js';

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown> | undefined;
}

export interface Fixture {
  vault: TestVault;
  /** The tenant's management application (reactor:* but no token permissions). */
  admin: Caller;
  /** A private application that may create and use tokens. */
  user: Caller;
  logs: LogLine[];
  /** Creates a formula with the admin and a reactor of it; returns the reactor id. */
  reactor(code: string, options?: { configuration?: Record<string, unknown>; declarations?: Record<string, unknown>; application?: string; name?: string }): Promise<string>;
}

export const VISA = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' };

/** A vault with an admin and a user caller; on `store` (closed after the test) when given, else SQLite. */
export async function fixture(options: Omit<Partial<VaultOptions>, 'store'> = {}, store?: TestStore): Promise<Fixture> {
  const logs: LogLine[] = [];
  const logger: Logger = {
    info: (message, fields) => logs.push({ level: 'info', message, fields }),
    warn: (message, fields) => logs.push({ level: 'warn', message, fields }),
    error: (message, fields) => logs.push({ level: 'error', message, fields }),
  };
  const vault = store ? await store.vault({ logger, ...options }) : await createTestVault({ start: SUITE_START, logger, ...options });
  const admin = await vault.authenticate(vault.adminKey);
  const user = await vault.caller({ name: 'user', permissions: ['token:create', 'token:read', 'token:use'] });
  return {
    vault,
    admin,
    user,
    logs,
    async reactor(code, { configuration = {}, declarations = {}, application, name = 'test reactor' } = {}) {
      const formula = await vault.formulas.create(admin, { name: 'formula', code, ...declarations });
      const reactor = await vault.reactors.create(admin, {
        name,
        formula: { id: formula.id },
        configuration,
        ...(application ? { application: { id: application } } : {}),
      });
      return reactor.id;
    },
  };
}

/** Runs `fn` and returns the error it rejects with (failing the test if it resolves). */
export async function rejection(fn: () => Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await fn();
  } catch (error) {
    return error as Error & Record<string, unknown>;
  }
  throw new Error('expected a rejection');
}
