import { afterEach, expect, it } from 'vitest';
import { describeEachSharedStore, type SharedStores } from '../support/stores.js';

/** Another instance rotated the tenant's data key. */
describeEachSharedStore('key rotation by another instance', (database) => {
  let shared: SharedStores | undefined;
  afterEach(async () => {
    await shared?.close();
    shared = undefined;
  });

  const setUp = async () => {
    shared = await database.open({ keyRefreshMs: 60_000 });
    const { a, b } = shared;
    const app = await a.caller({
      permissions: ['token:create', 'token:read', 'token:search'],
      rules: [{ description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:search'] }],
    });
    // The second instance serves the same application (same key, same tenant).
    const onB = await b.authenticate(app.key);
    await b.tokens.create(onB, { type: 'token', data: 'before rotation' });
    return { a, b, app, onB };
  };

  it('list, search and a deduplicated create on this instance read tokens under a key version it has not seen', async () => {
    const { a, b, app, onB } = await setUp();
    expect(await a.operator.keys.rotate(a.tenantId)).toBe(2);
    const rotated = await a.tokens.create(app, { type: 'token', data: 'after rotation', search_indexes: ['{{ data }}'], metadata: { k: 'v' } });
    const listed = await b.tokens.list(onB, { metadata: { k: 'v' } });
    expect(listed.data.map((t) => t.data)).toEqual(['after rotation']);
    const found = await b.tokens.search(onB, { query: 'data:"after rotation"' });
    expect(found.data.map((t) => t.id)).toEqual([rotated.id]);
    const duplicate = await b.tokens.create(onB, { type: 'token', data: 'after rotation', deduplicate_token: true });
    expect(duplicate.id).toBe(rotated.id);
    expect(duplicate.data).toBe('after rotation');
  });

  it('writes on this instance use the newest key once keyRefreshMs has passed', async () => {
    const { a, b, app, onB } = await setUp();
    await a.operator.keys.rotate(a.tenantId);
    b.clock.advance(60_000);
    const after = await b.tokens.create(onB, { type: 'token', data: 'later' });
    expect((await b.store.getToken(onB.tenantId, after.id, b.clock.now()))!.keyVersion).toBe(2);
    expect((await b.tokens.get(onB, after.id)).data).toBe('later');
    // The first instance reads what the second wrote.
    expect((await a.tokens.get(app, after.id)).data).toBe('later');
  });
});
