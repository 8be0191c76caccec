import { checkLimit } from '../limit.js';
import type { Row } from '../sql/operation.js';

/**
 * Where listTokensBelowKeyVersion resumes, per store instance. Re-encryption lists a batch,
 * rewrites it and lists again; to keep a pass linear rather than quadratic (each batch would walk
 * the tokens already re-encrypted) a walk starts where the previous one for the same tenant and
 * version found its first token. Key versions normally only go up, but a write by an instance that
 * has not yet seen a rotation can put a token below the resume point: so a resumed walk that finds
 * nothing walks once more from the start before answering that nothing is left. Holds no rows, only
 * positions; each store runs the statement (TOKENS_SQL.belowKeyVersion) with its own driver.
 */
export class KeyVersionWalk {
  /** (tenant, version) → the lowest seq that may still be below that version. */
  readonly #from = new Map<string, number>();

  /** Where the walk starts; checks the limit first (store-parts' batch rule, limit.ts). */
  start(tenantId: string, version: number, limit: number): number {
    checkLimit(limit);
    return this.#from.get(hintKey(tenantId, version)) ?? 0;
  }

  /** Records what the walk found: its first token is where the next one starts. */
  found(tenantId: string, version: number, rows: readonly Row[]): void {
    const key = hintKey(tenantId, version);
    if (rows.length > 0) this.#from.set(key, rows[0]!['seq'] as number);
    else this.#from.delete(key);
  }
}

const hintKey = (tenantId: string, version: number) => JSON.stringify([tenantId, version]);
