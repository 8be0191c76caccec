import type { ApplicationChanges, FormulaChanges, ReactorChanges } from './store.js';

/** One column an update writes, with its value as bound (JSON columns as JSON text). */
export interface ColumnChange {
  column: string;
  value: unknown;
  json: boolean;
}

const json = (value: unknown) => JSON.stringify(value);

/**
 * The columns an application update writes: the fields present in `changes` only, so an update
 * never rewrites what it did not name (a permissions change never writes back an older name).
 */
export function applicationColumns(changes: ApplicationChanges): ColumnChange[] {
  const out: ColumnChange[] = [];
  if (changes.name !== undefined) out.push({ column: 'name', value: changes.name, json: false });
  if (changes.permissions !== undefined) out.push({ column: 'permissions', value: json(changes.permissions), json: true });
  if (changes.rules !== undefined) out.push({ column: 'rules', value: json(changes.rules), json: true });
  if (changes.allowedOrigins !== undefined) out.push({ column: 'allowed_origins', value: json(changes.allowedOrigins), json: true });
  return stamped(out, changes);
}

/** The permissions and rules an application update is guarded on, as their columns hold them. */
export function applicationExpectation(expected: { permissions: unknown; rules: unknown }): [string, string] {
  return [json(expected.permissions), json(expected.rules)];
}

/** The columns a formula update writes (fields present only). */
export function formulaColumns(changes: FormulaChanges): ColumnChange[] {
  const out: ColumnChange[] = [];
  if (changes.name !== undefined) out.push({ column: 'name', value: changes.name, json: false });
  if (changes.description !== undefined) out.push({ column: 'description', value: changes.description, json: false });
  if (changes.code !== undefined) out.push({ column: 'code', value: changes.code, json: false });
  if (changes.configuration !== undefined) out.push({ column: 'configuration', value: json(changes.configuration), json: true });
  if (changes.requestParameters !== undefined) out.push({ column: 'request_parameters', value: json(changes.requestParameters), json: true });
  return stamped(out, changes);
}

/** The columns a reactor update writes (fields present only; name_lower follows name). */
export function reactorColumns(changes: ReactorChanges): ColumnChange[] {
  const out: ColumnChange[] = [];
  if (changes.name !== undefined) {
    out.push({ column: 'name', value: changes.name, json: false });
    out.push({ column: 'name_lower', value: changes.name.toLowerCase(), json: false });
  }
  if (changes.code !== undefined) out.push({ column: 'code', value: changes.code, json: false });
  if (changes.configuration !== undefined) out.push({ column: 'configuration', value: json(changes.configuration), json: true });
  if (changes.applicationId !== undefined) out.push({ column: 'application_id', value: changes.applicationId, json: false });
  if (changes.boundGrants !== undefined) out.push({ column: 'bound_grants', value: changes.boundGrants === null ? null : json(changes.boundGrants), json: true });
  return stamped(out, changes);
}

function stamped(out: ColumnChange[], changes: { modifiedBy: string | null; modifiedAt: number }): ColumnChange[] {
  out.push({ column: 'modified_by', value: changes.modifiedBy ?? null, json: false });
  out.push({ column: 'modified_at', value: changes.modifiedAt, json: false });
  return out;
}

/** The JSON text a formula precondition compares (as the stores write it: JSON.stringify). */
export function formulaExpectation(expected: { code: string; configuration: unknown; requestParameters: unknown }): [string, string, string] {
  return [expected.code, json(expected.configuration), json(expected.requestParameters)];
}
