import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../examples/postgres.js';
import { PG_SKIP_REASON, PG_URL, dropSchema, endAdmin, freshSchema } from '../support/postgres.js';

if (PG_URL === undefined) {
  describe.skip(`postgres example (${PG_SKIP_REASON})`, () => {
    it('two vault instances share one PostgreSQL database', () => undefined);
  });
} else {
  const schema = freshSchema('example');
  afterAll(async () => {
    await dropSchema(schema);
    await endAdmin();
  });

  describe('postgres example', () => {
    it('two vault instances share one PostgreSQL database', async () => {
      const result = await main(() => undefined, { connectionString: PG_URL, schema });
      expect(result.readByOther).toEqual({ number: '4242424242424242', expiration_month: 12, expiration_year: 2031 });
      expect(result.deduplicated).toBe(true);
    });
  });
}
