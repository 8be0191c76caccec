import { formulaColumns, formulaExpectation, reactorColumns } from '../record-changes.js';
import { aliasedColumns, joinedRow } from '../joined-row.js';
import { LIKE_ESCAPE, likeSubstringPattern } from '../like-pattern.js';
import type {
  FormulaChanges,
  FormulaExpectation,
  FormulaRecord,
  Inserted,
  PageRequest,
  PageResult,
  ReactorAndFormula,
  ReactorChanges,
  ReactorFilter,
  ReactorRecord,
  RecordUpdateResult,
} from '../store.js';
import { runPage, type ListQuery } from './paging.js';
import { FORMULA_COLUMNS, REACTOR_COLUMNS, toFormula, toReactor, type FormulaRow, type ReactorRow } from './record-rows.js';
import type { BetterSqlite3Database, SqliteTransaction } from './sqlite-options.js';
import { type WriteTransaction, updateRecord } from './sqlite-record-update.js';
import type { StatementCache } from './statement-cache.js';

const SQL = {
  insertFormula:
    'INSERT INTO formulas (tenant_id, id, name, description, code, configuration, request_parameters, created_by, created_at, modified_by, modified_at) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING',
  getFormula: `SELECT ${FORMULA_COLUMNS} FROM formulas t WHERE t.tenant_id = ? AND t.id = ?`,
  formulaExists: 'SELECT 1 AS found FROM formulas WHERE tenant_id = ? AND id = ?',
  formulaInUse: 'SELECT 1 AS found FROM reactors WHERE tenant_id = ? AND formula_id = ? LIMIT 1',
  deleteFormula: 'DELETE FROM formulas WHERE tenant_id = ? AND id = ?',

  insertReactor:
    'INSERT INTO reactors (tenant_id, id, name, name_lower, formula_id, code, configuration, application_id, bound_grants, created_by, created_at, modified_by, modified_at) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, id) DO NOTHING',
  getReactor: `SELECT ${REACTOR_COLUMNS} FROM reactors t WHERE t.tenant_id = ? AND t.id = ?`,
  getReactorAndFormula:
    `SELECT ${REACTOR_COLUMNS}, ${aliasedColumns(FORMULA_COLUMNS, 'f')} FROM reactors t ` +
    'LEFT JOIN formulas f ON f.tenant_id = t.tenant_id AND f.id = t.formula_id WHERE t.tenant_id = ? AND t.id = ?',
  deleteReactor: 'DELETE FROM reactors WHERE tenant_id = ? AND id = ?',
} as const;

const ids = (values: readonly string[]) => JSON.stringify([...new Set(values.map(String))]);

/** Reactor formulas and reactors: a part of the SQLite store's synchronous core (see sqlite-boundary.ts). */
export class SqliteReactors {
  #statements: StatementCache;
  #read: <R>(fn: () => R) => R;
  #write: WriteTransaction;
  #deleteFormulaTx: SqliteTransaction<(tenantId: string, id: string) => 'deleted' | 'not_found' | 'in_use'>;

  constructor(db: BetterSqlite3Database, statements: StatementCache, read: <R>(fn: () => R) => R, write: WriteTransaction) {
    this.#statements = statements;
    this.#read = read;
    this.#write = write;
    this.#deleteFormulaTx = db.transaction(this.#deleteFormula);
  }

  createFormula(formula: FormulaRecord): Inserted {
    const result = this.#statements
      .get(SQL.insertFormula)
      .run(
        formula.tenantId,
        formula.id,
        formula.name,
        formula.description ?? null,
        formula.code,
        JSON.stringify(formula.configuration ?? []),
        JSON.stringify(formula.requestParameters ?? []),
        formula.createdBy ?? null,
        formula.createdAt,
        formula.modifiedBy ?? null,
        formula.modifiedAt ?? null,
      );
    return result.changes === 0 ? 'exists' : 'created';
  }

  getFormula(tenantId: string, id: string): FormulaRecord | null {
    const row = this.#statements.get(SQL.getFormula).get(tenantId, id) as FormulaRow | undefined;
    return row === undefined ? null : toFormula(row);
  }

  listFormulas(tenantId: string, page: PageRequest): PageResult<FormulaRecord> {
    const query: ListQuery = { columns: FORMULA_COLUMNS, from: 'FROM formulas t WHERE t.tenant_id = ?', params: [tenantId] };
    return runPage(this.#statements, this.#read, query, page, toFormula);
  }

  /** Writes only the columns of the fields given, under the precondition when there is one. One transaction. */
  updateFormula(tenantId: string, id: string, changes: FormulaChanges, expected?: FormulaExpectation): RecordUpdateResult<FormulaRecord> {
    let condition = expected === undefined ? '' : ' AND code = ? AND configuration = ? AND request_parameters = ?';
    const params: unknown[] = expected === undefined ? [] : formulaExpectation(expected);
    if (expected?.boundApplications !== undefined) {
      condition +=
        ' AND NOT EXISTS (SELECT 1 FROM reactors r WHERE r.tenant_id = formulas.tenant_id AND r.formula_id = formulas.id ' +
        'AND r.application_id IS NOT NULL AND r.application_id NOT IN (SELECT value FROM json_each(?)))';
      params.push(JSON.stringify(expected.boundApplications));
    }
    return this.#write.immediate(() => updateRecord(this.#statements, 'formulas', tenantId, id, formulaColumns(changes), condition, params, () => this.getFormula(tenantId, id)));
  }

  deleteFormula(tenantId: string, id: string): 'deleted' | 'not_found' | 'in_use' {
    return this.#deleteFormulaTx.immediate(tenantId, id);
  }

  createReactor(reactor: ReactorRecord): Inserted {
    const result = this.#statements
      .get(SQL.insertReactor)
      .run(
        reactor.tenantId,
        reactor.id,
        reactor.name,
        reactor.name.toLowerCase(),
        reactor.formulaId ?? '',
        reactor.code ?? null,
        JSON.stringify(reactor.configuration ?? {}),
        reactor.applicationId ?? null,
        reactor.boundGrants == null ? null : JSON.stringify(reactor.boundGrants),
        reactor.createdBy ?? null,
        reactor.createdAt,
        reactor.modifiedBy ?? null,
        reactor.modifiedAt ?? null,
      );
    return result.changes === 0 ? 'exists' : 'created';
  }

  getReactor(tenantId: string, id: string): ReactorRecord | null {
    const row = this.#statements.get(SQL.getReactor).get(tenantId, id) as ReactorRow | undefined;
    return row === undefined ? null : toReactor(row);
  }

  getReactorAndFormula(tenantId: string, id: string): ReactorAndFormula | null {
    const row = this.#statements.get(SQL.getReactorAndFormula).get(tenantId, id) as (ReactorRow & Record<string, unknown>) | undefined;
    if (row === undefined) return null;
    const formula = joinedRow<FormulaRow>(row, 'f');
    return { reactor: toReactor(row), formula: formula === null ? null : toFormula(formula) };
  }

  /** In creation order; `name` is a case-insensitive substring in which `*` matches any run. */
  listReactors(tenantId: string, filter: ReactorFilter, page: PageRequest): PageResult<ReactorRecord> {
    const where = ['t.tenant_id = ?'];
    const params: unknown[] = [tenantId];
    if (filter?.ids !== undefined) {
      where.push('t.id IN (SELECT value FROM json_each(?))');
      params.push(ids(filter.ids));
    }
    if (filter?.name !== undefined && filter.name !== null) {
      where.push(`t.name_lower LIKE ? ESCAPE '${LIKE_ESCAPE}'`);
      params.push(likeSubstringPattern(filter.name));
    }
    return runPage(this.#statements, this.#read, { columns: REACTOR_COLUMNS, from: `FROM reactors t WHERE ${where.join(' AND ')}`, params }, page, toReactor);
  }

  /** Writes only the columns of the fields given, under the precondition when there is one. One transaction. */
  updateReactor(tenantId: string, id: string, changes: ReactorChanges, expected?: { applicationId: string | null }): RecordUpdateResult<ReactorRecord> {
    const condition = expected === undefined ? '' : ' AND application_id IS ?';
    const params = expected === undefined ? [] : [expected.applicationId];
    return this.#write.immediate(() => updateRecord(this.#statements, 'reactors', tenantId, id, reactorColumns(changes), condition, params, () => this.getReactor(tenantId, id)));
  }

  deleteReactor(tenantId: string, id: string): boolean {
    return this.#statements.get(SQL.deleteReactor).run(tenantId, id).changes === 1;
  }

  #deleteFormula = (tenantId: string, id: string): 'deleted' | 'not_found' | 'in_use' => {
    if (this.#statements.get(SQL.formulaExists).get(tenantId, id) === undefined) return 'not_found';
    if (this.#statements.get(SQL.formulaInUse).get(tenantId, id) !== undefined) return 'in_use';
    this.#statements.get(SQL.deleteFormula).run(tenantId, id);
    return 'deleted';
  };
}
