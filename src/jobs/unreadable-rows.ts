/** A damaged row is tried again after an hour, then after twice as long each time, at most a day. */
const FIRST_RETRY_MS = 60 * 60 * 1000;
const MAX_RETRY_MS = 24 * 60 * 60 * 1000;
/** Rows remembered at most: past that the oldest is forgotten (and then only tried again sooner). */
const MAX_REMEMBERED = 10_000;

interface SetAside {
  failures: number;
  retryAt: number;
}

/**
 * Stored rows the sweep could not open (a ciphertext that fails to decrypt), set aside so that one
 * is not tried, logged and counted again on every sweep: it is tried again after an hour, then
 * with a doubling wait of at most a day (a key restored from a backup makes it readable again).
 * Kept in memory, per instance: after a restart each damaged row is tried (and reported) once more.
 */
export class UnreadableRows {
  readonly #rows = new Map<string, SetAside>();
  #total = 0;

  /** Rows found unreadable since the vault opened (each try that failed counts once). */
  get total(): number {
    return this.#total;
  }

  /** Whether the row was set aside and its next try has not come yet. */
  isSetAside(tenantId: string, id: string, now: number): boolean {
    const row = this.#rows.get(key(tenantId, id));
    return row !== undefined && now < row.retryAt;
  }

  /** Counts a row that could not be opened and sets it aside; answers when it is tried again. */
  setAside(tenantId: string, id: string, now: number): number {
    const k = key(tenantId, id);
    const failures = (this.#rows.get(k)?.failures ?? 0) + 1;
    const retryAt = now + Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (failures - 1));
    this.#rows.delete(k);
    this.#rows.set(k, { failures, retryAt });
    if (this.#rows.size > MAX_REMEMBERED) this.#rows.delete(this.#rows.keys().next().value!);
    this.#total++;
    return retryAt;
  }

  /** The row was opened after all (or is gone): forget it. */
  clear(tenantId: string, id: string): void {
    this.#rows.delete(key(tenantId, id));
  }
}

const key = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;
