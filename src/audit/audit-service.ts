import type { AuditLog } from './audit.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import { ValidationError } from '../errors/errors.js';
import { MAX_PAGE_SIZE, type PageQuery, type Paginated, parsePage, toPaginated } from '../common/pagination.js';
import type { AuditFilter, OffsetPage, PageRequest, PageResult, Store, StoredAuditEntry } from '../storage/store.js';
import { type BtLogFields, LOG_ENTITY_TYPES, btLogFields, entityTypeOf } from './log-entry-view.js';
import { formatIso } from '../common/time.js';
import { cursorBinding, cursorKey, openCursor, sealCursor } from '../common/sealed-cursor.js';
import { logEntryIds } from './log-entry-id.js';

/** Our fields, and Basis Theory's beside them (log-entry-view.ts). */
export interface AuditEntryView extends BtLogFields {
  /** Opaque, the same for the same entry (log-entry-id.ts). */
  id: string;
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
  /** Basis Theory's filters: `entity_id` is `resource_id`; `entity_type` an operation prefix (log-entry-view.ts). */
  entity_id?: string;
  entity_type?: string;
}

/**
 * The store filters by exact operation only, so an entity type is matched here. A cursor page reads
 * at most this many store pages to fill itself (a sparser one ends early, with its cursor); an
 * offset page (the Basis Theory SDK iterates logs by page number) reads the trail from its start,
 * at most ENTITY_TYPE_SCAN_PAGES * MAX_PAGE_SIZE entries, to count its totals.
 */
const ENTITY_TYPE_SCAN_PAGES = 20;
const OFFSET_SCAN_LIMIT = 100 * MAX_PAGE_SIZE;

/** Reads the audit trail (log:read), oldest first. Entries hold ids, operations and error codes, never data. */
export class AuditService {
  #store: Store;
  #audit: AuditLog;
  #tenantSecret: (tenantId: string) => Promise<Buffer>;

  /** `tenantSecret`: a secret of the tenant that never rotates, for its sealed cursors and entry ids. */
  constructor(deps: { store: Store; audit: AuditLog; tenantSecret: (tenantId: string) => Promise<Buffer> }) {
    this.#store = deps.store;
    this.#audit = deps.audit;
    this.#tenantSecret = deps.tenantSecret;
  }

  /** The entity types entries may name (log:read). */
  async entityTypes(caller: Caller): Promise<{ display_name: string; value: string }[]> {
    requirePermission(caller, 'log:read');
    return LOG_ENTITY_TYPES.map((type) => ({ ...type }));
  }

  async list(caller: Caller, query: ListLogsQuery = {}): Promise<Paginated<AuditEntryView>> {
    requirePermission(caller, 'log:read');
    const page = parsePage(query);
    const filter: AuditFilter = {};
    for (const [from, to] of [
      ['resource_id', 'resourceId'],
      ['entity_id', 'resourceId'],
      ['actor', 'actor'],
      ['operation', 'operation'],
    ] as const) {
      const value = query[from];
      if (value === undefined) continue;
      if (typeof value !== 'string' || value.length === 0 || value.length > 250) throw ValidationError.field(from, 'must be a string of 1 to 250 characters');
      if (filter[to] !== undefined && filter[to] !== value) throw ValidationError.field(from, 'differs from resource_id (entity_id is its other name)');
      filter[to] = value;
    }
    const entityType = query.entity_type;
    if (entityType !== undefined && (typeof entityType !== 'string' || entityType.length === 0 || entityType.length > 250)) {
      throw ValidationError.field('entity_type', 'must be a string of 1 to 250 characters');
    }
    // Neither a cursor nor an id shows the entry's seq (log-entry-id.ts); cursors are bound to this query.
    const secret = await this.#tenantSecret(caller.tenantId);
    const key = cursorKey(secret);
    const binding = cursorBinding([caller.applicationId, 'log:read', filter, entityType ?? null]);
    const storePage = page.mode === 'cursor' && page.start !== undefined ? { ...page, start: openCursor(key, binding, page.start) } : page;
    // Queued read entries become visible to the reader who asks for them.
    await this.#audit.flush();
    const stored =
      entityType === undefined ? await this.#store.listAudit(caller.tenantId, filter, storePage) : await this.#scanEntityType(caller.tenantId, filter, storePage, entityType);
    const result = stored.mode === 'cursor' ? { ...stored, next: sealCursor(key, binding, stored.next) } : stored;
    const idOf = logEntryIds(secret);
    return toPaginated(page, result, (entry) => ({
      ...btLogFields(entry),
      id: idOf(entry.seq),
      tenant_id: entry.tenantId,
      actor: entry.actor,
      operation: entry.operation,
      resource_id: entry.resourceId,
      outcome: entry.outcome,
      detail: entry.detail,
      at: formatIso(entry.at),
    }));
  }

  /**
   * A cursor page of the entries of one entity type: store pages are read in order, each asking for
   * what the page still lacks, so no entry is skipped between two pages whatever the store's cursor
   * holds; a page may come back short (with a cursor) after ENTITY_TYPE_SCAN_PAGES reads.
   */
  async #scanEntityType(tenantId: string, filter: AuditFilter, page: PageRequest, entityType: string): Promise<PageResult<StoredAuditEntry>> {
    if (page.mode === 'offset') return this.#offsetOfEntityType(tenantId, filter, page, entityType);
    const items: StoredAuditEntry[] = [];
    let start = page.mode === 'cursor' ? page.start : undefined;
    for (let read = 0; read < ENTITY_TYPE_SCAN_PAGES && items.length < page.size; read++) {
      const request: PageRequest = start === undefined ? { mode: 'cursor', size: page.size - items.length } : { mode: 'cursor', size: page.size - items.length, start };
      const result = await this.#store.listAudit(tenantId, filter, request);
      if (result.mode !== 'cursor') break;
      for (const entry of result.items) if (entityTypeOf(entry.operation) === entityType) items.push(entry);
      if (result.next === null) return { mode: 'cursor', items, next: null };
      start = result.next;
    }
    return { mode: 'cursor', items, next: start ?? null };
  }

  /** An offset page of one entity type's entries, with their total: the trail is read from its start. */
  async #offsetOfEntityType(tenantId: string, filter: AuditFilter, page: OffsetPage, entityType: string): Promise<PageResult<StoredAuditEntry>> {
    const from = (page.page - 1) * page.size;
    const items: StoredAuditEntry[] = [];
    let matched = 0;
    let read = 0;
    let start: string | undefined;
    for (;;) {
      const result = await this.#store.listAudit(tenantId, filter, start === undefined ? { mode: 'cursor', size: MAX_PAGE_SIZE } : { mode: 'cursor', size: MAX_PAGE_SIZE, start });
      if (result.mode !== 'cursor') break;
      for (const entry of result.items) {
        if (entityTypeOf(entry.operation) !== entityType) continue;
        if (matched >= from && items.length < page.size) items.push(entry);
        matched++;
      }
      read += result.items.length;
      if (result.next === null) break;
      if (read >= OFFSET_SCAN_LIMIT) {
        throw ValidationError.field(
          'entity_type',
          `with page reads at most ${OFFSET_SCAN_LIMIT} entries: page by cursor (leave out page, follow pagination.next), or filter by entity_id`,
        );
      }
      start = result.next;
    }
    return { mode: 'offset', items, totalItems: matched };
  }
}
