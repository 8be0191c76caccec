import { joinedRow } from '../joined-row.js';
import { LIKE_ESCAPE, likeSubstringPattern } from '../like-pattern.js';
import { formulaColumns, formulaExpectation, reactorColumns } from '../record-changes.js';
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
import { runPage } from './paging.js';
import type { PgExecutor, Queryable } from './pg-executor.js';
import { missedUpdate, tenantList, updateSql } from './pg-record-update.js';
import { FORMULA_COLUMNS, REACTOR_COLUMNS, toFormula, toReactor } from './record-rows.js';
import type { RecordStatements } from './record-sql.js';
import { distinct } from './token-rows.js';

const json = (value: unknown) => JSON.stringify(value);

/** Reactor formulas and reactors: a part of the PostgreSQL store (store-parts.ts). */
export class PostgresReactors {
  readonly #db: PgExecutor;
  readonly #s: string;
  readonly #sql: RecordStatements;

  constructor(db: PgExecutor, s: string, sql: RecordStatements) {
    this.#db = db;
    this.#s = s;
    this.#sql = sql;
  }

  async createFormula(formula: FormulaRecord): Promise<Inserted> {
    const result = await this.#db.query(this.#sql.insertFormula, [
      formula.tenantId,
      formula.id,
      formula.name,
      formula.description ?? null,
      formula.code,
      json(formula.configuration ?? []),
      json(formula.requestParameters ?? []),
      formula.createdBy ?? null,
      formula.createdAt,
      formula.modifiedBy ?? null,
      formula.modifiedAt ?? null,
    ]);
    return result.rowCount === 0 ? 'exists' : 'created';
  }

  async getFormula(tenantId: string, id: string): Promise<FormulaRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getFormula, [tenantId, id]);
    return rows.length === 0 ? null : toFormula(rows[0]!);
  }

  listFormulas(tenantId: string, page: PageRequest): Promise<PageResult<FormulaRecord>> {
    return runPage(this.#db, tenantList(this.#s, FORMULA_COLUMNS, 'formulas', tenantId), page, toFormula);
  }

  /** Writes only the columns of the fields given, under the precondition when there is one: one statement. */
  /**
   * With `expected.boundApplications`, locks the formula's row first (FOR UPDATE, which waits for
   * a reactor write holding its share lock, see createReactor and updateReactor), so the update's
   * look at the reactors sees every reactor bound to it, committed or about to be.
   */
  async updateFormula(tenantId: string, id: string, changes: FormulaChanges, expected?: FormulaExpectation): Promise<RecordUpdateResult<FormulaRecord>> {
    const condition: { sql: (placeholder: string) => string; value: unknown }[] =
      expected === undefined
        ? []
        : formulaExpectation(expected).map((value, i) => ({ sql: (p: string) => `t.${['code', 'configuration::text', 'request_parameters::text'][i]} = ${p}`, value }));
    const bound = expected?.boundApplications;
    if (bound !== undefined) {
      condition.push({
        sql: (p: string) =>
          `NOT EXISTS (SELECT 1 FROM ${this.#s}.reactors r WHERE r.tenant_id = t.tenant_id AND r.formula_id = t.id ` +
          `AND r.application_id IS NOT NULL AND NOT (r.application_id = ANY(${p}::text[])))`,
        value: [...bound],
      });
    }
    const update = (db: Queryable) => db.query(...updateSql(this.#s, 'formulas', FORMULA_COLUMNS, tenantId, id, formulaColumns(changes), condition));
    const { rows } =
      bound === undefined
        ? await update(this.#db)
        : await this.#db.transaction(async (tx) => {
            await tx.query(this.#sql.lockFormula, [tenantId, id]);
            return update(tx);
          });
    if (rows.length === 1) return { status: 'updated', record: toFormula(rows[0]!) };
    return expected === undefined ? { status: 'not_found' } : missedUpdate(this.#db, this.#s, 'formulas', tenantId, id);
  }

  /**
   * Locks the formula's row, then looks for a reactor: a reactor write holds a share lock on its
   * formula until it commits (createReactor, updateReactor), so the look sees every reactor that
   * will reference the formula, committed or about to be.
   */
  deleteFormula(tenantId: string, id: string): Promise<'deleted' | 'not_found' | 'in_use'> {
    return this.#db.transaction(async (tx) => {
      if ((await tx.query(this.#sql.lockFormula, [tenantId, id])).rows.length === 0) return 'not_found';
      if ((await tx.query(this.#sql.formulaInUse, [tenantId, id])).rows.length > 0) return 'in_use';
      await tx.query(this.#sql.deleteFormula, [tenantId, id]);
      return 'deleted';
    });
  }

  async createReactor(reactor: ReactorRecord): Promise<Inserted> {
    const inserted = await this.#db.transaction(async (tx) => {
      // A reactor with inline code references no formula, and locks none.
      if (reactor.formulaId !== null) await tx.query(this.#sql.shareFormula, [reactor.tenantId, reactor.formulaId]);
      const result = await tx.query(this.#sql.insertReactor, [
        reactor.tenantId,
        reactor.id,
        reactor.name,
        reactor.name.toLowerCase(),
        reactor.formulaId,
        reactor.code,
        json(reactor.configuration ?? {}),
        reactor.applicationId ?? null,
        reactor.boundGrants == null ? null : json(reactor.boundGrants),
        reactor.createdBy ?? null,
        reactor.createdAt,
        reactor.modifiedBy ?? null,
        reactor.modifiedAt ?? null,
      ]);
      return result.rowCount === 1;
    });
    return inserted ? 'created' : 'exists';
  }

  async getReactor(tenantId: string, id: string): Promise<ReactorRecord | null> {
    const { rows } = await this.#db.query(this.#sql.getReactor, [tenantId, id]);
    return rows.length === 0 ? null : toReactor(rows[0]!);
  }

  /** In creation order; `name` is a case-insensitive substring in which `*` matches any run. */
  async getReactorAndFormula(tenantId: string, id: string): Promise<ReactorAndFormula | null> {
    const { rows } = await this.#db.query(this.#sql.getReactorAndFormula, [tenantId, id]);
    const row = rows[0];
    if (row === undefined) return null;
    const formula = joinedRow<Record<string, unknown>>(row, 'f');
    return { reactor: toReactor(row), formula: formula === null ? null : toFormula(formula) };
  }

  listReactors(tenantId: string, filter: ReactorFilter, page: PageRequest): Promise<PageResult<ReactorRecord>> {
    const query = tenantList(this.#s, REACTOR_COLUMNS, 'reactors', tenantId);
    if (filter?.ids !== undefined) query.where.push(`t.id = ANY(${query.params.add(distinct(filter.ids), 'text[]')})`);
    if (filter?.name !== undefined && filter.name !== null) {
      // Lower-cased in JS like name_lower, so the match does not depend on the database's locale.
      // The escape character is bound too: a backslash literal would depend on standard_conforming_strings.
      const pattern = query.params.add(likeSubstringPattern(filter.name), 'text');
      query.where.push(`t.name_lower LIKE ${pattern} ESCAPE ${query.params.add(LIKE_ESCAPE, 'text')}`);
    }
    return runPage(this.#db, query, page, toReactor);
  }

  /**
   * Writes only the columns of the fields given, under the precondition when there is one: one
   * statement. The formula does not change, so deleteFormula sees this reactor either way.
   */
  async updateReactor(tenantId: string, id: string, changes: ReactorChanges, expected?: { applicationId: string | null }): Promise<RecordUpdateResult<ReactorRecord>> {
    const condition = expected === undefined ? [] : [{ sql: (p: string) => `t.application_id IS NOT DISTINCT FROM ${p}::text`, value: expected.applicationId }];
    const update = (db: Queryable) => db.query(...updateSql(this.#s, 'reactors', REACTOR_COLUMNS, tenantId, id, reactorColumns(changes), condition));
    // A rebinding holds its formula's share lock until it commits, as createReactor does, so a
    // formula update guarded on its bound applications (updateFormula) sees it or runs after it.
    const { rows } =
      changes.applicationId === undefined
        ? await update(this.#db)
        : await this.#db.transaction(async (tx) => {
            await tx.query(this.#sql.shareReactorFormula, [tenantId, id]);
            return update(tx);
          });
    if (rows.length === 1) return { status: 'updated', record: toReactor(rows[0]!) };
    return expected === undefined ? { status: 'not_found' } : missedUpdate(this.#db, this.#s, 'reactors', tenantId, id);
  }

  async deleteReactor(tenantId: string, id: string): Promise<boolean> {
    return (await this.#db.query(this.#sql.deleteReactor, [tenantId, id])).rowCount === 1;
  }
}
