import { aliasedColumns } from '../joined-row.js';
import { APPLICATION_COLUMNS, FORMULA_COLUMNS, IDEMPOTENCY_COLUMNS, REACTOR_COLUMNS } from './record-rows.js';

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

    insertFormula:
      `INSERT INTO ${s}.formulas (tenant_id, id, name, description, code, configuration, request_parameters, created_by, created_at, modified_by, modified_at) ` +
      'VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (tenant_id, id) DO NOTHING',
    getFormula: `SELECT ${FORMULA_COLUMNS} FROM ${s}.formulas t WHERE t.tenant_id = $1 AND t.id = $2`,
    /** tenant, formula id. Held until commit: a reactor cannot be pointed at a formula being deleted. */
    shareFormula: `SELECT 1 FROM ${s}.formulas WHERE tenant_id = $1 AND id = $2 FOR KEY SHARE`,
    lockFormula: `SELECT 1 FROM ${s}.formulas WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
    /** The formula of reactor $2 (none for inline code), share-locked as shareFormula does. */
    shareReactorFormula: `SELECT 1 FROM ${s}.formulas f JOIN ${s}.reactors r ON r.tenant_id = f.tenant_id AND r.formula_id = f.id WHERE r.tenant_id = $1 AND r.id = $2 FOR KEY SHARE OF f`,
    formulaInUse: `SELECT 1 FROM ${s}.reactors WHERE tenant_id = $1 AND formula_id = $2 LIMIT 1`,
    deleteFormula: `DELETE FROM ${s}.formulas WHERE tenant_id = $1 AND id = $2`,

    insertReactor:
      `INSERT INTO ${s}.reactors (tenant_id, id, name, name_lower, formula_id, code, configuration, application_id, bound_grants, created_by, created_at, modified_by, modified_at) ` +
      'VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (tenant_id, id) DO NOTHING',
    getReactor: `SELECT ${REACTOR_COLUMNS} FROM ${s}.reactors t WHERE t.tenant_id = $1 AND t.id = $2`,
    /** tenant, reactor id: the reactor's columns, then its formula's as f_<column> (null for none). */
    getReactorAndFormula:
      `SELECT ${REACTOR_COLUMNS}, ${aliasedColumns(FORMULA_COLUMNS, 'f')} FROM ${s}.reactors t ` +
      `LEFT JOIN ${s}.formulas f ON f.tenant_id = t.tenant_id AND f.id = t.formula_id WHERE t.tenant_id = $1 AND t.id = $2`,
    deleteReactor: `DELETE FROM ${s}.reactors WHERE tenant_id = $1 AND id = $2`,

    /**
     * Inserts an in-flight record, or replaces an expired one ($10: now). ON CONFLICT DO UPDATE
     * locks the existing row even when its WHERE is false, so the caller can then read the live
     * record knowing no one changes it before the transaction ends.
     */
    claimIdempotency:
      `INSERT INTO ${s}.idempotency_keys AS k (${IDEMPOTENCY_COLUMNS}) VALUES ($1, $2, $3, $4, 'in_flight', NULL, NULL, $5, $6, NULL) ` +
      "ON CONFLICT (tenant_id, application_id, key) DO UPDATE SET request_hash = excluded.request_hash, state = 'in_flight', status = NULL, body = NULL, " +
      'created_at = excluded.created_at, expires_at = excluded.expires_at, withdraw_at = NULL WHERE k.expires_at <= $7 RETURNING 1',
    getIdempotency: `SELECT ${IDEMPOTENCY_COLUMNS} FROM ${s}.idempotency_keys WHERE tenant_id = $1 AND application_id = $2 AND key = $3`,
    /** tenant, application, key, claimedAt: locks the claim's record while it is in flight. */
    lockInFlightIdempotency: `SELECT 1 FROM ${s}.idempotency_keys WHERE tenant_id = $1 AND application_id = $2 AND key = $3 AND state = 'in_flight' AND created_at = $4 FOR UPDATE`,
    /**
     * tenant, ids: the tokens among ids with their expiry and cvc purge time, locked FOR SHARE so a
     * concurrent deletion waits for the completion and then sees its references.
     */
    idempotencyTokenTimes: `SELECT id, expires_at, cvc_purge_at FROM ${s}.tokens WHERE tenant_id = $1 AND id = ANY($2::text[]) FOR SHARE`,
    /** tenant, ids: a row when one of ids names a deleted token. */
    idempotencyTokenDeleted: `SELECT 1 FROM ${s}.token_ids WHERE tenant_id = $1 AND id = ANY($2::text[]) AND deleted_at IS NOT NULL LIMIT 1`,
    completeIdempotency:
      `UPDATE ${s}.idempotency_keys SET state = 'done', status = $1, body = $2, expires_at = $3, withdraw_at = $4 ` +
      `WHERE tenant_id = $5 AND application_id = $6 AND key = $7 AND created_at = $8`,
    withdrawIdempotency:
      `UPDATE ${s}.idempotency_keys SET state = 'withdrawn', status = NULL, body = NULL, expires_at = $1, withdraw_at = NULL ` +
      `WHERE tenant_id = $2 AND application_id = $3 AND key = $4 AND created_at = $5`,
    /** tenant, application, key, claimedAt, token ids. */
    insertIdempotencyTokens:
      `INSERT INTO ${s}.idempotency_tokens (tenant_id, token_id, application_id, key, created_at) ` +
      'SELECT $1, t, $3, $4, $5 FROM unnest($2::text[]) AS t ON CONFLICT DO NOTHING',
    releaseIdempotency: `DELETE FROM ${s}.idempotency_keys WHERE tenant_id = $1 AND application_id = $2 AND key = $3 AND state = 'in_flight' AND created_at = $4`,
    /**
     * Rows another instance is deleting (or claiming) are skipped, not waited for. By key, not by
     * ctid: a row's ctid is unique only within one table's storage, not across a distributed
     * table's shards (docs/scaling.md).
     */
    purgeExpiredIdempotency:
      `DELETE FROM ${s}.idempotency_keys WHERE (tenant_id, application_id, key) IN ` +
      `(SELECT tenant_id, application_id, key FROM ${s}.idempotency_keys WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,

    /** Seven arrays (one per column); rows are inserted, and numbered, in array order. */
    appendAudit:
      `INSERT INTO ${s}.audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) ` +
      'SELECT e.tenant_id, e.actor, e.operation, e.resource_id, e.outcome, e.detail, e.at ' +
      'FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[]) WITH ORDINALITY ' +
      'AS e (tenant_id, actor, operation, resource_id, outcome, detail, at, n) ORDER BY e.n',
  });
}

export type RecordStatements = ReturnType<typeof recordStatements>;
