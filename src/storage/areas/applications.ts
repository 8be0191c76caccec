import type { Permission } from '../../permissions/permissions.js';
import { applicationColumns, applicationExpectation } from '../record-changes.js';
import type { ApplicationKeyRecord, ApplicationRecord, Inserted } from '../store.js';
import type { Dialect } from '../sql/dialect.js';
import { operation, query, type AreaOperations, type Steps } from '../sql/operation.js';
import { listStatements, pageSteps } from '../sql/list-page.js';
import { AS_JSON, jsonIs, updateSteps } from '../sql/record-update.js';
import { lock, sql, table } from '../sql/sql.js';
import { APPLICATION_COLUMNS, APPLICATION_RETURNED, toApplication } from './application-rows.js';
import { insertKey } from './credentials.js';

const APPLICATIONS = table('applications');
const LIST = listStatements(APPLICATION_COLUMNS, sql`FROM ${APPLICATIONS} t WHERE t.tenant_id = ${1}`, 1);

export const APPLICATIONS_SQL = {
  insert: sql`INSERT INTO ${APPLICATIONS} (tenant_id, id, name, type, permissions, rules, created_by, created_at, modified_by, modified_at, credentials_generation, allowed_origins) VALUES (${1}, ${2}, ${3}, ${4}, ${5}${AS_JSON}, ${6}${AS_JSON}, ${7}, ${8}, ${9}, ${10}, ${11}, ${12}${AS_JSON}) ON CONFLICT (tenant_id, id) DO NOTHING`,
  get: sql`SELECT ${APPLICATION_COLUMNS} FROM ${APPLICATIONS} t WHERE t.tenant_id = ${1} AND t.id = ${2}`,
  delete: sql`DELETE FROM ${APPLICATIONS} WHERE tenant_id = ${1} AND id = ${2}`,
  /**
   * tenant: every application's id and permissions. PostgreSQL locks the rows in seq order, so two
   * guarded changes queue instead of deadlocking, and the second reads what the first committed
   * (a deleted row is skipped); SQLite's guarded change holds the one write lock.
   */
  lockPermissions: sql`SELECT id, permissions FROM ${APPLICATIONS} WHERE tenant_id = ${1} ORDER BY seq${lock('update')}`,
  listCursor: LIST.cursor,
  listOffset: LIST.offset,
};

const SQL = APPLICATIONS_SQL;
const PERMISSIONS_ARE = jsonIs('permissions');
const RULES_ARE = jsonIs('rules');

const json = (value: unknown) => JSON.stringify(value);

/** The application row and its first key, inside the caller's transaction (createTenant's too). */
export function* insertApplication(app: ApplicationRecord, key: ApplicationKeyRecord): Steps<Inserted> {
  const inserted = yield query(
    SQL.insert,
    app.tenantId,
    app.id,
    app.name,
    app.type,
    json(app.permissions ?? []),
    json(app.rules ?? []),
    app.createdBy ?? null,
    app.createdAt,
    app.modifiedBy ?? null,
    app.modifiedAt ?? null,
    app.credentialsGeneration ?? 0,
    json(app.allowedOrigins ?? []),
  );
  if (inserted.changes === 0) return 'exists';
  yield* insertKey(key);
  return 'created';
}

/**
 * Whether a change giving application `id` the permissions `next` (null: its deletion) would leave
 * the tenant without an application holding all of `keep`, read under SQL.lockPermissions.
 */
function* leavesNoHolder(d: Dialect, tenantId: string, id: string, keep: readonly Permission[], next: readonly Permission[] | null): Steps<boolean> {
  const { rows } = yield query(SQL.lockPermissions, tenantId);
  const holds = (permissions: readonly string[]) => keep.every((p) => permissions.includes(p));
  const before = rows.filter((row) => holds(d.json<string[]>(row['permissions'])));
  const after = rows.filter((row) => (row['id'] === id ? next !== null && holds(next) : holds(d.json<string[]>(row['permissions']))));
  return before.length > 0 && after.length === 0 && rows.some((row) => row['id'] === id);
}

/** A guard only when it can matter: `keep` given, and the permissions changing (or the application going). */
const guarded = (keep: readonly Permission[] | undefined, changing: boolean): keep is readonly Permission[] => keep !== undefined && keep.length > 0 && changing;

/** Applications (store-parts.ts, area `applications`); their keys and sessions are the `credentials` area. */
export const APPLICATIONS_AREA: AreaOperations<'applications'> = {
  /** Ids are unique per tenant; the application and its first key in one transaction. */
  createApplication: operation('write', function* (_d, app, key) {
    return yield* insertApplication(app, key);
  }),

  getApplication: operation('statement', function* (d, tenantId, id) {
    const row = (yield query(SQL.get, tenantId, id)).rows[0];
    return row === undefined ? null : toApplication(d, row);
  }),

  /** In creation order. */
  listApplications: operation('statement', function* (d, tenantId, request) {
    return yield* pageSteps(LIST, [tenantId], request, (row) => toApplication(d, row));
  }),

  /** Writes only the columns of the fields given; `keep` and `expected`: see Store. */
  updateApplication: operation(
    (_d, _tenantId, _id, changes, keep) => (guarded(keep, changes.permissions !== undefined) ? 'write' : 'statement'),
    function* (d, tenantId, id, changes, keep, expected) {
      if (guarded(keep, changes.permissions !== undefined) && (yield* leavesNoHolder(d, tenantId, id, keep, changes.permissions!))) return { status: 'last_holder' };
      const conditions = expected === undefined ? [] : applicationExpectation(expected).map((value, i) => [i === 0 ? PERMISSIONS_ARE : RULES_ARE, value] as const);
      return yield* updateSteps('applications', APPLICATION_RETURNED, tenantId, id, applicationColumns(changes), conditions, (row) => toApplication(d, row));
    },
  ),

  deleteApplication: operation(
    (_d, _tenantId, _id, keep) => (guarded(keep, true) ? 'write' : 'statement'),
    function* (d, tenantId, id, keep) {
      if (guarded(keep, true) && (yield* leavesNoHolder(d, tenantId, id, keep, null))) return 'last_holder';
      return (yield query(SQL.delete, tenantId, id)).changes === 1 ? 'deleted' : 'not_found';
    },
  ),
};
