import { aliasedColumns, joinedRow } from '../joined-row.js';
import { LIKE_ESCAPE, likeSubstringPattern } from '../like-pattern.js';
import { reactorColumns } from '../record-changes.js';
import type { ReactorRecord, SessionGrants } from '../store.js';
import type { Dialect } from '../sql/dialect.js';
import { listStatements, listStatementsByName, pageSteps, type ListStatements } from '../sql/list-page.js';
import { operation, query, type AreaOperations, type Row } from '../sql/operation.js';
import { byDialect, inList, raw, sql, table } from '../sql/sql.js';
import { FORMULA_COLUMNS, FORMULA_OPERATIONS, FORMULAS_SQL, toFormula } from './formulas.js';
import { APPLICATION_IS, bare, locksRows, updateStatement, updateSteps } from '../sql/record-update.js';

const REACTOR_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.formula_id, t.code, t.configuration, t.application_id, t.bound_grants, t.created_by, t.created_at, t.modified_by, t.modified_at';
const COLUMNS = raw(REACTOR_COLUMNS);
const RETURNING = bare(REACTOR_COLUMNS);
const REACTORS = table('reactors');

const toReactor = (d: Dialect, row: Row): ReactorRecord => ({
  id: row['id'] as string,
  tenantId: row['tenant_id'] as string,
  name: row['name'] as string,
  // SQLite's column is NOT NULL and holds '' for a reactor with inline code (see SQL.insert).
  formulaId: row['formula_id'] === '' ? null : (row['formula_id'] as string | null),
  code: row['code'] as string | null,
  configuration: d.json<Record<string, unknown>>(row['configuration']),
  applicationId: row['application_id'] as string | null,
  boundGrants: row['bound_grants'] == null ? null : d.json<SessionGrants>(row['bound_grants']),
  createdBy: row['created_by'] as string | null,
  createdAt: row['created_at'] as number,
  modifiedBy: row['modified_by'] as string | null,
  modifiedAt: row['modified_at'] as number | null,
});

const FROM_TENANT = sql`FROM ${REACTORS} t WHERE t.tenant_id = ${1}`;
/** listReactors by filter: the ids (a list argument) and the name pattern (pattern, escape character) after the tenant. */
const LISTS = {
  list: listStatements(COLUMNS, FROM_TENANT, 1),
  listIds: listStatements(COLUMNS, sql`${FROM_TENANT} AND t.id ${inList(2, 'text')}`, 2),
  // The escape character is bound: a backslash literal would depend on PostgreSQL's standard_conforming_strings.
  listName: listStatements(COLUMNS, sql`${FROM_TENANT} AND t.name_lower LIKE ${2} ESCAPE ${3}`, 3),
  listIdsName: listStatements(COLUMNS, sql`${FROM_TENANT} AND t.id ${inList(2, 'text')} AND t.name_lower LIKE ${3} ESCAPE ${4}`, 4),
} satisfies Record<string, ListStatements>;

export const REACTORS_SQL = {
  ...Object.fromEntries(Object.entries(FORMULAS_SQL).map(([name, statement]) => [`formula.${name}`, statement])),
  insert: sql`INSERT INTO ${REACTORS} (tenant_id, id, name, name_lower, formula_id, code, configuration, application_id, bound_grants, created_by, created_at, modified_by, modified_at) VALUES (${1}, ${2}, ${3}, ${4}, ${byDialect(
    { sqlite: sql`coalesce(${5}, '')`, postgres: sql`${5}` },
  )}, ${6}, ${7}, ${8}, ${9}, ${10}, ${11}, ${12}, ${13}) ON CONFLICT (tenant_id, id) DO NOTHING`,
  get: sql`SELECT ${COLUMNS} FROM ${REACTORS} t WHERE t.tenant_id = ${1} AND t.id = ${2}`,
  /** tenant, reactor id: the reactor's columns, then its formula's as f_<column> (null for none). */
  getWithFormula: sql`SELECT ${COLUMNS}, ${raw(aliasedColumns(FORMULA_COLUMNS, 'f'))} FROM ${REACTORS} t LEFT JOIN ${table('formulas')} f ON f.tenant_id = t.tenant_id AND f.id = t.formula_id WHERE t.tenant_id = ${1} AND t.id = ${2}`,
  /** tenant, reactor id: the formula of the reactor (none for inline code), share-locked as FORMULAS_SQL.share does; the reactor's row is not locked. */
  shareFormula: sql`SELECT 1 FROM ${table('formulas')} f JOIN ${REACTORS} r ON r.tenant_id = f.tenant_id AND r.formula_id = f.id WHERE r.tenant_id = ${1} AND r.id = ${2}${byDialect({ sqlite: '', postgres: ' FOR KEY SHARE OF f' })}`,
  delete: sql`DELETE FROM ${REACTORS} WHERE tenant_id = ${1} AND id = ${2}`,
  ...listStatementsByName(LISTS),
  /** The widest shape of updateReactor, so its text is compiled with the others. */
  updateEvery: updateStatement(
    'reactors',
    RETURNING,
    reactorColumns({ name: '', code: '', configuration: {}, applicationId: null, boundGrants: null, modifiedBy: null, modifiedAt: 0 }),
    [APPLICATION_IS],
  ),
};

const SQL = REACTORS_SQL;

/** Reactor formulas and reactors (store-parts.ts, area `reactors`). */
export const REACTORS_AREA: AreaOperations<'reactors'> = {
  ...FORMULA_OPERATIONS,

  /** On PostgreSQL a reactor of a formula share-locks it until commit (see deleteFormula); one with inline code locks none. */
  createReactor: operation(
    (d, reactor) => (locksRows(d) && reactor.formulaId !== null ? 'write' : 'statement'),
    function* (d, r) {
      if (locksRows(d) && r.formulaId !== null) yield query(FORMULAS_SQL.share, r.tenantId, r.formulaId);
      const { changes } = yield query(
        SQL.insert,
        r.tenantId,
        r.id,
        r.name,
        r.name.toLowerCase(),
        r.formulaId,
        r.code,
        JSON.stringify(r.configuration ?? {}),
        r.applicationId ?? null,
        r.boundGrants == null ? null : JSON.stringify(r.boundGrants),
        r.createdBy ?? null,
        r.createdAt,
        r.modifiedBy ?? null,
        r.modifiedAt ?? null,
      );
      return changes === 0 ? 'exists' : 'created';
    },
  ),

  getReactor: operation('statement', function* (d, tenantId, id) {
    const row = (yield query(SQL.get, tenantId, id)).rows[0];
    return row === undefined ? null : toReactor(d, row);
  }),

  getReactorAndFormula: operation('statement', function* (d, tenantId, id) {
    const row = (yield query(SQL.getWithFormula, tenantId, id)).rows[0];
    if (row === undefined) return null;
    const formula = joinedRow<Row>(row, 'f');
    return { reactor: toReactor(d, row), formula: formula === null ? null : toFormula(d, formula) };
  }),

  /** In creation order; `name` is a case-insensitive substring in which `*` matches any run. */
  listReactors: operation('statement', function* (d, tenantId, filter, page) {
    const ids = filter?.ids === undefined ? undefined : [...new Set(filter.ids.map(String))];
    // Lower-cased in JS like name_lower, so the match does not depend on the database's locale.
    const name = filter?.name == null ? undefined : likeSubstringPattern(filter.name);
    const map = (row: Row) => toReactor(d, row);
    if (ids === undefined) return yield* name === undefined ? pageSteps(LISTS.list, [tenantId], page, map) : pageSteps(LISTS.listName, [tenantId, name, LIKE_ESCAPE], page, map);
    return yield* name === undefined ? pageSteps(LISTS.listIds, [tenantId, ids], page, map) : pageSteps(LISTS.listIdsName, [tenantId, ids, name, LIKE_ESCAPE], page, map);
  }),

  /**
   * Writes only the columns of the fields given, under the precondition when there is one: one
   * statement. The formula does not change, so deleteFormula sees this reactor either way. A
   * rebinding on PostgreSQL holds its formula's share lock until it commits, as createReactor does,
   * so a formula update guarded on its bound applications (updateFormula) sees it or runs after it.
   */
  updateReactor: operation(
    (d, _tenantId, _id, changes) => (locksRows(d) && changes.applicationId !== undefined ? 'write' : 'statement'),
    function* (d, tenantId, id, changes, expected) {
      if (locksRows(d) && changes.applicationId !== undefined) yield query(SQL.shareFormula, tenantId, id);
      const conditions = expected === undefined ? [] : [[APPLICATION_IS, expected.applicationId] as const];
      return yield* updateSteps('reactors', RETURNING, tenantId, id, reactorColumns(changes), conditions, (row) => toReactor(d, row));
    },
  ),

  deleteReactor: operation('statement', function* (_d, tenantId, id) {
    return (yield query(SQL.delete, tenantId, id)).changes === 1;
  }),
};
