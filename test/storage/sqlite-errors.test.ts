import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { generateMasterKey } from '../../src/crypto/key-provider.js';
import { ConflictError, ServiceUnavailableError, ValidationError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/index.js';
import { createSqliteStore } from '../../src/sqlite.js';
import { translateSqliteError } from '../../src/storage/sqlite/sqlite-errors.js';
import { createTestVault } from '../../src/testing/index.js';
import { SUITE_START } from '../support/suite-start.js';

/** SQLite driver errors are translated at the store boundary. */
describe('SQLite driver errors', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('a database locked by another writer past the busy timeout answers 503 with Retry-After (after one retry), never a 500', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tv-busy-'));
    dirs.push(dir);
    const filename = join(dir, 'vault.db');
    const vault = await createTestVault({ start: SUITE_START, store: createSqliteStore({ filename, busyTimeoutMs: 0 }), masterKey: generateMasterKey() });
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const handler = createFetchHandler(vault);
    const post = () =>
      handler(
        new Request('http://vault.test/tokens', {
          method: 'POST',
          headers: { 'svc-api-key': app.key, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'token', data: 'x' }),
        }),
      );
    // Another process holds the write lock.
    const other = new Database(filename);
    other.exec('BEGIN IMMEDIATE');
    try {
      const locked = await post();
      expect(locked.status).toBe(503);
      expect(locked.headers.get('retry-after')).toBe('1');
      expect((await locked.json()).type).toBe('urn:tokenvault:problem:service-unavailable');
      await expect(vault.tokens.create(app, { type: 'token', data: 'y' })).rejects.toBeInstanceOf(ServiceUnavailableError);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect((await post()).status).toBe(201);
    await vault.close();
  });

  it('translates by a table: unique violations to ConflictError, busy and I/O to ServiceUnavailableError, others unchanged', () => {
    const sqliteError = (code: string) => Object.assign(new Error(code), { code });
    expect(translateSqliteError(sqliteError('SQLITE_CONSTRAINT_UNIQUE'))).toBeInstanceOf(ConflictError);
    expect(translateSqliteError(sqliteError('SQLITE_CONSTRAINT_PRIMARYKEY'))).toBeInstanceOf(ConflictError);
    for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_LOCKED', 'SQLITE_FULL', 'SQLITE_IOERR_WRITE', 'SQLITE_READONLY']) {
      expect(translateSqliteError(sqliteError(code))).toBeInstanceOf(ServiceUnavailableError);
    }
    expect(translateSqliteError(sqliteError('SQLITE_TOOBIG'))).toBeInstanceOf(ValidationError);
    const other = sqliteError('SQLITE_ERROR');
    expect(translateSqliteError(other)).toBe(other);
  });
});
