/**
 * Names of the store's statements when it prepares them (PostgresStoreOptions.preparedStatements,
 * on by default). A name is a hash of the statement's text, so one name means one text in every
 * process and store. That matters behind a pooler in transaction mode, which may run a statement
 * by name on a server connection that another instance prepared: there the name is the same
 * statement, or it is missing, an error the executor answers by no longer naming statements
 * (pg-executor.ts); it is never another statement. (The same text means the same statement because
 * every store statement names its schema; the migrations' unqualified ones run under a `SET LOCAL
 * search_path` of their own transaction. A migration that changed the type of a selected column
 * would make instances still running the old code fail on their prepared statements until they
 * restart: migrations add columns, they do not retype them.)
 */
import { createHash } from 'node:crypto';

/**
 * Whose choices a statement's text follows: `fixed`, the store's own statements (their number is
 * the code's); `shaped`, a text built per call from the caller's filters or changed fields (lists,
 * searches, updates of some columns), of which a tenant can make thousands.
 */
export type StatementShape = 'fixed' | 'shaped';

/** Distinct fixed texts one store names; later ones run unnamed, so a connection holds at most this many of a store's statements. */
export const MAX_NAMED_STATEMENTS = 256;
/**
 * Distinct shaped texts one store names, apart from the fixed ones: one tenant's list requests of
 * a few hundred shapes take these (first come, first served), never a name a fixed statement needs
 * (docs/scaling.md, "Prepared statements").
 */
export const MAX_NAMED_SHAPED_STATEMENTS = 64;
/**
 * Longer texts run unnamed. The store's fixed statements are under 1,100 characters; what is longer
 * is a list or search with many filters, whose text the caller's terms shape: naming those would let
 * one tenant fill the names (and every connection's memory) with statements used once.
 */
export const MAX_NAMED_TEXT_LENGTH = 2048;

/**
 * SQLSTATEs of a name the server connection does not know (26000, invalid_sql_statement_name) or
 * knows already (42P05, duplicate_prepared_statement): a pooler gave the statement another server
 * connection than the one that prepared it. Either way the statement did not run.
 */
const LOST_PREPARED_STATEMENT = new Set(['26000', '42P05']);

export function isLostPreparedStatement(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && LOST_PREPARED_STATEMENT.has(code);
}

/** The names of one store's statement texts: the store's statements, and (on their own budget) the shapes of lists and updates. */
export class StatementNames {
  readonly #names = new Map<string, string>();
  readonly #count: Record<StatementShape, number> = { fixed: 0, shaped: 0 };

  of(text: string, shape: StatementShape = 'fixed'): string | undefined {
    let name = this.#names.get(text);
    const limit = shape === 'fixed' ? MAX_NAMED_STATEMENTS : MAX_NAMED_SHAPED_STATEMENTS;
    if (name === undefined && this.#count[shape] < limit && text.length <= MAX_NAMED_TEXT_LENGTH) {
      name = `tokenvault_${createHash('sha256').update(text).digest('hex').slice(0, 40)}`;
      this.#names.set(text, name);
      this.#count[shape]++;
    }
    return name;
  }
}
