import type { AuditLog } from '../audit/audit.js';
import { type Caller, requirePermission, requireTokenTransform, transformFor } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import type { KeyRing } from '../crypto/key-ring.js';
import { AuthorizationError, ConflictError, NotFoundError, ValidationError } from '../errors/errors.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import type { StoredTokenIntent, Store } from '../storage/store.js';
import { dedupeScopes, showsFingerprint } from '../tokens/disclosure.js';
import { CVC_LIFETIME_MS, TokenPreparer, hasCvc } from '../tokens/token-preparer.js';
import { isPlainObject } from '../tokens/token-input-checks.js';
import { getTokenType } from '../tokens/token-types.js';
import { type TokenView, transformData } from '../tokens/token-view.js';
import { TokenViewer } from '../tokens/token-viewer.js';
import { refuseNul } from '../validation/no-nul.js';
import type { EventSink } from '../webhooks/webhook-events-emitter.js';
import { type ConvertTokenIntentInput, type CreateTokenIntentInput, parseConversion, parseCreateTokenIntentInput } from './token-intent-input.js';
import { isTokenIntentId, newTokenIntentId } from './token-intent-id.js';
import { type TokenIntentView, tokenIntentView } from './token-intent-view.js';

/** How long an intent lives unless the vault is configured otherwise: one day (Basis Theory's). */
export const DEFAULT_TOKEN_INTENT_LIFETIME_MS = 24 * 60 * 60 * 1000;

export interface TokenIntentServiceDeps {
  store: Store;
  keys: KeyRing;
  expressions: ExpressionEngine;
  clock: Clock;
  audit: AuditLog;
  events?: EventSink;
  /** How long an intent lives (ms); default DEFAULT_TOKEN_INTENT_LIFETIME_MS. */
  expiresInMs?: number;
}

/** The record context an intent's data is sealed under (KeyRing.sealRecord): its own AAD domain. */
const sealContext = (id: string) => ['token-intent', id] as const;

/**
 * Token intents (docs/token-intents.md): data of any token type held for a short while, sealed at
 * rest like token data, shown only as a summary (card: bin, last4, brand, expiry), until a token
 * is made of it (`POST /tokens` with `token_intent_id`, which removes it) or it expires. Intents
 * belong to the tenant, not to the application that made one: the permission decides, and the
 * random id is what names one.
 *
 * @example
 * const intent = await vault.tokenIntents.create(publicCaller, { type: 'card', data: { number: '4242424242424242' } });
 * const token = await vault.tokens.create(backend, { token_intent_id: intent.id }); // the intent is gone
 */
export class TokenIntentService {
  #store: Store;
  #keys: KeyRing;
  #engine: ExpressionEngine;
  #clock: Clock;
  #audit: AuditLog;
  #events: EventSink | undefined;
  #preparer: TokenPreparer;
  #viewer: TokenViewer;
  #lifetime: number;

  constructor(deps: TokenIntentServiceDeps) {
    this.#store = deps.store;
    this.#keys = deps.keys;
    this.#engine = deps.expressions;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
    this.#events = deps.events;
    this.#preparer = new TokenPreparer(deps);
    this.#viewer = new TokenViewer(deps);
    this.#lifetime = deps.expiresInMs ?? DEFAULT_TOKEN_INTENT_LIFETIME_MS;
  }

  /**
   * Creates an intent (token-intent:create): the data is validated as a token of its type would be,
   * sealed, and fingerprinted with the type's default fingerprint expression. It expires after the
   * configured lifetime (one hour at most when it holds a cvc). The answer shows the summary, and
   * the fingerprint only to a caller that may reveal tokens of the type's default container.
   */
  async create(caller: Caller, body: CreateTokenIntentInput): Promise<TokenIntentView> {
    return this.#audit.guard(caller, 'token-intent:create', null, async () => {
      requirePermission(caller, 'token-intent:create');
      refuseNul(body, '', ['data']);
      const input = parseCreateTokenIntentInput(body);
      const definition = getTokenType(input.type);
      const data = definition.validate(input.data);
      const now = this.#clock.now();
      const id = newTokenIntentId();
      const keys = await this.#keys.keysFor(caller.tenantId);
      const printed = this.#engine.render(definition.defaultFingerprintExpression, { data, metadata: {} }, 'fingerprint_expression', this.#engine.budget());
      const intent: StoredTokenIntent = {
        tenantId: caller.tenantId,
        id,
        type: definition.name,
        sealed: await this.#keys.sealRecord(caller.tenantId, sealContext(id), Buffer.from(JSON.stringify(data), 'utf8')),
        fingerprint: printed === '' ? null : this.#keys.fingerprint(keys, printed),
        createdBy: caller.applicationId,
        createdAt: now,
        expiresAt: now + (definition.hasCvc && hasCvc(data) ? Math.min(this.#lifetime, CVC_LIFETIME_MS) : this.#lifetime),
      };
      if ((await this.#store.createTokenIntent(intent)) === 'exists') throw new ConflictError(`A token intent with id '${id}' already exists`);
      this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token-intent:create', resourceId: id, outcome: 'success' });
      // The creator wrote this data: the whole summary tells it nothing new (the fingerprint would: above).
      return tokenIntentView(intent, data, { summary: 'reveal', fingerprint: showsFingerprint(caller, [definition.defaultContainer]) });
    });
  }

  /**
   * Gets an intent of the tenant (token-intent:read): never its data. The summary follows the
   * caller's token:read transform on the type's default container, as a token of this data there
   * would be shown: reveal, the whole summary; mask, what the type's default mask shows; anything
   * else, none. Expired intents are not found.
   */
  async get(caller: Caller, id: string): Promise<TokenIntentView> {
    return this.#audit.guard(caller, 'token-intent:read', id, async () => {
      requirePermission(caller, 'token-intent:read');
      const intent = await this.#live(caller, id);
      const data = await this.#data(intent);
      this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token-intent:read', resourceId: intent.id, outcome: 'success' });
      const container = [getTokenType(intent.type).defaultContainer];
      return tokenIntentView(intent, data, { summary: transformFor(caller, 'token:read', container), fingerprint: showsFingerprint(caller, container) });
    });
  }

  /** Deletes an intent of the tenant (token-intent:delete): its sealed data is removed at once. */
  async delete(caller: Caller, id: string): Promise<void> {
    await this.#audit.guard(caller, 'token-intent:delete', id, async () => {
      requirePermission(caller, 'token-intent:delete');
      refuseNul(id, 'id');
      if (!(await this.#store.deleteTokenIntent(caller.tenantId, String(id), this.#clock.now()))) throw new NotFoundError('Token intent', String(id));
      this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token-intent:delete', resourceId: String(id), outcome: 'success' });
    });
  }

  /**
   * Converts an intent into a token (token:create; `vault.tokens.create` and `POST /tokens` with
   * `token_intent_id` come here): the body is a Create Token body without `type` and `data`, which
   * the intent gives, checked like one (containers against the caller's token:create grants).
   * Converting also needs the reveal transform of token:read on the type's default container (the
   * container an intent counts as in for everything else): the caller chooses where the data goes
   * and so what it and others may see of it there, which is only harmless from a caller that may
   * see it all already (docs/token-intents.md).
   * The intent's removal and the token's creation are one store operation: of two conversions of
   * one intent, one creates a token and the other finds no intent (404). A card's cvc keeps the
   * hour it had from the intent's creation. Deduplication matches only tokens the caller may reveal
   * (docs/authority.md), and asking for it needs the reveal transform of token:read on the new
   * token's containers: the caller did not write this data, so a duplicate answer must not tell it
   * more than it may read. The answer is that of a create.
   */
  async convert(caller: Caller, body: ConvertTokenIntentInput): Promise<TokenView> {
    return this.#audit.guard(caller, 'token:create', null, async () => {
      requirePermission(caller, 'token:create');
      if (!isPlainObject(body)) throw ValidationError.field('body', 'must be a JSON object with token_intent_id');
      refuseNul(body, '');
      const { intentId, rest } = parseConversion(body);
      const intent = await this.#live(caller, intentId);
      const home = getTokenType(intent.type).defaultContainer;
      if (transformFor(caller, 'token:read', [home]) !== 'reveal') {
        throw new AuthorizationError(
          `Converting a token intent of type '${intent.type}' needs the reveal transform of 'token:read' on ${home} (the type's default container): the new token's containers decide who sees the data, so only a caller that may already see it there may choose them`,
        );
      }
      const data = await this.#data(intent);
      const budget = this.#engine.budget();
      const prepared = await this.#preparer.prepare(caller, { ...rest, type: intent.type, data }, budget);
      const { token } = prepared;
      if (token.cvcPurgeAt !== null) token.cvcPurgeAt = intent.createdAt + CVC_LIFETIME_MS;
      if (token.deduplicate && transformFor(caller, 'token:read', token.containers) !== 'reveal') {
        throw new AuthorizationError(
          "Converting a token intent with deduplicate_token needs the reveal transform of 'token:read' on the new token's containers: the duplicate answer would disclose data the caller did not write",
        );
      }
      const now = this.#clock.now();
      const result = await this.#store.convertTokenIntent(intent.id, token, now, token.deduplicate ? dedupeScopes(caller) : undefined);
      if (result.status === 'not_found') throw new NotFoundError('Token intent', intent.id);
      if (result.status === 'id_conflict') throw new ConflictError(`A token with id '${token.id}' already exists; the token intent was kept`);
      const tokenId = result.status === 'duplicate' ? result.existing.id : token.id;
      const entry = { tenantId: caller.tenantId, actor: caller.applicationId, outcome: 'success' as const };
      this.#audit.record({ ...entry, operation: 'token-intent:convert', resourceId: intent.id, detail: tokenId });
      this.#audit.record({ ...entry, operation: 'token:create', resourceId: tokenId, detail: result.status === 'duplicate' ? 'deduplicated' : 'token_intent' });
      if (result.status === 'duplicate') return this.#viewer.duplicate(caller, prepared.keys, result.existing, now, prepared.transform, budget);
      await this.#events?.emit(caller.tenantId, 'token.created', { token_id: token.id, token_type: token.type, actor: caller.applicationId });
      return this.#viewer.written(caller, prepared.transform, token, data, budget);
    });
  }

  /**
   * The data of intents for detokenization (token:use; see TokenSources): each under the caller's
   * token:use transform on the container a token of its type gets by default, as a token of that
   * data would be (the type's default mask when masked). An unknown or expired id throws
   * NotFoundError naming it (as a token would); nothing is returned unless every intent is allowed.
   */
  async use(caller: Caller, ids: readonly string[]): Promise<Map<string, unknown>> {
    return this.#audit.guard(caller, 'token-intent:use', null, async () => {
      requirePermission(caller, 'token:use');
      refuseNul(ids, 'ids');
      const now = this.#clock.now();
      const found: { intent: StoredTokenIntent; transform: ReturnType<typeof requireTokenTransform> }[] = [];
      for (const id of ids) {
        const intent = await this.#store.getTokenIntent(caller.tenantId, id, now);
        if (!intent) throw new NotFoundError('Token', id);
        const definition = getTokenType(intent.type);
        found.push({ intent, transform: requireTokenTransform(caller, 'token:use', [definition.defaultContainer], id) });
      }
      const out = new Map<string, unknown>();
      const budget = this.#engine.budget();
      for (const { intent, transform } of found) {
        const data = await this.#data(intent);
        out.set(intent.id, transformData(this.#engine, transform, { mask: getTokenType(intent.type).defaultMask }, data, budget) ?? null);
        this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation: 'token-intent:use', resourceId: intent.id, outcome: 'success' });
      }
      return out;
    });
  }

  async #live(caller: Caller, id: unknown): Promise<StoredTokenIntent> {
    refuseNul(id, 'id');
    // An id not of an intent's form names no intent: not looked up.
    const intent = isTokenIntentId(String(id)) ? await this.#store.getTokenIntent(caller.tenantId, String(id), this.#clock.now()) : null;
    if (!intent) throw new NotFoundError('Token intent', String(id));
    return intent;
  }

  async #data(intent: StoredTokenIntent): Promise<unknown> {
    return JSON.parse((await this.#keys.openRecord(intent.tenantId, sealContext(intent.id), intent.sealed)).toString('utf8'));
  }
}
