import type { ColumnChange } from '../record-changes.js';
import type { RecordUpdateResult } from '../store.js';
import type { Dialect } from './dialect.js';
import { query, shapedQuery, type Row, type Steps } from './operation.js';
import { byDialect, raw, sql, table, type Slot, type Sql } from './sql.js';

/** After a JSON parameter: PostgreSQL's json columns take the text cast; SQLite stores the text itself. */
export const AS_JSON = byDialect({ sqlite: '', postgres: '::json' });
/** After a JSON column: its stored text (PostgreSQL's json keeps the text verbatim; SQLite's is text). */
const AS_TEXT = byDialect({ sqlite: '', postgres: '::text' });

/** The tables whose records are updated field by field (record-changes.ts). */
export type UpdatedTable = 'applications' | 'formulas' | 'reactors' | 'proxies';

/** A precondition of an update, over the argument numbered `n` (`name` tells its text: one text per name). */
export interface UpdateCondition {
  readonly name: string;
  readonly sql: (n: number) => Sql;
}

/** The record's application is still the expected one (null included). */
export const APPLICATION_IS: UpdateCondition = { name: 'application', sql: (n) => sql`t.application_id IS NOT DISTINCT FROM ${n}` };

/** A JSON column still holds the expected text (the JSON the record was read with). */
export const jsonIs = (column: string): UpdateCondition => ({ name: column, sql: (n) => sql`${raw(`t.${column}`)}${AS_TEXT} = ${n}` });

/** Whether the dialect takes row locks (PostgreSQL); SQLite writes under one database lock. */
export const locksRows = (d: Dialect): boolean => d.lock('update') !== '';

/** `t.a, t.b` without the alias: RETURNING names the updated table's columns bare on SQLite. */
export const bare = (columns: string): string => columns.replace(/\bt\./g, '');

const EXISTS = Object.fromEntries(
  (['applications', 'formulas', 'reactors', 'proxies'] as const).map((name) => [name, sql`SELECT 1 FROM ${table(name)} WHERE tenant_id = ${1} AND id = ${2}`]),
) as Record<UpdatedTable, Sql>;

/** The statements every update may run beside its shaped UPDATE (store-statements.test.ts compiles them). */
export const RECORD_UPDATE_SQL = { applicationExists: EXISTS.applications, formulaExists: EXISTS.formulas, reactorExists: EXISTS.reactors, proxyExists: EXISTS.proxies };

// The shapes are the columns a caller changed and the preconditions: finitely many, all named by
// the store's code (never by a caller's text), so each is built and rendered once.
const shapes = new Map<string, Sql>();

/**
 * UPDATE of `columns` (arguments 1..k) on the tenant's row (k+1, k+2) under `conditions` (k+3...),
 * returning `returning` (bare column names).
 */
export function updateStatement(name: UpdatedTable, returning: string, columns: readonly ColumnChange[], conditions: readonly UpdateCondition[]): Sql {
  const key = `${name}|${columns.map((c) => c.column).join(',')}|${conditions.map((c) => c.name).join(',')}`;
  let statement = shapes.get(key);
  if (statement === undefined) {
    const strings: string[] = ['UPDATE '];
    const slots: Slot[] = [table(name)];
    strings.push(' AS t SET ');
    columns.forEach((c, i) => {
      slots.push(raw(`${i === 0 ? '' : ', '}${c.column} = `), i + 1);
      strings.push('', '');
      if (c.json) {
        slots.push(AS_JSON);
        strings.push('');
      }
    });
    const k = columns.length;
    slots.push(raw(' WHERE t.tenant_id = '), k + 1, raw(' AND t.id = '), k + 2);
    strings.push('', '', '', '');
    conditions.forEach((c, i) => {
      slots.push(raw(' AND '), c.sql(k + 3 + i));
      strings.push('', '');
    });
    slots.push(raw(` RETURNING ${returning}`));
    strings.push('');
    statement = sql(strings, ...slots);
    shapes.set(key, statement);
  }
  return statement;
}

/**
 * The body of a field-by-field update: one UPDATE ... RETURNING; when it matched nothing under a
 * precondition, whether the row exists tells `changed` from `not_found`.
 */
export function* updateSteps<T>(
  name: UpdatedTable,
  returning: string,
  tenantId: string,
  id: string,
  columns: readonly ColumnChange[],
  conditions: readonly (readonly [UpdateCondition, unknown])[],
  map: (row: Row) => T,
): Steps<RecordUpdateResult<T>> {
  const statement = updateStatement(
    name,
    returning,
    columns,
    conditions.map(([c]) => c),
  );
  const args = [...columns.map((c) => c.value), tenantId, id, ...conditions.map(([, value]) => value)];
  const { rows } = yield shapedQuery(statement, args);
  if (rows.length === 1) return { status: 'updated', record: map(rows[0]!) };
  if (conditions.length === 0) return { status: 'not_found' };
  return (yield query(EXISTS[name], tenantId, id)).rows.length === 0 ? { status: 'not_found' } : { status: 'changed' };
}
