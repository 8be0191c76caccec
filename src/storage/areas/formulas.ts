import { formulaColumns, formulaExpectation } from '../record-changes.js';
import type { FormulaRecord, Store } from '../store.js';
import type { Dialect } from '../sql/dialect.js';
import { listStatements, listStatementsByName, pageSteps } from '../sql/list-page.js';
import { operation, query, type Operation, type Row } from '../sql/operation.js';
import { byDialect, inList, lock, raw, sql, table } from '../sql/sql.js';
import { bare, locksRows, updateStatement, updateSteps, type UpdateCondition } from '../sql/record-update.js';

/** The formulas' columns (alias `t`), as getReactorAndFormula joins them too. */
export const FORMULA_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.description, t.code, t.configuration, t.request_parameters, t.created_by, t.created_at, t.modified_by, t.modified_at';
const COLUMNS = raw(FORMULA_COLUMNS);
const RETURNING = bare(FORMULA_COLUMNS);
const FORMULAS = table('formulas');

export const toFormula = (d: Dialect, row: Row): FormulaRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  name: row['name'] as string,
  description: row['description'] as string | null,
  code: row['code'] as string,
  configuration: d.json<FormulaRecord['configuration']>(row['configuration']),
  requestParameters: d.json<FormulaRecord['requestParameters']>(row['request_parameters']),
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  modifiedBy: row['modified_by'] as string | null,
  modifiedAt: row['modified_at'] as number | null,
});

/** A JSON column as the text the stores wrote (PostgreSQL's json keeps the text it was given). */
const jsonText = (column: string) => byDialect({ sqlite: column, postgres: `${column}::text` });

/** The preconditions of updateFormula (FormulaExpectation): the code and JSON texts, then the bound applications. */
const EXPECTED: readonly UpdateCondition[] = [
  { name: 'code', sql: (n) => sql`t.code = ${n}` },
  { name: 'configuration', sql: (n) => sql`${jsonText('t.configuration')} = ${n}` },
  { name: 'request_parameters', sql: (n) => sql`${jsonText('t.request_parameters')} = ${n}` },
];
/** No reactor of the formula is bound to an application outside list argument n. */
const BOUND_WITHIN: UpdateCondition = {
  name: 'bound',
  sql: (n) =>
    sql`NOT EXISTS (SELECT 1 FROM ${table('reactors')} r WHERE r.tenant_id = t.tenant_id AND r.formula_id = t.id AND r.application_id IS NOT NULL AND NOT (r.application_id ${inList(n, 'text')}))`,
};

const LISTS = { list: listStatements(COLUMNS, sql`FROM ${FORMULAS} t WHERE t.tenant_id = ${1}`, 1) };

export const FORMULAS_SQL = {
  insert: sql`INSERT INTO ${FORMULAS} (tenant_id, id, name, description, code, configuration, request_parameters, created_by, created_at, modified_by, modified_at) VALUES (${1}, ${2}, ${3}, ${4}, ${5}, ${6}, ${7}, ${8}, ${9}, ${10}, ${11}) ON CONFLICT (tenant_id, id) DO NOTHING`,
  get: sql`SELECT ${COLUMNS} FROM ${FORMULAS} t WHERE t.tenant_id = ${1} AND t.id = ${2}`,
  /** tenant, formula id: the formula's row, locked until commit on PostgreSQL (see deleteFormula). */
  lock: sql`SELECT 1 FROM ${FORMULAS} WHERE tenant_id = ${1} AND id = ${2}${lock('update')}`,
  /** tenant, formula id: share-locked until commit, so the formula cannot be deleted under a reactor being pointed at it. */
  share: sql`SELECT 1 FROM ${FORMULAS} WHERE tenant_id = ${1} AND id = ${2}${lock('key share')}`,
  inUse: sql`SELECT 1 FROM ${table('reactors')} WHERE tenant_id = ${1} AND formula_id = ${2} LIMIT 1`,
  delete: sql`DELETE FROM ${FORMULAS} WHERE tenant_id = ${1} AND id = ${2}`,
  ...listStatementsByName(LISTS),
  /** The widest shape of updateFormula (every field, every precondition), so its text is compiled with the others. */
  updateEvery: updateStatement(
    'formulas',
    RETURNING,
    formulaColumns({ name: '', description: '', code: '', configuration: [], requestParameters: [], modifiedBy: null, modifiedAt: 0 }),
    [...EXPECTED, BOUND_WITHIN],
  ),
};

const SQL = FORMULAS_SQL;

type FormulaMethod = 'createFormula' | 'getFormula' | 'listFormulas' | 'updateFormula' | 'deleteFormula';

/** The formula half of the `reactors` area (reactors.ts joins it). */
export const FORMULA_OPERATIONS: { [K in FormulaMethod]: Operation<Parameters<Store[K]>, Awaited<ReturnType<Store[K]>>> } = {
  createFormula: operation('statement', function* (_d, f) {
    const { changes } = yield query(
      SQL.insert,
      f.tenantId,
      f.id,
      f.name,
      f.description ?? null,
      f.code,
      JSON.stringify(f.configuration ?? []),
      JSON.stringify(f.requestParameters ?? []),
      f.createdBy ?? null,
      f.createdAt,
      f.modifiedBy ?? null,
      f.modifiedAt ?? null,
    );
    return changes === 0 ? 'exists' : 'created';
  }),

  getFormula: operation('statement', function* (d, tenantId, id) {
    const row = (yield query(SQL.get, tenantId, id)).rows[0];
    return row === undefined ? null : toFormula(d, row);
  }),

  listFormulas: operation('statement', function* (d, tenantId, page) {
    return yield* pageSteps(LISTS.list, [tenantId], page, (row) => toFormula(d, row));
  }),

  /**
   * Writes only the columns of the fields given, under the precondition when there is one: one
   * statement. With `expected.boundApplications` on PostgreSQL the formula's row is locked first
   * (FOR UPDATE, which waits for a reactor write holding its share lock: createReactor,
   * updateReactor), so the look at the reactors sees every reactor bound to it, committed or about
   * to be; SQLite's one writer at a time gives the same.
   */
  updateFormula: operation(
    (d, _tenantId, _id, _changes, expected) => (locksRows(d) && expected?.boundApplications !== undefined ? 'write' : 'statement'),
    function* (d, tenantId, id, changes, expected) {
      const conditions: (readonly [UpdateCondition, unknown])[] = [];
      if (expected !== undefined) formulaExpectation(expected).forEach((value, i) => conditions.push([EXPECTED[i]!, value]));
      if (expected?.boundApplications !== undefined) {
        conditions.push([BOUND_WITHIN, [...expected.boundApplications]]);
        if (locksRows(d)) yield query(SQL.lock, tenantId, id);
      }
      return yield* updateSteps('formulas', RETURNING, tenantId, id, formulaColumns(changes), conditions, (row) => toFormula(d, row));
    },
  ),

  /**
   * Locks the formula's row, then looks for a reactor: a reactor write holds a share lock on its
   * formula until it commits (createReactor, updateReactor), so the look sees every reactor that
   * will reference the formula, committed or about to be.
   */
  deleteFormula: operation('write', function* (_d, tenantId, id) {
    if ((yield query(SQL.lock, tenantId, id)).rows.length === 0) return 'not_found';
    if ((yield query(SQL.inUse, tenantId, id)).rows.length > 0) return 'in_use';
    yield query(SQL.delete, tenantId, id);
    return 'deleted';
  }),
};
