import Database from 'better-sqlite3';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { openSqliteStoreCore } from '../../src/storage/sqlite/sqlite-open.js';
import type { SqliteStoreCore } from '../../src/storage/sqlite/sqlite-store.js';
import type { StoredToken, TokenFilter } from '../../src/storage/store.js';
import { LIKE_ESCAPE, likeSubstringPattern } from '../../src/storage/like-pattern.js';
import { MIGRATIONS, runMigrations } from '../../src/storage/sqlite/migrations.js';
import { cursorPageSql, decodeCursor, encodeCursor } from '../../src/storage/sqlite/paging.js';
import { StatementCache } from '../../src/storage/sqlite/statement-cache.js';
import { FIND_LIVE_DUPLICATE, GET_LIVE_TOKEN, LIST_EXPIRED, tokenListQuery } from '../../src/storage/sqlite/token-sql.js';
import { TOKENS_SQL } from '../../src/storage/areas/tokens.js';
import { sqliteDialect } from '../../src/storage/sql/dialect.js';
import { runStoreConformance } from '../../src/testing/index.js';
import { APP_A, T0, TENANT_A, makeAudit, makeReactor, makeFormula, makeToken } from '../../src/testing/store-conformance.js';
import { validationErrorOf } from '../support/field-errors.js';
import { freshSqliteStore } from '../support/sqlite-image.js';

const dir = mkdtempSync(join(tmpdir(), 'tokenvault-sqlite-'));
let files = 0;
const tempFile = () => join(dir, `store-${++files}.db`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Through the public entry, as a store author would call it.
// In memory from a migrated image after the first test (test/support/sqlite-image.ts); the file
// run below migrates every test's database with the real chain.
await runStoreConformance('sqlite :memory:', () => freshSqliteStore());
await runStoreConformance('sqlite file (WAL, synchronous=normal)', () => createSqliteStore({ filename: tempFile(), synchronous: 'normal' }));

const audit = (token: StoredToken) => makeAudit({ tenantId: token.tenantId, resourceId: token.id });

// The synchronous core: these tests look at what one call does inside the store.
function openMigrated(options: Parameters<typeof createSqliteStore>[0] = {}): SqliteStoreCore {
  const store = openSqliteStoreCore(options);
  store.migrate();
  return store;
}

describe('createSqliteStore options', () => {
  it('rejects filename together with database, naming the option', () => {
    const db = new Database(':memory:');
    const error = validationErrorOf(() => createSqliteStore({ filename: tempFile(), database: db }));
    expect(Object.keys(error.errors)).toEqual(['database']);
    db.close();
  });

  it('rejects bad values and unknown options, each under its own name', () => {
    expect(validationErrorOf(() => createSqliteStore({ synchronous: 'off' as 'full' })).errors).toHaveProperty('synchronous');
    expect(validationErrorOf(() => createSqliteStore({ busyTimeoutMs: -1 })).errors).toHaveProperty('busyTimeoutMs');
    expect(validationErrorOf(() => createSqliteStore({ busyTimeoutMs: 1.5 })).errors).toHaveProperty('busyTimeoutMs');
    expect(validationErrorOf(() => createSqliteStore({ exclusive: 'yes' as unknown as boolean })).errors).toHaveProperty('exclusive');
    expect(validationErrorOf(() => createSqliteStore({ filename: '' })).errors).toHaveProperty('filename');
    expect(validationErrorOf(() => createSqliteStore({ database: {} as never })).errors).toHaveProperty('database');
    expect(validationErrorOf(() => createSqliteStore({ file: 'x.db' } as never)).errors).toHaveProperty('file');
    const closed = new Database(':memory:');
    closed.close();
    expect(validationErrorOf(() => createSqliteStore({ database: closed })).errors).toHaveProperty('database');
  });

  it('exclusive: no other connection can read the file until the store closes', async () => {
    const filename = tempFile();
    const store = openMigrated({ filename, exclusive: true });
    await store.tokens.createToken(makeToken({ id: 'held' }), T0);
    const other = new Database(filename, { timeout: 0 });
    try {
      expect(() => other.prepare('SELECT count(*) FROM tokens').get()).toThrow(/locked/);
      expect(store.tokens.getToken(TENANT_A, 'held', T0)?.id).toBe('held');
      store.close();
      expect(other.prepare('SELECT count(*) AS n FROM tokens').get()).toEqual({ n: 1 });
    } finally {
      other.close();
    }
  });

  it('shared (the default): other connections read the file while the store is open', async () => {
    const filename = tempFile();
    const store = openMigrated({ filename });
    await store.tokens.createToken(makeToken({ id: 'visible' }), T0);
    const other = new Database(filename, { timeout: 0 });
    try {
      expect(other.prepare('SELECT count(*) AS n FROM tokens').get()).toEqual({ n: 1 });
    } finally {
      other.close();
      store.close();
    }
  });

  it('defaults to a private in-memory database', async () => {
    const one = openMigrated();
    const two = openMigrated();
    await one.tokens.createToken(makeToken({ id: 'only-in-one' }), T0);
    expect(one.database.memory).toBe(true);
    expect(two.tokens.getToken(TENANT_A, 'only-in-one', T0)).toBeNull();
    one.close();
    two.close();
  });
});

describe('SQLite pragmas', () => {
  it('opens files in WAL mode with synchronous=FULL, foreign keys on, a busy timeout and the default checkpoint interval', () => {
    const store = openMigrated({ filename: tempFile() });
    const db = store.database;
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(db.pragma('cache_size', { simple: true })).toBe(-64 * 1024);
    store.close();
  });

  it('applies synchronous=normal and a custom busy timeout', () => {
    const store = openMigrated({ filename: tempFile(), synchronous: 'normal', busyTimeoutMs: 250, cacheSizeMiB: 8 });
    expect(store.database.pragma('cache_size', { simple: true })).toBe(-8 * 1024);
    expect(store.database.pragma('synchronous', { simple: true })).toBe(1);
    expect(store.database.pragma('busy_timeout', { simple: true })).toBe(250);
    // NORMAL fsyncs only at checkpoints: the store makes them rarer (sqlite-store.ts).
    expect(store.database.pragma('wal_autocheckpoint', { simple: true })).toBe(10_000);
    store.close();
  });

  it('on a database passed in: turns foreign keys on, applies only the given settings, leaves the journal mode', () => {
    const db = new Database(tempFile());
    db.pragma('synchronous = OFF');
    const store = openMigrated({ database: db });
    expect(db.pragma('journal_mode', { simple: true })).toBe('delete');
    expect(db.pragma('synchronous', { simple: true })).toBe(0);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('cache_size', { simple: true })).toBe(-16000); // better-sqlite3's own default
    const tuned = createSqliteStore({ database: db, synchronous: 'full' });
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    tuned.close();
    store.close();
    db.close();
  });
});

describe('SQLite file modes', () => {
  const modes = (prefix: string) =>
    Object.fromEntries(
      readdirSync(dir)
        .filter((f) => f.startsWith(prefix))
        .map((f) => [f.slice(prefix.length), (statSync(join(dir, f)).mode & 0o777).toString(8)]),
    );

  it.each([false, true])('creates the database, its -wal and its -shm owner-only (0600) under the usual umask 022 (exclusive: %s)', async (exclusive) => {
    const filename = tempFile();
    const name = filename.slice(dir.length + 1);
    const previous = process.umask(0o022); // the usual umask, under which SQLite creates 0644
    try {
      const store = openMigrated({ filename, exclusive });
      await store.tenants.createTenant({ id: TENANT_A, name: 'a', createdAt: T0 });
      const open = modes(name);
      expect(open).toMatchObject({ '': '600', '-wal': '600' });
      if (!exclusive) expect(open['-shm']).toBe('600'); // exclusive mode keeps the WAL index in memory
      store.close();
    } finally {
      process.umask(previous);
    }
  });

  it('leaves the mode of an existing database file as its owner set it', () => {
    const filename = tempFile();
    writeFileSync(filename, '');
    chmodSync(filename, 0o640);
    openMigrated({ filename }).close();
    expect((statSync(filename).mode & 0o777).toString(8)).toBe('640');
  });
});

describe('SQLite lifecycle', () => {
  it('close() closes a database it opened, and is idempotent', () => {
    const store = openMigrated({ filename: tempFile() });
    store.close();
    expect(store.database.open).toBe(false);
    expect(() => store.close()).not.toThrow();
  });

  it('close() leaves a database passed in open', () => {
    const db = new Database(':memory:');
    const store = openMigrated({ database: db });
    store.close();
    expect(db.open).toBe(true);
    expect(db.prepare('SELECT count(*) AS n FROM tokens').get()).toEqual({ n: 0 });
    db.close();
  });

  it('keeps data across close and reopen', () => {
    const filename = tempFile();
    const first = openMigrated({ filename });
    const token = makeToken({ metadata: { Color: 'Red' } });
    first.tokens.createToken(token, T0);
    first.close();
    const second = openMigrated({ filename });
    expect(Buffer.from(second.tokens.getToken(TENANT_A, token.id, T0)!.ciphertext).equals(Buffer.from(token.ciphertext))).toBe(true);
    expect(second.tokens.listTokens(TENANT_A, { metadata: { color: 'red' } }, { mode: 'cursor', size: 5 }, T0).items.map((t) => t.id)).toEqual([token.id]);
    second.close();
  });

  it("answers synchronously (plain values, not promises), but for a creation, which settles with its turn's group commit", async () => {
    const store = openMigrated();
    const token = makeToken();
    const created = store.tokens.createToken(token, T0);
    expect(created).toBeInstanceOf(Promise);
    expect(await created).toEqual({ status: 'created' });
    expect(store.tokens.getToken(TENANT_A, token.id, T0)).not.toBeInstanceOf(Promise);
    store.close();
  });
});

describe('SQLite migrations', () => {
  const versions = (store: SqliteStoreCore) =>
    (store.database.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as { version: number }[]).map((r) => r.version);

  it('records each migration once, however often migrate() runs and however many stores open the file', async () => {
    const filename = tempFile();
    const expected = MIGRATIONS.map((_, i) => i + 1);
    const one = openMigrated({ filename });
    one.migrate();
    expect(versions(one)).toEqual(expected);
    const two = openMigrated({ filename });
    expect(versions(two)).toEqual(expected);
    const token = makeToken();
    await one.tokens.createToken(token, T0);
    expect(two.tokens.getToken(TENANT_A, token.id, T0)).not.toBeNull();
    one.close();
    two.close();
  });

  it("renames tenant_keys' id to tenant_id: tokens written before read, sweep, re-encrypt and delete as before", async () => {
    const filename = tempFile();
    const old = new Database(filename);
    const before = MIGRATIONS.findIndex((sql) => /RENAME COLUMN id TO tenant_id/.test(sql));
    expect(before).toBeGreaterThan(0);
    runMigrations(old, MIGRATIONS.slice(0, before));
    // As the version before wrote them: the tenant's key by `id`, one token with a cvc due.
    old.prepare('INSERT INTO tenant_keys (key, id) VALUES (7, ?)').run(TENANT_A);
    old
      .prepare('INSERT INTO tokens (tenant, id, type, ciphertext, key_version, flags, created_by, created_at, cvc_purge_at) VALUES (7, ?, ?, ?, 1, 0, ?, ?, ?)')
      .run('before', 'card', Buffer.from('sealed'), APP_A, T0, T0 + 10);
    old.close();
    const store = openMigrated({ filename });
    expect(versions(store)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    expect(store.tokens.getToken(TENANT_A, 'before', T0)).toMatchObject({ tenantId: TENANT_A, id: 'before', cvcPurgeAt: T0 + 10 });
    expect(store.tokens.listCvcDue(T0 + 10, 5)).toMatchObject([{ tenantId: TENANT_A, id: 'before' }]);
    expect(store.tokens.countTokensBelowKeyVersion(TENANT_A, 2)).toBe(1);
    expect(store.tokens.replaceCiphertext(TENANT_A, 'before', Buffer.from('sealed'), { ciphertext: Buffer.from('resealed'), keyVersion: 2, cvcPurgeAt: T0 + 10 })).toBe(true);
    expect(store.tokens.countTokensBelowKeyVersion(TENANT_A, 2)).toBe(0);
    // The deletion's triggers read tenant_keys by the renamed column.
    expect(store.tokens.deleteToken(TENANT_A, 'before', APP_A, makeAudit(), T0)).toBe(true);
    expect(store.tokens.getDeletedToken(TENANT_A, 'before')).toMatchObject({ tenantId: TENANT_A, id: 'before', deletedBy: APP_A });
    // A tenant's next token keeps the key it was given.
    const next = makeToken({ id: 'after' });
    await store.tokens.createToken(next, T0);
    expect((store.database.prepare('SELECT tenant FROM tokens WHERE id = ?').get('after') as { tenant: number }).tenant).toBe(7);
    store.close();
  });
});

describe('SQLite storage details', () => {
  const count = (store: SqliteStoreCore, sql: string, ...params: unknown[]) => (store.database.prepare(sql).get(...params) as { n: number }).n;

  it('leaves no data behind when a token is deleted or purged: no row, no metadata, no search hashes', async () => {
    const store = openMigrated();
    const deleted = makeToken({ metadata: { a: '1', b: '2' }, searchHashes: ['x', 'y'] });
    const expiring = makeToken({ metadata: { a: '1' }, searchHashes: ['x'], expiresAt: T0 + 1 });
    const kept = makeToken({ metadata: { a: '1' }, searchHashes: ['x'] });
    for (const token of [deleted, expiring, kept]) await store.tokens.createToken(token, T0);
    expect(count(store, 'SELECT count(*) AS n FROM token_metadata')).toBe(4);
    expect(count(store, 'SELECT count(*) AS n FROM token_search')).toBe(4);
    expect(store.tokens.deleteToken(TENANT_A, deleted.id, APP_A, audit(deleted), T0)).toBe(true);
    expect(store.tokens.purgeExpiredTokens(T0 + 1, 10).length).toBe(1);
    expect(count(store, 'SELECT count(*) AS n FROM tokens')).toBe(1);
    expect(count(store, 'SELECT count(*) AS n FROM tokens WHERE ciphertext IN (?, ?)', deleted.ciphertext, expiring.ciphertext)).toBe(0);
    expect(count(store, 'SELECT count(*) AS n FROM token_metadata')).toBe(1);
    expect(count(store, 'SELECT count(*) AS n FROM token_search')).toBe(1);
    expect(count(store, 'SELECT count(*) AS n FROM deleted_tokens')).toBe(2);
    store.close();
  });

  it('reads a token by id (its BLOBs as hex text) as the list reads it (as BLOBs), and as it was created: any ciphertext, fingerprint and search hashes', async () => {
    const store = openMigrated();
    const hmac = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('base64url'));
    // Hashes as the vault makes them (base64url HMACs, stored as bytes) and any other text (stored tagged).
    const hash = fc.oneof(hmac, fc.string({ maxLength: 50 }));
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 600 }),
        fc.option(hash, { nil: null }),
        fc.uniqueArray(hash, { maxLength: 4 }),
        async (ciphertext, fingerprint, searchHashes) => {
          const token = makeToken({ ciphertext: Buffer.from(ciphertext), fingerprint, searchHashes });
          expect(await store.tokens.createToken(token, T0)).toEqual({ status: 'created' });
          const read = store.tokens.getToken(TENANT_A, token.id, T0)!;
          expect(read).toEqual(store.tokens.listTokens(TENANT_A, { ids: [token.id] }, { mode: 'cursor', size: 1 }, T0).items[0]);
          expect({ ciphertext: Buffer.from(read.ciphertext), fingerprint: read.fingerprint, searchHashes: read.searchHashes }).toEqual({
            ciphertext: Buffer.from(ciphertext),
            fingerprint,
            searchHashes,
          });
        },
      ),
      { numRuns: 200 },
    );
    store.close();
  });

  it('reads masks back as deeply frozen values, so a mask shared by many tokens cannot be changed through one', async () => {
    const store = openMigrated();
    const mask = { number: '{{ data.number | reveal_last: 4 }}', nested: { month: '{{ data.month }}' } };
    const a = makeToken({ mask });
    const b = makeToken({ mask: JSON.parse(JSON.stringify(mask)) });
    for (const token of [a, b]) await store.tokens.createToken(token, T0);
    const readA = store.tokens.getToken(TENANT_A, a.id, T0)!.mask as { nested: { month: string } };
    expect(readA).toEqual(mask);
    expect(() => {
      readA.nested.month = 'changed';
    }).toThrow(TypeError);
    expect(store.tokens.getToken(TENANT_A, b.id, T0)!.mask).toEqual(mask);
    // And written back unchanged (an update re-writes the mask it read).
    const readB = store.tokens.getToken(TENANT_A, b.id, T0)!;
    expect(store.tokens.updateToken({ ...readB, modifiedBy: APP_A, modifiedAt: T0 }, audit(readB), T0)).toEqual({ status: 'updated' });
    expect(store.tokens.getToken(TENANT_A, b.id, T0)!.mask).toEqual(mask);
    store.close();
  });

  it('keeps the audit log append-only', () => {
    const store = openMigrated();
    store.audit.appendAudit([makeAudit({ resourceId: 'r' })]);
    // Sealing sets an entry's chain columns once and retention removes entries (docs/audit.md); nothing else changes a row.
    expect(() => store.database.exec("UPDATE audit_log SET actor = 'x'")).toThrow(/sealed once and never changed/);
    expect(() => store.database.exec('UPDATE audit_log SET chain_index = 1')).toThrow(/sealed once and never changed/);
    expect(() => store.database.exec('DELETE FROM audit_log')).toThrow(/removed by retention only/);
    expect(count(store, 'SELECT count(*) AS n FROM audit_log')).toBe(1);
    store.close();
  });

  it('compares metadata and reactor names case-insensitively beyond ASCII', async () => {
    const store = openMigrated();
    const token = makeToken({ metadata: { Straße: 'ÄRGER' } });
    await store.tokens.createToken(token, T0);
    expect(store.tokens.listTokens(TENANT_A, { metadata: { straße: 'ärger' } }, { mode: 'cursor', size: 5 }, T0).items.map((t) => t.id)).toEqual([token.id]);
    store.reactors.createFormula(makeFormula({ id: 'f' }));
    store.reactors.createReactor(makeReactor({ formulaId: 'f', name: 'ÉCOLE Reactor' }));
    expect((await store.reactors.listReactors(TENANT_A, { name: 'école' }, { mode: 'cursor', size: 5 })).items.map((r) => r.name)).toEqual(['ÉCOLE Reactor']);
    store.close();
  });

  it('rejects bad paging and limits with ValidationError on the field (a negative SQLite LIMIT would mean no limit)', () => {
    const store = openMigrated();
    const fieldOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        if (error instanceof ValidationError) return Object.keys(error.errors);
        throw error;
      }
      return [];
    };
    expect(fieldOf(() => store.tokens.listTokens(TENANT_A, {}, { mode: 'cursor', size: 0 }, T0))).toEqual(['size']);
    expect(fieldOf(() => store.tokens.listTokens(TENANT_A, {}, { mode: 'offset', size: 5, page: 0 }, T0))).toEqual(['page']);
    expect(fieldOf(() => store.tokens.purgeExpiredTokens(T0, -1))).toEqual(['limit']);
    expect(fieldOf(() => store.tokens.listCvcDue(T0, 0))).toEqual(['limit']);
    expect(fieldOf(() => store.tokens.listTokensBelowKeyVersion(TENANT_A, 2, 1.5))).toEqual(['limit']);
    store.close();
  });
});

describe('SQLite cursors', () => {
  it('encodes a seq as an opaque base64url string and decodes it back', () => {
    expect(decodeCursor(encodeCursor(1))).toBe(1);
    expect(decodeCursor(encodeCursor(9_007_199_254_740_991))).toBe(9_007_199_254_740_991);
    expect(encodeCursor(42)).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('rejects cursors it would not issue', () => {
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    for (const bad of ['', b64('abc'), b64('0'), b64('-5'), b64('01'), b64('1.5'), b64('99999999999999999'), `${b64('12')}==`, `${b64('12')} `]) {
      expect(() => decodeCursor(bad), bad).toThrow(ValidationError);
    }
  });
});

describe('SQLite query plans', () => {
  const store = openMigrated();
  afterAll(() => store.close());
  const plan = (sql: string, params: unknown[]) => (store.database.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((row) => row.detail);
  const listPlan = (filter: TokenFilter) => {
    const { sql, params } = cursorPageSql(tokenListQuery(1, filter, T0), 0, 20);
    return plan(sql, params);
  };
  /** A full scan of a table, or a sort of the rows found: what an O(log n) query must not do. */
  const linear = (details: string[]) => details.filter((d) => /^SCAN (t|d|m|s)\b/.test(d) || d.includes('TEMP B-TREE'));

  it('gets a token by id through the UNIQUE (tenant, id) index', () => {
    const details = plan(GET_LIVE_TOKEN, [1, 'id', T0]);
    expect(details).toEqual([expect.stringMatching(/^SEARCH t USING INDEX sqlite_autoindex_tokens_\d \(tenant=\? AND id=\?\)$/)]);
  });

  it('lists by one metadata pair by walking token_metadata (clustered on its lookup key) in seq order, fetching tokens by rowid', () => {
    const details = listPlan({ metadata: { customer: 'c1' } });
    expect(details).toContainEqual(expect.stringMatching(/^SEARCH d USING PRIMARY KEY \(tenant=\? AND key_lower=\? AND value_lower=\? AND token_seq>\?\)$/));
    expect(details).toContainEqual('SEARCH t USING INTEGER PRIMARY KEY (rowid=?)');
    expect(linear(details)).toEqual([]);
  });

  it('probes further metadata pairs and search hashes by primary key', () => {
    const details = listPlan({ metadata: { a: '1', b: '2' }, searchHashes: ['h'] });
    expect(details).toContainEqual(expect.stringMatching(/^SEARCH m (EXISTS )?USING PRIMARY KEY \(tenant=\? AND key_lower=\? AND value_lower=\? AND token_seq=\?\)/));
    expect(details).toContainEqual(expect.stringMatching(/^SEARCH s (EXISTS )?USING PRIMARY KEY \(tenant=\? AND hash=\? AND token_seq=\?\)/));
    expect(linear(details)).toEqual([]);
  });

  it('finds expired idempotency records through their expiry index, without a table scan', () => {
    const details = plan('SELECT tenant_id, application_id, key FROM idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?', [T0, 10]);
    expect(details).toEqual([expect.stringMatching(/^SEARCH idempotency_keys USING (COVERING )?INDEX idempotency_keys_expires_at \(expires_at<\?\)$/)]);
  });

  it('lists by one type by walking the table in seq order from the cursor (no type index for every creation to write), without a sort', () => {
    const details = listPlan({ types: ['card'] });
    expect(details).toEqual(['SEARCH t USING INTEGER PRIMARY KEY (rowid>?)']);
  });

  it('lists by ids, fingerprints and search hashes through their indexes', () => {
    for (const [filter, index] of [
      [{ ids: ['a', 'b'] }, /sqlite_autoindex_tokens_\d \(tenant=\? AND id=\?\)/],
      [{ ids: ['a'] }, /sqlite_autoindex_tokens_\d \(tenant=\? AND id=\?\)/],
      [{ fingerprints: ['f'] }, /tokens_fingerprint \(tenant=\? AND fingerprint=\?\)/],
      [{ searchHashes: ['h'] }, /SEARCH d USING PRIMARY KEY \(tenant=\? AND hash=\? AND token_seq>\?\)/],
    ] as [TokenFilter, RegExp][]) {
      const details = listPlan(filter);
      expect(
        details.some((d) => index.test(d)),
        JSON.stringify({ filter, details }),
      ).toBe(true);
      expect(linear(details)).toEqual([]);
    }
  });

  it('finds duplicates, expired tokens and due cvcs through indexes, in order', () => {
    // With and without deduplication scopes: the scopes are tested per candidate row.
    for (const scopes of [null, JSON.stringify([['/pci/', []]])]) {
      const steps = plan(FIND_LIVE_DUPLICATE, [1, Buffer.from('f'), 'card', T0, 0, scopes, scopes]);
      expect(steps[0]).toBe('SEARCH t USING INDEX tokens_fingerprint (tenant=? AND fingerprint=? AND type=?)');
      expect(linear(steps)).toEqual([]);
    }
    expect(plan(LIST_EXPIRED, [T0, 5])).toEqual(['SEARCH t USING INDEX tokens_expires_at (expires_at<?)', 'SEARCH n USING INTEGER PRIMARY KEY (rowid=?)']);
    // Ties of one cvc_purge_at are ordered by tenant and id (the sweep's cursor, listCvcDue): a sort
    // of the rows that share one millisecond, never of the due set.
    expect(plan(TOKENS_SQL.cvcDue.render(sqliteDialect).text, [T0, 5])).toEqual([
      'SEARCH t USING INDEX tokens_cvc_purge_at (cvc_purge_at<?)',
      'SEARCH n USING INTEGER PRIMARY KEY (rowid=?)',
      'USE TEMP B-TREE FOR LAST 2 TERMS OF ORDER BY',
    ]);
  });

  it("runs the token statements written once through the row's keys: the tenant's key once, then one row or a walk in seq order", () => {
    const shared = (name: keyof typeof TOKENS_SQL, args: unknown[]) => {
      const rendered = TOKENS_SQL[name].render(sqliteDialect);
      return plan(rendered.text, [...rendered.bind(args)]);
    };
    const tenantKey = ['SCALAR SUBQUERY 1', 'SEARCH tenant_keys USING COVERING INDEX sqlite_autoindex_tenant_keys_1 (tenant_id=?)'];
    expect(shared('deleted', [TENANT_A, 'x'])).toEqual(['SEARCH deleted_tokens USING PRIMARY KEY (tenant=? AND id=?)', ...tenantKey]);
    expect(shared('replaceCiphertext', [Buffer.from('n'), 2, null, TENANT_A, 'x', Buffer.from('o')])).toEqual([
      'SEARCH tokens USING INDEX sqlite_autoindex_tokens_1 (tenant=? AND id=?)',
      ...tenantKey,
    ]);
    expect(shared('belowKeyVersion', [TENANT_A, 2, 0, 10])).toEqual(['SEARCH t USING INTEGER PRIMARY KEY (rowid>?)', ...tenantKey]);
  });
});

describe('SQLite helpers', () => {
  it('likeSubstringPattern escapes LIKE wildcards and maps * to %', () => {
    expect(LIKE_ESCAPE).toBe('\\');
    expect(likeSubstringPattern('Pay*100%')).toBe('%pay%100\\%%');
    expect(likeSubstringPattern('a_b\\c')).toBe('%a\\_b\\\\c%');
    expect(likeSubstringPattern('**')).toBe('%%%');
  });

  it('StatementCache prepares each SQL once and bounds generated statements', () => {
    const db = new Database(':memory:');
    let prepared = 0;
    const counting = { ...db, open: true, memory: true, prepare: (sql: string) => (prepared++, db.prepare(sql)) } as unknown as ConstructorParameters<typeof StatementCache>[0];
    const cache = new StatementCache(counting, 2);
    const fixed = cache.get('SELECT 1');
    expect(cache.get('SELECT 1')).toBe(fixed);
    const a = cache.generated('SELECT 2');
    cache.generated('SELECT 3');
    expect(cache.generated('SELECT 2')).toBe(a);
    cache.generated('SELECT 4'); // evicts SELECT 3, the least recently used
    expect(prepared).toBe(4);
    cache.generated('SELECT 2');
    expect(prepared).toBe(4);
    cache.generated('SELECT 3');
    expect(prepared).toBe(5);
    expect(cache.get('SELECT 1')).toBe(fixed);
    // The same text in raw mode is a statement of its own (a statement's mode is the statement's).
    expect(cache.generatedValues('SELECT 2 AS n').get()).toEqual([2]);
    expect(cache.generated('SELECT 2 AS n').get()).toEqual({ n: 2 });
    expect(cache.generatedValues('SELECT 2 AS n').get()).toEqual([2]);
    db.close();
  });
});
