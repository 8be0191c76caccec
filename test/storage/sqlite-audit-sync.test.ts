// The SQLite audit batches commit without an fsync on the event loop's thread and resolve once the
// WAL is synced on the thread pool (src/storage/sqlite/wal-sync.ts); what a caller sees is the same
// at every durability setting: the entries are stored, and the connection's synchronous setting is
// as it was.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../../src/sqlite.js';
import { TENANT_A, makeAudit } from '../../src/testing/store-conformance.js';

const dir = mkdtempSync(join(tmpdir(), 'tokenvault-audit-sync-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('SQLite audit batches', () => {
  for (const [name, options, synchronous] of [
    ['a file at synchronous full (the default)', { filename: join(dir, 'full.db') }, 2],
    ['a file at synchronous normal', { filename: join(dir, 'normal.db'), synchronous: 'normal' as const }, 1],
    ['an in-memory database', {}, 2],
  ] as const) {
    it(`are stored, and leave the connection's synchronous setting as it was: ${name}`, async () => {
      const store = createSqliteStore(options);
      await store.migrate();
      const entries = [makeAudit({ resourceId: 'a' }), makeAudit({ resourceId: 'b' })];
      const appended = store.appendAudit(entries);
      expect(store.database.pragma('synchronous', { simple: true })).toBe(synchronous);
      await appended;
      expect((await store.listAudit(TENANT_A, {}, { mode: 'offset', size: 100, page: 1 })).items.map((e) => e.resourceId)).toEqual(['a', 'b']);
      await store.appendAudit([]);
      await store.close();
    });
  }
});
