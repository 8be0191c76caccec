import type { AuditLog } from './audit.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import { ValidationError } from '../errors/errors.js';
import { type PageQuery, type Paginated, parsePage, toPaginated } from '../common/pagination.js';
import type { AuditFilter, Store } from '../storage/store.js';
import { formatIso } from '../common/time.js';

export interface AuditEntryView {
  seq: number;
  tenant_id: string;
  actor: string;
  operation: string;
  resource_id: string | null;
  outcome: 'success' | 'failure';
  detail: string | null;
  at: string;
}

export interface ListLogsQuery extends PageQuery {
  resource_id?: string;
  actor?: string;
  operation?: string;
}

/** Reads the audit trail (log:read), oldest first. Entries hold ids, operations and error codes, never data. */
export class AuditService {
  #store: Store;
  #audit: AuditLog;

  constructor(deps: { store: Store; audit: AuditLog }) {
    this.#store = deps.store;
    this.#audit = deps.audit;
  }

  async list(caller: Caller, query: ListLogsQuery = {}): Promise<Paginated<AuditEntryView>> {
    requirePermission(caller, 'log:read');
    const page = parsePage(query);
    const filter: AuditFilter = {};
    for (const [from, to] of [
      ['resource_id', 'resourceId'],
      ['actor', 'actor'],
      ['operation', 'operation'],
    ] as const) {
      const value = query[from];
      if (value === undefined) continue;
      if (typeof value !== 'string' || value.length === 0 || value.length > 250) throw ValidationError.field(from, 'must be a string of 1 to 250 characters');
      filter[to] = value;
    }
    // Queued read entries become visible to the reader who asks for them.
    await this.#audit.flush();
    const result = await this.#store.listAudit(caller.tenantId, filter, page);
    return toPaginated(page, result, (entry) => ({
      seq: entry.seq,
      tenant_id: entry.tenantId,
      actor: entry.actor,
      operation: entry.operation,
      resource_id: entry.resourceId,
      outcome: entry.outcome,
      detail: entry.detail,
      at: formatIso(entry.at),
    }));
  }
}
