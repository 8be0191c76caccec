import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { ServiceUnavailableError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/index.js';
import { createPostgresStore } from '../../src/postgres.js';
import { PgExecutor } from '../../src/storage/postgres/pg-executor.js';
import { translateError } from '../../src/storage/postgres/pg-errors.js';
import { createTestVault } from '../../src/testing/index.js';
import { adminPool, dropSchema, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';
import { SUITE_START } from '../support/suite-start.js';

/**
 * A PostgreSQL outage. Backends are ended with pg_terminate_backend (with a
 * timeout: it returns once they are gone, so the tests wait for the event, not for time).
 */
describePostgres('PostgreSQL outage', (url) => {
  const pools: pg.Pool[] = [];
  const schemas: string[] = [];
  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.end().catch(() => undefined);
    for (const schema of schemas.splice(0)) await dropSchema(schema);
  });

  /** A pool whose connections carry a name no other test uses, so only they are terminated. */
  const namedPool = (max: number) => {
    const name = `tv-outage-${randomBytes(4).toString('hex')}`;
    const pool = new pg.Pool({ connectionString: url, max, application_name: name });
    pool.on('error', () => undefined);
    pools.push(pool);
    return { pool, name };
  };
  const terminate = async (where: { pid?: number; name?: string }) => {
    const sql =
      where.pid !== undefined ? 'SELECT pg_terminate_backend($1::int, 10000)' : 'SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = $1';
    await adminPool().query(sql, [where.pid ?? where.name]);
  };

  it('a transaction whose connection is lost before COMMIT runs again once on a fresh connection', async () => {
    const { pool } = namedPool(2);
    const executor = new PgExecutor(pool);
    let runs = 0;
    const result = await executor.transaction(async (tx) => {
      runs++;
      const { rows } = await tx.query('SELECT pg_backend_pid() AS pid');
      if (runs === 1) await terminate({ pid: rows[0]!['pid'] as number });
      await tx.query('SELECT 1');
      return runs;
    });
    expect(result).toBe(2);
  });

  it('a read whose connection was lost runs again on a fresh one; a second loss is a 503 (ServiceUnavailableError)', async () => {
    const { pool, name } = namedPool(1);
    const executor = new PgExecutor(pool);
    await executor.query('SELECT 1');
    await terminate({ name });
    expect((await executor.query('SELECT 2 AS two')).rows[0]!['two']).toBe(2);
    let runs = 0;
    const lostTwice = executor.transaction(async (tx) => {
      runs++;
      const { rows } = await tx.query('SELECT pg_backend_pid() AS pid');
      await terminate({ pid: rows[0]!['pid'] as number });
      await tx.query('SELECT 1');
    });
    await expect(lostTwice).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(runs).toBe(2);
  });

  it('translates connection errors to ServiceUnavailableError', () => {
    for (const error of [
      Object.assign(new Error('terminating connection'), { code: '57P01' }),
      Object.assign(new Error('x'), { code: 'ECONNREFUSED' }),
      new Error('Connection terminated unexpectedly'),
    ]) {
      expect(translateError(error)).toBeInstanceOf(ServiceUnavailableError);
    }
  });

  it('with every backend terminated under load: only 2xx or 503 with Retry-After, never a 500; nothing acknowledged is lost; no audit entry dropped', async () => {
    const { pool, name } = namedPool(4);
    const schema = freshSchema('outage');
    schemas.push(schema);
    const vault = await createTestVault({ start: SUITE_START, store: createPostgresStore({ pool, schema }), masterKey: generateMasterKey() });
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const handler = createFetchHandler(vault);
    const request = (i: number) =>
      i % 2 === 0
        ? handler(
            new Request('http://vault.test/tokens', {
              method: 'POST',
              headers: { 'svc-api-key': app.key, 'content-type': 'application/json' },
              body: JSON.stringify({ type: 'token', data: `d${i}` }),
            }),
          )
        : handler(new Request('http://vault.test/tokens?size=5', { headers: { 'svc-api-key': app.key } }));
    const responses: Response[] = [];
    for (let round = 0; round < 3; round++) {
      const batch = Array.from({ length: 12 }, (_, i) => request(i));
      // The backends die while the batch is in flight.
      const killed = terminate({ name });
      responses.push(...(await Promise.all(batch)));
      await killed;
    }
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s !== 200 && s !== 201 && s !== 503)).toEqual([]);
    for (const response of responses.filter((r) => r.status === 503)) expect(response.headers.get('retry-after')).toBe('1');
    const acknowledged = await Promise.all(responses.filter((r) => r.status === 201).map(async (r) => ((await r.json()) as { id: string }).id));
    for (const id of acknowledged) expect((await vault.tokens.get(app, id)).id).toBe(id);
    await vault.close();
    expect(vault.auditStats()).toMatchObject({ queued: 0, droppedEntries: 0 });
  });
});
