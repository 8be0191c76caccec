import type { ColumnChange } from '../record-changes.js';
import type { RecordUpdateResult } from '../store.js';
import { query, shapedQuery, type Row, type Steps } from './operation.js';
import { byDialect, sql, table, type Piece, type Slot } from './sql.js';

/** After a JSON parameter: PostgreSQL's json columns take the text cast; SQLite stores the text itself. */
export const AS_JSON = byDialect({ sqlite: '', postgres: '::json' });
/** After a JSON column: its stored text (PostgreSQL's json keeps the text verbatim; SQLite's is text). */
const AS_TEXT = byDialect({ sqlite: '', postgres: '::text' });

/** The tables whose records update by the fields given (record-changes.ts). */
export type UpdatedTable = 'applications' | 'formulas' | 'reactors';

/** A precondition of an update: `column`, as its stored text, equals `value`. */
export interface ColumnExpectation {
  readonly column: string;
  readonly value: unknown;
}

/** A statement built piece by piece for one call: its text, its pieces and the values they bind. */
class Shaped {
  readonly #strings: string[] = [''];
  readonly #slots: Slot[] = [];
  readonly args: unknown[] = [];

  text(text: string): this {
    this.#strings[this.#strings.length - 1] += text;
    return this;
  }

  piece(piece: Piece): this {
    this.#slots.push(piece);
    this.#strings.push('');
    return this;
  }

  value(value: unknown): this {
    this.#slots.push(this.args.push(value));
    this.#strings.push('');
    return this;
  }

  build() {
    return shapedQuery(sql(this.#strings, ...this.#slots), this.args);
  }
}

export const RECORD_UPDATE_SQL = {
  applicationExists: sql`SELECT 1 FROM ${table('applications')} WHERE tenant_id = ${1} AND id = ${2}`,
  formulaExists: sql`SELECT 1 FROM ${table('formulas')} WHERE tenant_id = ${1} AND id = ${2}`,
  reactorExists: sql`SELECT 1 FROM ${table('reactors')} WHERE tenant_id = ${1} AND id = ${2}`,
};

const EXISTS = {
  applications: RECORD_UPDATE_SQL.applicationExists,
  formulas: RECORD_UPDATE_SQL.formulaExists,
  reactors: RECORD_UPDATE_SQL.reactorExists,
} as const satisfies Record<UpdatedTable, unknown>;

/**
 * Writes only `columns` of the tenant's record `id`, under the preconditions `expected`, and
 * answers `updated` with the row as stored (RETURNING `returning`, unqualified: SQLite's RETURNING
 * names no alias), `not_found`, or `changed` when a precondition failed. One statement when it
 * matches; a missed update under a precondition then reads whether the record exists (each
 * statement sees what was committed before it). The caller's fields choose the columns, so the
 * statement is shaped per call (statement caches bound those).
 */
export function* updateRecord<T>(
  name: UpdatedTable,
  returning: Piece,
  tenantId: string,
  id: string,
  columns: readonly ColumnChange[],
  expected: readonly ColumnExpectation[],
  map: (row: Row) => T,
): Steps<RecordUpdateResult<T>> {
  const update = new Shaped().text('UPDATE ').piece(table(name)).text(' AS t SET ');
  columns.forEach((c, i) => {
    update.text(`${i === 0 ? '' : ', '}${c.column} = `).value(c.value);
    if (c.json) update.piece(AS_JSON);
  });
  update.text(' WHERE t.tenant_id = ').value(tenantId).text(' AND t.id = ').value(id);
  for (const e of expected) update.text(` AND t.${e.column}`).piece(AS_TEXT).text(' = ').value(e.value);
  const { rows } = yield update.text(' RETURNING ').piece(returning).build();
  if (rows.length === 1) return { status: 'updated', record: map(rows[0]!) };
  if (expected.length === 0) return { status: 'not_found' };
  const found = yield query(EXISTS[name], tenantId, id);
  return found.rows.length === 0 ? { status: 'not_found' } : { status: 'changed' };
}
