/**
 * The statements of the audit table in a schema (`s`: the quoted schema name), built once per
 * store. Inserts use ON CONFLICT DO NOTHING and report "exists" from the row count, so a racing
 * duplicate is a ConflictError without an aborted statement.
 */
export function recordStatements(s: string) {
  return Object.freeze({
    /** Seven arrays (one per column); rows are inserted, and numbered, in array order. */
    appendAudit:
      `INSERT INTO ${s}.audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at) ` +
      'SELECT e.tenant_id, e.actor, e.operation, e.resource_id, e.outcome, e.detail, e.at ' +
      'FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[]) WITH ORDINALITY ' +
      'AS e (tenant_id, actor, operation, resource_id, outcome, detail, at, n) ORDER BY e.n',
  });
}

export type RecordStatements = ReturnType<typeof recordStatements>;
