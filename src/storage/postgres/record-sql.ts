import { APPLICATION_COLUMNS } from './record-rows.js';

/**
 * The statements of the non-token tables in a schema (`s`: the quoted schema name), built once per
 * store. Inserts use ON CONFLICT DO NOTHING and report "exists" from the row count, so a racing
 * duplicate is a ConflictError without an aborted statement.
 */
export function recordStatements(s: string) {
  return Object.freeze({
    insertTenant: `INSERT INTO ${s}.tenants (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    getTenant: `SELECT id, name, created_at FROM ${s}.tenants WHERE id = $1`,
    listTenants: `SELECT id, name, created_at FROM ${s}.tenants ORDER BY seq`,
    insertWrappedKey: `INSERT INTO ${s}.wrapped_keys (tenant_id, purpose, version, wrapped, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
    listWrappedKeys: `SELECT tenant_id, purpose, version, wrapped, created_at FROM ${s}.wrapped_keys WHERE tenant_id = $1 AND purpose = $2 ORDER BY version`,

    insertApplication:
      `INSERT INTO ${s}.applications (tenant_id, id, name, type, permissions, rules, created_by, created_at, modified_by, modified_at, credentials_generation, allowed_origins) ` +
      'VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (tenant_id, id) DO NOTHING',
    getApplication: `SELECT ${APPLICATION_COLUMNS} FROM ${s}.applications t WHERE t.tenant_id = $1 AND t.id = $2`,
    deleteApplication: `DELETE FROM ${s}.applications WHERE tenant_id = $1 AND id = $2`,
    /** tenant: every application's id and permissions, rows locked in seq order (see PostgresApplications.#guarded). */
    lockApplicationPermissions: `SELECT id, permissions FROM ${s}.applications WHERE tenant_id = $1 ORDER BY seq FOR UPDATE`,

    /** Seven arrays (one per column); rows are inserted, and numbered, in array order. */
    appendAudit:
      `INSERT INTO ${s}.audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) ` +
      'SELECT e.tenant_id, e.actor, e.operation, e.resource_id, e.outcome, e.detail, e.at ' +
      'FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[]) WITH ORDINALITY ' +
      'AS e (tenant_id, actor, operation, resource_id, outcome, detail, at, n) ORDER BY e.n',
  });
}

export type RecordStatements = ReturnType<typeof recordStatements>;
