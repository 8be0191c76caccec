import { LIKE_ESCAPE, likeSubstringPattern } from '../like-pattern.js';
import { proxyColumns } from '../proxy-columns.js';
import { PROXY_COLUMNS, proxyFromRow } from '../proxy-rows.js';
import type { ProxyChanges, ProxyFilter, ProxyRecord } from '../proxy-store.js';
import type { Inserted, PageRequest, PageResult, RecordUpdateResult } from '../store.js';
import { runPage, SqlParams } from './paging.js';
import type { PgExecutor } from './pg-executor.js';

type Row = Record<string, unknown>;

const json = (value: unknown) => JSON.stringify(value);

/** Pre-configured proxies: a part of the PostgreSQL store. */
export class PostgresProxies {
  readonly #db: PgExecutor;
  readonly #s: string;
  readonly #sql;

  constructor(db: PgExecutor, s: string) {
    this.#db = db;
    this.#s = s;
    this.#sql = Object.freeze({
      insert:
        `INSERT INTO ${s}.proxies (tenant_id, id, name, name_lower, destination_url, request_transforms, response_transforms, configuration, application_id, bound_grants, ` +
        'require_auth, key_hash, key_lookup, maker_application_id, maker_generation, created_by, created_at, modified_by, modified_at) ' +
        'VALUES ($1, $2, $3, $4, $5, $6::json, $7::json, $8, $9, $10::json, $11, $12, $13, $14, $15::integer, $16, $17, $18, $19) ON CONFLICT (tenant_id, id) DO NOTHING',
      get: `SELECT ${PROXY_COLUMNS} FROM ${s}.proxies t WHERE t.tenant_id = $1 AND t.id = $2`,
      byLookup: `SELECT ${PROXY_COLUMNS} FROM ${s}.proxies t WHERE key_lookup = $1`,
      delete: `DELETE FROM ${s}.proxies WHERE tenant_id = $1 AND id = $2`,
      exists: `SELECT 1 FROM ${s}.proxies WHERE tenant_id = $1 AND id = $2`,
    });
  }

  async createProxy(proxy: ProxyRecord): Promise<Inserted> {
    const result = await this.#db.query(this.#sql.insert, [
      proxy.tenantId,
      proxy.id,
      proxy.name,
      proxy.name.toLowerCase(),
      proxy.destinationUrl,
      json(proxy.requestTransforms ?? []),
      json(proxy.responseTransforms ?? []),
      proxy.configuration == null ? null : Buffer.from(proxy.configuration),
      proxy.applicationId ?? null,
      proxy.boundGrants == null ? null : json(proxy.boundGrants),
      proxy.requireAuth,
      proxy.keyHash,
      proxy.keyLookup,
      proxy.maker?.applicationId ?? null,
      proxy.maker?.credentialsGeneration ?? null,
      proxy.createdBy ?? null,
      proxy.createdAt,
      proxy.modifiedBy ?? null,
      proxy.modifiedAt ?? null,
    ]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async getProxy(tenantId: string, id: string): Promise<ProxyRecord | null> {
    const { rows } = await this.#db.query(this.#sql.get, [tenantId, id]);
    return rows.length === 0 ? null : proxyFromRow(rows[0]!);
  }

  /** In creation order; `name` is a case-insensitive substring in which `*` matches any run. */
  listProxies(tenantId: string, filter: ProxyFilter, page: PageRequest): Promise<PageResult<ProxyRecord>> {
    const params = new SqlParams();
    const where = [`t.tenant_id = ${params.add(tenantId, 'text')}`];
    if (filter?.name !== undefined && filter.name !== null) {
      const pattern = params.add(likeSubstringPattern(filter.name), 'text');
      where.push(`t.name_lower LIKE ${pattern} ESCAPE ${params.add(LIKE_ESCAPE, 'text')}`);
    }
    return runPage(this.#db, { columns: PROXY_COLUMNS, from: `FROM ${this.#s}.proxies t`, where, params }, page, proxyFromRow);
  }

  async findProxiesByKeyLookup(keyLookup: string): Promise<ProxyRecord[]> {
    return (await this.#db.query(this.#sql.byLookup, [keyLookup])).rows.map(proxyFromRow);
  }

  /** Writes only the columns of the fields given, under the precondition when there is one: one statement. */
  async updateProxy(tenantId: string, id: string, changes: ProxyChanges, expected?: { applicationId: string | null }): Promise<RecordUpdateResult<ProxyRecord>> {
    const values: unknown[] = [];
    const bind = (value: unknown) => `$${values.push(value)}`;
    const set = proxyColumns(changes)
      .map((c) => `${c.column} = ${bind(c.value)}${c.json ? '::json' : ''}`)
      .join(', ');
    const where = [`t.tenant_id = ${bind(tenantId)}`, `t.id = ${bind(id)}`];
    if (expected !== undefined) where.push(`t.application_id IS NOT DISTINCT FROM ${bind(expected.applicationId)}::text`);
    const { rows } = await this.#db.query(`UPDATE ${this.#s}.proxies AS t SET ${set} WHERE ${where.join(' AND ')} RETURNING ${PROXY_COLUMNS}`, values, 'shaped');
    if (rows.length === 1) return { status: 'updated', record: proxyFromRow(rows[0]!) };
    if (expected === undefined) return { status: 'not_found' };
    const found = await this.#db.query(this.#sql.exists, [tenantId, id]);
    return found.rows.length === 0 ? { status: 'not_found' } : { status: 'changed' };
  }

  async deleteProxy(tenantId: string, id: string): Promise<boolean> {
    return (await this.#db.query(this.#sql.delete, [tenantId, id])).rowCount === 1;
  }
}
