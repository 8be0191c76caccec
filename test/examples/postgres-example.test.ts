import { afterAll, expect, it } from 'vitest';
import { main } from '../../examples/postgres.js';
import { dropSchema, freshSchema } from '../support/postgres.js';
import { describePostgres } from '../support/stores.js';

describePostgres('postgres example', (url) => {
  const schema = freshSchema('example');
  afterAll(() => dropSchema(schema));

  it('two vault instances share one PostgreSQL database', async () => {
    const result = await main(() => undefined, { connectionString: url, schema });
    expect(result.readByOther).toEqual({ number: '4242424242424242', expiration_month: 12, expiration_year: 2031 });
    expect(result.deduplicated).toBe(true);
  });
});
