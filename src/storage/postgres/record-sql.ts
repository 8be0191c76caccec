import { aliasedColumns } from '../joined-row.js';
import { FORMULA_COLUMNS, REACTOR_COLUMNS } from './record-rows.js';

/**
 * The statements of the reactor and audit tables in a schema (`s`: the quoted schema name), built once per
 * store. Inserts use ON CONFLICT DO NOTHING and report "exists" from the row count, so a racing
 * duplicate is a ConflictError without an aborted statement.
 */
export function recordStatements(s: string) {
  return Object.freeze({
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

    /** Seven arrays (one per column); rows are inserted, and numbered, in array order. */
    appendAudit:
      `INSERT INTO ${s}.audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) ` +
      'SELECT e.tenant_id, e.actor, e.operation, e.resource_id, e.outcome, e.detail, e.at ' +
      'FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[]) WITH ORDINALITY ' +
      'AS e (tenant_id, actor, operation, resource_id, outcome, detail, at, n) ORDER BY e.n',
  });
}

export type RecordStatements = ReturnType<typeof recordStatements>;
