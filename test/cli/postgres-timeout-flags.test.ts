// The PostgreSQL timeouts as flags of every command that opens the store.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/io.js';
import { MIGRATE_HELP } from '../../src/cli/migrate.js';
import { SERVE_HELP } from '../../src/cli/serve.js';
import { openStore, storeTarget } from '../../src/cli/store-target.js';
import type { PostgresStore } from '../../src/postgres.js';
import { describePostgres } from '../support/stores.js';

const FLAGS = ['statement', 'lock', 'connect', 'idle-in-transaction', 'migration'].map((name) => `--postgres-${name}-timeout-ms`);

describe('--postgres-*-timeout-ms flags', () => {
  const url = 'postgres://vault@127.0.0.1:5432/vault';

  it('are parsed into the store options they name; absent ones keep the defaults', () => {
    const target = storeTarget({
      postgres: url,
      'postgres-statement-timeout-ms': '20000',
      'postgres-lock-timeout-ms': '0',
      'postgres-connect-timeout-ms': '2500',
      'postgres-idle-in-transaction-timeout-ms': '30000',
      'postgres-migration-timeout-ms': '600000',
    });
    expect(target).toMatchObject({
      kind: 'postgres',
      timeouts: { statementTimeoutMs: 20_000, lockTimeoutMs: 0, connectTimeoutMs: 2_500, idleInTransactionTimeoutMs: 30_000, migrationTimeoutMs: 600_000 },
    });
    expect(storeTarget({ postgres: url })).toMatchObject({ timeouts: {} });
  });

  it('bad values and use without --postgres are usage errors naming the flag', () => {
    for (const flag of FLAGS) {
      const name = flag.slice(2) as 'postgres-lock-timeout-ms';
      for (const bad of ['-1', '1.5', '10s', '', '86400001']) {
        expect(() => storeTarget({ postgres: url, [name]: bad }), `${flag} ${bad}`).toThrow(new UsageError(`${flag} must be a whole number from 0 to 86400000`));
      }
      expect(() => storeTarget({ [name]: '100' })).toThrow(new UsageError(`${flag} needs --postgres`));
    }
  });

  it('are listed in the usage of serve and migrate', () => {
    for (const flag of FLAGS) {
      expect(SERVE_HELP).toContain(flag);
      expect(MIGRATE_HELP).toContain(flag);
    }
  });
});

describePostgres('--postgres-*-timeout-ms reach the connection', (url) => {
  it('the store opened from the flags sets them on its sessions', async () => {
    const store = openStore(storeTarget({ postgres: url, 'postgres-statement-timeout-ms': '4321', 'postgres-lock-timeout-ms': '1234' })) as PostgresStore;
    try {
      const { rows } = await store.pool.query({
        text: "SELECT current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock, current_setting('idle_in_transaction_session_timeout') AS idle",
      });
      expect(rows[0]).toEqual({ statement: '4321ms', lock: '1234ms', idle: '1min' });
    } finally {
      await store.close();
    }
  });
});
