import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/sqlite.js';
import { openSqliteStoreCore } from '../../src/storage/sqlite/sqlite-open.js';
import type { SqliteStoreCore } from '../../src/storage/sqlite/sqlite-store.js';
import { GroupCommit } from '../../src/storage/sqlite/group-commit.js';
import type { StoredToken } from '../../src/storage/store.js';
import { T0, TENANT_A, makeToken } from '../../src/testing/store-conformance.js';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

// The synchronous core: group commit is what it does with the calls of one turn.
function openStore(): SqliteStoreCore {
  const store = openSqliteStoreCore();
  store.migrate();
  return store;
}

const tokenCount = (store: SqliteStoreCore) => (store.database.prepare('SELECT count(*) AS n FROM tokens').get() as { n: number }).n;

describe('SQLite group commit of token creations', () => {
  it('writes the creations of a turn together at its end, none acknowledged or visible before', async () => {
    const store = openStore();
    const tokens = [makeToken(), makeToken(), makeToken()];
    const pending = tokens.map((token) => store.tokens.createToken(token, T0));
    expect(tokenCount(store)).toBe(0);
    expect(await Promise.all(pending)).toEqual([{ status: 'created' }, { status: 'created' }, { status: 'created' }]);
    expect(tokenCount(store)).toBe(3);
    for (const token of tokens) expect(store.tokens.getToken(TENANT_A, token.id, T0)?.id).toBe(token.id);
    store.close();
  });

  it('keeps each creation’s guarantees inside a batch: id conflicts and deduplication', async () => {
    const store = openStore();
    const a = makeToken({ id: 'same-id' });
    const b = makeToken({ id: 'same-id' });
    const c = makeToken({ fingerprint: 'fp-shared', deduplicate: true });
    const d = makeToken({ fingerprint: 'fp-shared', deduplicate: true });
    const results = await Promise.all([a, b, c, d].map((token) => store.tokens.createToken(token, T0)));
    expect(results.map((r) => r.status)).toEqual(['created', 'id_conflict', 'created', 'duplicate']);
    expect((results[3] as { existing: StoredToken }).existing.id).toBe(c.id);
    store.close();
  });

  it('fails only the bad write when one write of a batch fails', async () => {
    const store = openStore();
    const good = makeToken();
    const bad = makeToken({ ciphertext: { not: 'bytes' } as unknown as Uint8Array });
    const other = makeToken();
    const settled = await Promise.allSettled([good, bad, other].map((token) => store.tokens.createToken(token, T0)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(store.tokens.getToken(TENANT_A, bad.id, T0)).toBeNull();
    expect(tokenCount(store)).toBe(2);
    store.close();
  });

  it('writes queued creations before the store closes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tokenvault-group-commit-'));
    try {
      const filename = join(dir, 'vault.db');
      const store = openSqliteStoreCore({ filename });
      store.migrate();
      store.tokens.createToken(makeToken(), T0);
      const queued = store.tokens.createToken(makeToken(), T0);
      store.close();
      expect(await queued).toEqual({ status: 'created' });
      const reopened = openSqliteStoreCore({ filename });
      expect(tokenCount(reopened)).toBe(2);
      reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('commits each turn on its own: a lone creation is written at the end of its turn', async () => {
    const store = openStore();
    expect(await store.tokens.createToken(makeToken(), T0)).toEqual({ status: 'created' });
    expect(tokenCount(store)).toBe(1);
    await nextTurn();
    expect(await store.tokens.createToken(makeToken(), T0)).toEqual({ status: 'created' });
    expect(tokenCount(store)).toBe(2);
    store.close();
  });
});

describe('GroupCommit', () => {
  it('retries each item alone when the batch fails, in order', async () => {
    const calls: string[] = [];
    const group = new GroupCommit<number, number>(
      (item) => {
        calls.push(`one ${item}`);
        if (item === 2) throw new Error('two fails');
        return item * 10;
      },
      (items) => {
        calls.push(`many ${items.join(',')}`);
        throw new Error('batch fails');
      },
    );
    expect(await group.submit(0)).toBe(0);
    const settled = await Promise.allSettled([1, 2, 3].map((item) => group.submit(item)));
    expect(settled).toEqual([
      { status: 'fulfilled', value: 10 },
      { status: 'rejected', reason: new Error('two fails') },
      { status: 'fulfilled', value: 30 },
    ]);
    expect(calls).toEqual(['one 0', 'many 1,2,3', 'one 1', 'one 2', 'one 3']);
  });

  it('writes a lone item with the single-item writer, several with the batch writer', async () => {
    const calls: string[] = [];
    const group = new GroupCommit<number, number>(
      (item) => (calls.push(`one ${item}`), item),
      (items) => (calls.push(`many ${items.join(',')}`), items),
    );
    expect(await group.submit(1)).toBe(1);
    expect(await Promise.all([group.submit(2), group.submit(3)])).toEqual([2, 3]);
    expect(calls).toEqual(['one 1', 'many 2,3']);
  });
});
