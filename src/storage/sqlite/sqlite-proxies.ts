import { LIKE_ESCAPE, likeSubstringPattern } from '../like-pattern.js';
import { proxyColumns } from '../proxy-columns.js';
import { PROXY_COLUMNS, proxyFromRow } from '../proxy-rows.js';
import type { ProxyChanges, ProxyFilter, ProxyRecord } from '../proxy-store.js';
import type { Inserted, PageRequest, PageResult, RecordUpdateResult } from '../store.js';
import { runPage } from './paging.js';
import type { BetterSqlite3Database } from './sqlite-options.js';
import type { WriteTransaction } from './sqlite-record-update.js';
import type { StatementCache } from './statement-cache.js';

const SQL = {
  insert:
    'INSERT INTO proxies (tenant_id, id, name, name_lower, destination_url, request_transforms, response_transforms, configuration, application_id, bound_grants, ' +
    'require_auth, key_hash, key_lookup, maker_application_id, maker_generation, created_by, created_at, modified_by, modified_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING',
  get: `SELECT ${PROXY_COLUMNS} FROM proxies t WHERE t.tenant_id = ? AND t.id = ?`,
  byLookup: `SELECT ${PROXY_COLUMNS} FROM proxies t WHERE t.key_lookup = ?`,
  delete: 'DELETE FROM proxies WHERE tenant_id = ? AND id = ?',
} as const;

type Row = Record<string, unknown>;

/** Pre-configured proxies: a part of the SQLite store's synchronous core (see sqlite-boundary.ts). */
export class SqliteProxies {
  #statements: StatementCache;
  #read: <R>(fn: () => R) => R;
  #write: WriteTransaction;

  constructor(_db: BetterSqlite3Database, statements: StatementCache, read: <R>(fn: () => R) => R, write: WriteTransaction) {
    this.#statements = statements;
    this.#read = read;
    this.#write = write;
  }

  createProxy(proxy: ProxyRecord): Inserted {
    const result = this.#statements
      .get(SQL.insert)
      .run(
        proxy.tenantId,
        proxy.id,
        proxy.name,
        proxy.name.toLowerCase(),
        proxy.destinationUrl,
        JSON.stringify(proxy.requestTransforms ?? []),
        JSON.stringify(proxy.responseTransforms ?? []),
        proxy.configuration == null ? null : Buffer.from(proxy.configuration),
        proxy.applicationId ?? null,
        proxy.boundGrants == null ? null : JSON.stringify(proxy.boundGrants),
        proxy.requireAuth ? 1 : 0,
        proxy.keyHash,
        proxy.keyLookup,
        proxy.maker?.applicationId ?? null,
        proxy.maker?.credentialsGeneration ?? null,
        proxy.createdBy ?? null,
        proxy.createdAt,
        proxy.modifiedBy ?? null,
        proxy.modifiedAt ?? null,
      );
    return result.changes === 0 ? 'exists' : 'created';
  }

  getProxy(tenantId: string, id: string): ProxyRecord | null {
    const row = this.#statements.get(SQL.get).get(tenantId, id) as Row | undefined;
    return row === undefined ? null : proxyFromRow(row);
  }

  /** In creation order; `name` is a case-insensitive substring in which `*` matches any run. */
  listProxies(tenantId: string, filter: ProxyFilter, page: PageRequest): PageResult<ProxyRecord> {
    const where = ['t.tenant_id = ?'];
    const params: unknown[] = [tenantId];
    if (filter?.name !== undefined && filter.name !== null) {
      where.push(`t.name_lower LIKE ? ESCAPE '${LIKE_ESCAPE}'`);
      params.push(likeSubstringPattern(filter.name));
    }
    return runPage(this.#statements, this.#read, { columns: PROXY_COLUMNS, from: `FROM proxies t WHERE ${where.join(' AND ')}`, params }, page, proxyFromRow);
  }

  findProxiesByKeyLookup(keyLookup: string): ProxyRecord[] {
    return (this.#statements.get(SQL.byLookup).all(keyLookup) as Row[]).map(proxyFromRow);
  }

  /** Writes only the columns of the fields given, under the precondition when there is one. One transaction. */
  updateProxy(tenantId: string, id: string, changes: ProxyChanges, expected?: { applicationId: string | null }): RecordUpdateResult<ProxyRecord> {
    const columns = proxyColumns(changes).map((c) => (typeof c.value === 'boolean' ? { ...c, value: c.value ? 1 : 0 } : c));
    const condition = expected === undefined ? '' : ' AND application_id IS ?';
    const params = expected === undefined ? [] : [expected.applicationId];
    return this.#write.immediate(() => {
      const sql = `UPDATE proxies SET ${columns.map((c) => `${c.column} = ?`).join(', ')} WHERE tenant_id = ? AND id = ?${condition}`;
      const changed = this.#statements.get(sql).run(...columns.map((c) => c.value), tenantId, id, ...params).changes === 1;
      const record = this.getProxy(tenantId, id);
      if (record === null) return { status: 'not_found' };
      return changed ? { status: 'updated', record } : { status: 'changed' };
    });
  }

  deleteProxy(tenantId: string, id: string): boolean {
    return this.#statements.get(SQL.delete).run(tenantId, id).changes === 1;
  }
}
