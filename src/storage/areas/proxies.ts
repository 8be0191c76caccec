import { LIKE_ESCAPE, likeSubstringPattern } from '../like-pattern.js';
import { proxyColumns } from '../proxy-columns.js';
import { PROXY_COLUMNS, proxyFromRow } from '../proxy-rows.js';
import { listStatements, listStatementsByName, pageSteps } from '../sql/list-page.js';
import { operation, query, type AreaOperations } from '../sql/operation.js';
import { raw, sql, table } from '../sql/sql.js';
import { APPLICATION_IS, bare, updateStatement, updateSteps } from '../sql/record-update.js';

const PROXIES = table('proxies');
const COLUMNS = raw(PROXY_COLUMNS);
const RETURNING = bare(PROXY_COLUMNS);

/** A boolean argument as both drivers bind it: SQLite has no boolean, and PostgreSQL reads '1'/'0' as one. */
const bit = (value: boolean): number => (value ? 1 : 0);

const FROM_TENANT = sql`FROM ${PROXIES} t WHERE t.tenant_id = ${1}`;
const LISTS = {
  list: listStatements(COLUMNS, FROM_TENANT, 1),
  // The escape character is bound: a backslash literal would depend on PostgreSQL's standard_conforming_strings.
  listName: listStatements(COLUMNS, sql`${FROM_TENANT} AND t.name_lower LIKE ${2} ESCAPE ${3}`, 3),
};

export const PROXIES_SQL = {
  insert: sql`INSERT INTO ${PROXIES} (tenant_id, id, name, name_lower, destination_url, request_transforms, response_transforms, configuration, application_id, bound_grants, require_auth, key_hash, key_lookup, maker_application_id, maker_generation, created_by, created_at, modified_by, modified_at) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}, ${9}, ${10}, ${11}, ${12}, ${13}, ${14}, ${15}, ${16}, ${17}, ${18}, ${19}) ON CONFLICT (tenant_id, id) DO NOTHING`,
  get: sql`SELECT ${COLUMNS} FROM ${PROXIES} t WHERE t.tenant_id = ${1} AND t.id = ${2}`,
  /** Across tenants: a proxy key names its tenant only through the proxy it finds (ProxyStore.findProxiesByKeyLookup). */
  byLookup: sql`SELECT ${COLUMNS} FROM ${PROXIES} t WHERE t.key_lookup = ${1}`,
  delete: sql`DELETE FROM ${PROXIES} WHERE tenant_id = ${1} AND id = ${2}`,
  ...listStatementsByName(LISTS),
  /** The widest shape of updateProxy, so its text is compiled with the others. */
  updateEvery: updateStatement(
    'proxies',
    RETURNING,
    proxyColumns({
      name: '',
      destinationUrl: '',
      requestTransforms: [],
      responseTransforms: [],
      configuration: null,
      applicationId: null,
      boundGrants: null,
      requireAuth: true,
      key: { keyHash: '', keyLookup: '' },
      maker: null,
      modifiedBy: null,
      modifiedAt: 0,
    }),
    [APPLICATION_IS],
  ),
};

const SQL = PROXIES_SQL;

/** Pre-configured proxies (store-parts.ts, area `proxies`). */
export const PROXIES_AREA: AreaOperations<'proxies'> = {
  createProxy: operation('statement', function* (_d, p) {
    const { changes } = yield query(
      SQL.insert,
      p.tenantId,
      p.id,
      p.name,
      p.name.toLowerCase(),
      p.destinationUrl,
      JSON.stringify(p.requestTransforms ?? []),
      JSON.stringify(p.responseTransforms ?? []),
      p.configuration == null ? null : Buffer.from(p.configuration),
      p.applicationId ?? null,
      p.boundGrants == null ? null : JSON.stringify(p.boundGrants),
      bit(p.requireAuth),
      p.keyHash,
      p.keyLookup,
      p.maker?.applicationId ?? null,
      p.maker?.credentialsGeneration ?? null,
      p.createdBy ?? null,
      p.createdAt,
      p.modifiedBy ?? null,
      p.modifiedAt ?? null,
    );
    return changes === 0 ? 'exists' : 'created';
  }),

  getProxy: operation('statement', function* (_d, tenantId, id) {
    const row = (yield query(SQL.get, tenantId, id)).rows[0];
    return row === undefined ? null : proxyFromRow(row);
  }),

  /** In creation order; `name` is a case-insensitive substring in which `*` matches any run. */
  listProxies: operation('statement', function* (_d, tenantId, filter, page) {
    if (filter?.name == null) return yield* pageSteps(LISTS.list, [tenantId], page, proxyFromRow);
    return yield* pageSteps(LISTS.listName, [tenantId, likeSubstringPattern(filter.name), LIKE_ESCAPE], page, proxyFromRow);
  }),

  findProxiesByKeyLookup: operation('statement', function* (_d, keyLookup) {
    return (yield query(SQL.byLookup, keyLookup)).rows.map(proxyFromRow);
  }),

  /** Writes only the columns of the fields given, under the precondition when there is one: one statement. */
  updateProxy: operation('statement', function* (_d, tenantId, id, changes, expected) {
    const columns = proxyColumns(changes).map((c) => (typeof c.value === 'boolean' ? { ...c, value: bit(c.value) } : c));
    const conditions = expected === undefined ? [] : [[APPLICATION_IS, expected.applicationId] as const];
    return yield* updateSteps('proxies', RETURNING, tenantId, id, columns, conditions, proxyFromRow);
  }),

  deleteProxy: operation('statement', function* (_d, tenantId, id) {
    return (yield query(SQL.delete, tenantId, id)).changes === 1;
  }),
};
