import { addError } from '../validation/field-errors.js';
import { refuseNul } from '../validation/no-nul.js';
import type { AuditLog } from '../audit/audit.js';
import { normalizeContainer } from '../auth/containers.js';
import { type Caller, grantScopes, requirePermission, requireTokenTransform, transformFor } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import type { KeyRing } from '../crypto/key-ring.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors/errors.js';
import type { ExpressionBudget } from '../expressions/budget.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import { type PageQuery, type Paginated, parsePage, toPaginated } from '../common/pagination.js';
import { cursorBinding, cursorKey, openCursor, sealCursor } from '../common/sealed-cursor.js';
import type { Permission, Transform } from '../permissions/permissions.js';
import type { CreateTokenResult, Store, StoredToken, TokenFilter } from '../storage/store.js';
import type { EventSink } from '../webhooks/webhook-events-emitter.js';
import { audienceOf, dedupeScopes, requireDedupeOverOwnData, showsFingerprint } from './disclosure.js';
import { type ConvertTokenIntentInput, isConversion } from '../token-intents/token-intent-input.js';
import { checkSearchInput, type SearchTokensQuery } from './search-input.js';
import { parseSearchQuery } from './search-query.js';
import { checkMetadataFilter, searchFilter, toArray } from './token-filters.js';
import { MAX_TOKENIZE, collectTokenBodies, replaceTokenBodies } from './tokenize-bodies.js';
import { type CreateTokenInput, type UpdateTokenInput, parseUpdateTokenInput } from './token-input.js';
import { type Prepared, TokenPreparer } from './token-preparer.js';
import { TokenViewer } from './token-viewer.js';
import { type TokenView, identityView, tokenView, withoutExpiredCvc } from './token-view.js';

export interface ListTokensQuery extends PageQuery {
  id?: string | string[];
  type?: string | string[];
  /** Filters by metadata: `{ key: value }`, case-insensitive exact, ANDed. */
  metadata?: Record<string, string>;
  /** Tokens in this container (normalized like a container path). */
  container?: string;
  /** Tokens of this fingerprint: an equality oracle on the data, so only tokens the caller may reveal match. */
  fingerprint?: string;
}

export type { SearchTokensQuery } from './search-input.js';

export interface TokenServiceDeps {
  store: Store;
  keys: KeyRing;
  expressions: ExpressionEngine;
  clock: Clock;
  audit: AuditLog;
  /** Where token.created/updated/deleted events go once the change committed (webhooks). */
  events?: EventSink;
  /** Converts a token intent when a create body names `token_intent_id` (TokenIntentService). */
  intents?: { convert(caller: Caller, body: ConvertTokenIntentInput): Promise<TokenView> };
}

/**
 * Token operations (docs/tokens.md). Every method takes the Caller and checks its permission and access
 * rules; responses are the snake_case objects of the HTTP API (docs/tokens.md), with data transformed (reveal, mask,
 * redact) by the caller's rules.
 *
 * @example
 * const token = await vault.tokens.create(caller, { type: 'card', data: { number: '4242424242424242' } });
 * const masked = await vault.tokens.get(caller, token.id); // data.number: 'XXXXXXXXXXXX4242'
 */
export class TokenService {
  #store: Store;
  #keys: KeyRing;
  #engine: ExpressionEngine;
  #clock: Clock;
  #audit: AuditLog;
  #events: EventSink | undefined;
  #intents: TokenServiceDeps['intents'];
  #preparer: TokenPreparer;
  #viewer: TokenViewer;

  constructor(deps: TokenServiceDeps) {
    this.#preparer = new TokenPreparer(deps);
    this.#viewer = new TokenViewer(deps);
    this.#events = deps.events;
    this.#intents = deps.intents;
    this.#store = deps.store;
    this.#keys = deps.keys;
    this.#engine = deps.expressions;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
  }

  /**
   * Creates a token (token:create). With `deduplicate_token`, returns instead the existing token
   * of the same type and fingerprint, if there is one the caller may reveal (disclosure.ts,
   * dedupeScopes); any other token is never matched, so the answer tells nothing about it. A body
   * with `token_intent_id` instead of type and data converts that token intent (TokenIntentService.convert).
   */
  async create(caller: Caller, body: CreateTokenInput | ConvertTokenIntentInput): Promise<TokenView> {
    // A body naming token_intent_id converts that intent (docs/token-intents.md).
    if (this.#intents && isConversion(body)) return this.#intents.convert(caller, body);
    return this.#audit.guard(caller, 'token:create', null, async () => {
      // One expression budget for the whole call (id, fingerprint, search indexes, response mask).
      const budget = this.#engine.budget();
      return this.#commit(caller, await this.#preparer.prepare(caller, body, budget), budget);
    });
  }

  /**
   * Bulk tokenization (token:create): every `{ type, data, ... }` object anywhere in the body (a
   * create body) becomes a token, and the response mirrors the body's shape with each replaced by
   * the created token. All items are validated before any is stored, so a bad item changes nothing.
   * At most 100 tokens per call. Deduplication as in create. `options.shownTo`: the answer goes to
   * that caller too (a reactor's invoker), so it shows no more than both may read, and a duplicate
   * must be one both may reveal (disclosure.ts, audienceOf).
   */
  async tokenize(caller: Caller, body: unknown, options: { shownTo?: Caller } = {}): Promise<unknown> {
    return this.#audit.guard(caller, 'token:tokenize', null, async () => {
      requirePermission(caller, 'token:create');
      const items: { path: string; body: unknown }[] = [];
      collectTokenBodies(body, '', items, 0);
      if (items.length > MAX_TOKENIZE) throw ValidationError.field('body', `holds ${items.length} tokens; at most ${MAX_TOKENIZE} may be created per call`);
      const prepared: Prepared[] = [];
      const errors: Record<string, string[]> = {};
      // One expression budget for every item: the call, not each token, is what blocks the server.
      const budget = this.#engine.budget();
      for (const item of items) {
        try {
          prepared.push(await this.#preparer.prepare(caller, item.body, budget));
        } catch (error) {
          if (!(error instanceof ValidationError)) throw error;
          // addError: a top-level item's `__proto__` error assigned by `=` would set the prototype and vanish.
          for (const [field, messages] of Object.entries(error.errors)) for (const m of messages) addError(errors, item.path ? `${item.path}.${field}` : field, m);
          if (budget.exhausted) break;
        }
      }
      if (Object.keys(errors).length > 0) throw new ValidationError(errors);
      if (prepared.length === 0) return replaceTokenBodies(body, new Map());
      const audience = audienceOf(caller, options.shownTo);
      // One store operation: an id taken (by a stored token or an earlier item) stores nothing.
      const stored = await this.#store.createTokens(
        prepared.map((p) => p.token),
        prepared[0]!.token.createdAt,
        prepared.some((p) => p.token.deduplicate) ? dedupeScopes(audience) : undefined,
      );
      if (stored.status === 'id_conflict') throw new ConflictError(`A token with id '${prepared[stored.index]!.token.id}' already exists; nothing was stored`);
      const views = new Map<unknown, TokenView>();
      for (let i = 0; i < items.length; i++) views.set(items[i]!.body, await this.#created(caller, prepared[i]!, stored.results[i]!, budget, audience));
      return replaceTokenBodies(body, views);
    });
  }

  /**
   * Stores a prepared token. Its audit entry goes through the batched queue rather than the insert's
   * transaction: the token row itself durably records who created it and when, and keeping the
   * audit page out of the commit is measurable on the create path (docs/performance.md, "Figures
   * behind the code's choices"). A process killed within the flush window can lose the entry,
   * not the record of the creation.
   */
  async #commit(caller: Caller, prepared: Prepared, budget: ExpressionBudget): Promise<TokenView> {
    const within = prepared.token.deduplicate ? dedupeScopes(caller) : undefined;
    const result = await this.#store.createToken(prepared.token, prepared.token.createdAt, within);
    if (result.status === 'id_conflict') throw new ConflictError(`A token with id '${prepared.token.id}' already exists`);
    return this.#created(caller, prepared, result, budget);
  }

  /** The audit entry and the response (as `audience` may see it) of a stored creation, or of the duplicate found instead. */
  async #created(caller: Caller, { token, data, transform, keys }: Prepared, result: CreateTokenResult, budget: ExpressionBudget, audience = caller): Promise<TokenView> {
    const id = result.status === 'duplicate' ? result.existing.id : token.id;
    const detail = result.status === 'duplicate' ? 'deduplicated' : null;
    this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token:create', resourceId: id, outcome: 'success', detail });
    if (result.status === 'created') await this.#emit(caller, 'token.created', token);
    if (result.status === 'duplicate') return this.#viewer.duplicate(audience, keys, result.existing, this.#clock.now(), transform, budget);
    return this.#viewer.written(audience, transform, token, data, budget);
  }

  /** Gets one token (token:read); its data follows the caller's transform. Expired and other tenants' tokens are not found. */
  async get(caller: Caller, id: string): Promise<TokenView> {
    // The hottest read: written without the guard closure (each avoided promise is measurable at this rate).
    try {
      requirePermission(caller, 'token:read');
      refuseNul(id, 'id');
      const now = this.#clock.now();
      const token = await this.#store.getToken(caller.tenantId, String(id), now);
      if (!token) throw new NotFoundError('Token', String(id));
      const transform = requireTokenTransform(caller, 'token:read', token.containers, String(id));
      // Loads a key version another instance made since (rotation) before the row is decrypted.
      const data = this.#viewer.data(await this.#keys.keysCovering(caller.tenantId, [token.keyVersion]), token, now);
      const view = tokenView(token, this.#viewer.transform(transform, token, data, this.#engine.budget()), false, transform === 'reveal');
      this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token:read', resourceId: token.id, outcome: 'success' });
      return view;
    } catch (error) {
      this.#audit.recordFailure(caller, 'token:read', id, error);
      throw error;
    }
  }

  /**
   * Lists tokens (token:read) filtered by ids, types and metadata (at most 100 filters), paginated.
   * Only tokens on which the caller's rules grant token:read match: the grants go into the store
   * query, so pages are full and `total_items` counts only what the caller may read.
   */
  async list(caller: Caller, query: ListTokensQuery = {}): Promise<Paginated<TokenView>> {
    return this.#audit.guard(caller, 'token:list', null, async () => {
      requirePermission(caller, 'token:read');
      refuseNul({ id: query.id, type: query.type, metadata: query.metadata, container: query.container, fingerprint: query.fingerprint }, '');
      const filter: TokenFilter = {};
      const ids = toArray(query.id, 'id');
      const types = toArray(query.type, 'type');
      if (ids) filter.ids = ids;
      if (types) filter.types = types;
      if (query.metadata) filter.metadata = checkMetadataFilter(query.metadata);
      const [container] = toArray(query.container, 'container') ?? [];
      const [fingerprint] = toArray(query.fingerprint, 'fingerprint') ?? [];
      if (container !== undefined) filter.containers = [normalizeContainer(container, 'container')];
      if (fingerprint !== undefined) filter.fingerprints = [fingerprint];
      filter.within = grantScopes(caller, 'token:read', fingerprint !== undefined);
      const result = await this.#page(caller, 'token:read', filter, query);
      this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token:list', resourceId: null, outcome: 'success' });
      return result;
    });
  }

  /**
   * Searches tokens (token:search) with `field:value` terms joined by AND (an unknown body attribute is
   * a ValidationError naming it). Only tokens on which the
   * caller's rules grant token:search match (in the store query: full pages, exact counts). `data:`
   * and `fingerprint:` terms are equality oracles on the data, so a query holding one matches only
   * tokens on which the caller's token:search transform is reveal: a masked searcher cannot confirm
   * guesses of a value it cannot see.
   */
  async search(caller: Caller, query: SearchTokensQuery): Promise<Paginated<TokenView>> {
    return this.#audit.guard(caller, 'token:search', null, async () => {
      requirePermission(caller, 'token:search');
      const input = checkSearchInput(query);
      refuseNul(input.query, 'query');
      const terms = parseSearchQuery(input.query);
      const keys = await this.#keys.keysFor(caller.tenantId);
      const { filter, oracle } = searchFilter(terms, (value) => this.#keys.blindIndex(keys, value));
      filter.within = grantScopes(caller, 'token:search', oracle);
      const result = await this.#page(caller, 'token:search', filter, input);
      this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token:search', resourceId: null, outcome: 'success' });
      return result;
    });
  }

  /**
   * Updates a token (token:update): data, mask and metadata by merge patch (RFC 7386), the other
   * fields replaced. When the result would duplicate another token the caller may reveal
   * (dedupeScopes) and deduplication is on, nothing is written and the existing token is returned.
   * Disclosure rules (disclosure.ts): changing mask, fingerprint_expression, search_indexes or
   * containers needs reveal on the token; setting or advancing expires_at needs token:delete; a
   * deduplicating update over data the caller cannot read needs reveal; the response shows at most
   * what the caller's token:read transform shows.
   */
  async update(caller: Caller, id: string, body: UpdateTokenInput): Promise<TokenView> {
    return this.#audit.guard(caller, 'token:update', id, async () => {
      requirePermission(caller, 'token:update');
      refuseNul(id, 'id');
      refuseNul(body, '', ['data']);
      const patch = parseUpdateTokenInput(body);
      const now = this.#clock.now();
      const current = await this.#store.getToken(caller.tenantId, String(id), now);
      if (!current) throw new NotFoundError('Token', String(id));
      requireTokenTransform(caller, 'token:update', current.containers, String(id));
      // Keys holding the current row's version, and the newest version for the rewrite.
      const keys = await this.#keys.keysCovering(caller.tenantId, [current.keyVersion]);
      const budget = this.#engine.budget();
      const { next, data, merged, transform } = this.#preparer.prepareUpdate(caller, current, this.#viewer.data(keys, current, now), patch, { keys, budget, now });
      requireDedupeOverOwnData(caller, current, next, patch, merged);
      const audit = this.#audit.entry({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token:update', resourceId: current.id, outcome: 'success' });
      const result = await this.#store.updateToken(next, audit, now, next.deduplicate ? dedupeScopes(caller) : undefined);
      this.#audit.committed(audit);
      if (result.status === 'not_found') throw new NotFoundError('Token', String(id));
      if (result.status === 'duplicate') return this.#viewer.duplicate(caller, keys, result.existing, now, transform, budget);
      await this.#emit(caller, 'token.updated', next);
      if (transformFor(caller, 'token:read', next.containers) === null) return identityView(next);
      return this.#viewer.written(caller, transform, next, withoutExpiredCvc(next, data, now), budget);
    });
  }

  /** Deletes a token (token:delete): its data is removed permanently; a reference stays for audit. */
  async delete(caller: Caller, id: string): Promise<void> {
    await this.#audit.guard(caller, 'token:delete', id, async () => {
      requirePermission(caller, 'token:delete');
      refuseNul(id, 'id');
      const now = this.#clock.now();
      const token = await this.#store.getToken(caller.tenantId, String(id), now);
      if (!token) throw new NotFoundError('Token', String(id));
      requireTokenTransform(caller, 'token:delete', token.containers, String(id));
      const audit = this.#audit.entry({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token:delete', resourceId: token.id, outcome: 'success' });
      const deleted = await this.#store.deleteToken(caller.tenantId, token.id, caller.applicationId, audit, now);
      this.#audit.committed(audit);
      if (!deleted) throw new NotFoundError('Token', String(id));
      await this.#emit(caller, 'token.deleted', token);
    });
  }

  /** Emits a token event after its change committed (webhooks; without a subscriber, one map lookup). */
  async #emit(caller: Caller, type: 'token.created' | 'token.updated' | 'token.deleted', token: StoredToken): Promise<void> {
    await this.#events?.emit(caller.tenantId, type, { token_id: token.id, token_type: token.type, actor: caller.applicationId });
  }

  /**
   * Detokenizes for a reactor (token:use): the data of each token under the caller's token:use
   * transform. Unknown ids throw NotFoundError naming the id (ids of token intents never come
   * here: src/token-intents/token-sources.ts); a container without a token:use grant throws
   * AuthorizationError. Nothing is returned unless every token is allowed.
   */
  async use(caller: Caller, ids: readonly string[]): Promise<Map<string, unknown>> {
    return this.#audit.guard(caller, 'token:use', null, async () => {
      requirePermission(caller, 'token:use');
      refuseNul(ids, 'ids');
      const now = this.#clock.now();
      const tokens: { token: StoredToken; transform: Transform }[] = [];
      for (const id of ids) {
        const token = await this.#store.getToken(caller.tenantId, id, now);
        if (!token) throw new NotFoundError('Token', id);
        tokens.push({ token, transform: requireTokenTransform(caller, 'token:use', token.containers, id) });
      }
      const out = new Map<string, unknown>();
      const budget = this.#engine.budget();
      const keys = await this.#keys.keysCovering(
        caller.tenantId,
        tokens.map(({ token }) => token.keyVersion),
      );
      for (const { token, transform } of tokens) {
        out.set(token.id, this.#viewer.transform(transform, token, this.#viewer.data(keys, token, now), budget) ?? null);
        this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token:use', resourceId: token.id, outcome: 'success' });
      }
      return out;
    });
  }

  /** A page of tokens; `filter.within` already holds the caller's grants, the transform is still decided per token. */
  async #page(caller: Caller, permission: Permission, filter: TokenFilter, query: PageQuery): Promise<Paginated<TokenView>> {
    const page = parsePage(query ?? {});
    const now = this.#clock.now();
    // Callers see sealed cursors bound to this query (sealed-cursor.ts): a store cursor is a position shared by all tenants.
    const { within: _grants, ...asked } = filter;
    const key = cursorKey((await this.#keys.keysFor(caller.tenantId)).auditKey);
    // Metadata matches case-insensitively in any key order, so the same query spelled otherwise keeps its cursor.
    const metadata = Object.entries(asked.metadata ?? {})
      .map(([k, v]) => [k.toLowerCase(), v.toLowerCase()])
      .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0));
    const binding = cursorBinding([caller.applicationId, permission, { ...asked, metadata }]);
    const storePage = page.mode === 'cursor' && page.start !== undefined ? { ...page, start: openCursor(key, binding, page.start) } : page;
    const stored = await this.#store.listTokens(caller.tenantId, filter, storePage, now);
    const result = stored.mode === 'cursor' ? { ...stored, next: sealCursor(key, binding, stored.next) } : stored;
    // Loads a key version another instance made since (rotation) before any row is decrypted.
    const keys = await this.#keys.keysCovering(
      caller.tenantId,
      result.items.map((token) => token.keyVersion),
    );
    // One expression budget for the page's masks: a page that uses it up is a 400 (ask for a smaller page).
    const budget = this.#engine.budget();
    return toPaginated(page, result, (token) => {
      const transform = transformFor(caller, permission, token.containers);
      if (transform === null) return null;
      const data = this.#viewer.transform(transform, token, this.#viewer.data(keys, token, now), budget);
      return tokenView(token, data, false, showsFingerprint(caller, token.containers));
    });
  }
}
