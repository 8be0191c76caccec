import { v7 as timeOrderedUuid } from 'uuid';
import { type Caller, requirePermission, requireTransform } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import type { KeyRing, TenantKeys } from '../crypto/key-ring.js';
import { ValidationError } from '../errors/errors.js';
import type { ExpressionBudget } from '../expressions/budget.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import type { Transform } from '../permissions/permissions.js';
import type { StoredToken } from '../storage/store.js';
import { refuseNul } from '../validation/no-nul.js';
import { parseExpiresAt } from './expiry.js';
import { checkIdExpression, checkIdText } from './token-id.js';
import { RESERVED_ID_RULE, isReservedForIntents } from '../token-intents/token-intent-id.js';
import { type UpdateTokenInput, parseCreateTokenInput } from './token-input.js';
import { parseMetadata } from './token-input-checks.js';
import { mergePatch } from './merge-patch.js';
import { requireDisclosureChange, requireExpiryChange } from './disclosure.js';
import { getTokenType } from './token-types.js';

/** The cvc of a card lives one hour (docs/tokens.md). */
export const CVC_LIFETIME_MS = 60 * 60 * 1000;
const MAX_ID_LENGTH = 250;
/** Ids travel in URL paths and logs: no whitespace, no path/query/fragment/percent characters. */
const ID_PATTERN = /^[^\s/?#%\\]+$/u;

/** A token ready to store, with its data in clear (for the response) and the keys it was sealed with. */
export interface Prepared {
  token: StoredToken;
  data: unknown;
  transform: Transform;
  keys: TenantKeys;
}

/**
 * What a token is made of before it is stored: a checked create body turned into a row (id,
 * ciphertext, fingerprint, blind indexes, cvc lifetime), computed with the tenant's keys and the
 * call's expression budget. Writes nothing.
 */
export class TokenPreparer {
  #keys: KeyRing;
  #engine: ExpressionEngine;
  #clock: Clock;

  constructor(deps: { keys: KeyRing; expressions: ExpressionEngine; clock: Clock }) {
    this.#keys = deps.keys;
    this.#engine = deps.expressions;
    this.#clock = deps.clock;
  }

  /** Validates a create body and computes everything to store; writes nothing. */
  async prepare(caller: Caller, body: unknown, budget: ExpressionBudget): Promise<Prepared> {
    requirePermission(caller, 'token:create');
    refuseNul(body, '', ['data']);
    const input = parseCreateTokenInput(body);
    const definition = getTokenType(input.type);
    const data = definition.validate(input.data);
    const containers = input.containers ?? [definition.defaultContainer];
    const transform = requireTransform(caller, 'token:create', containers, true);
    const now = this.#clock.now();
    const metadata = input.metadata ?? {};
    const mask = input.mask === undefined ? definition.defaultMask : input.mask;
    // The type's own mask is known to compile; only a given one needs checking.
    if (input.mask !== undefined && mask !== null) this.#engine.compileTree(mask, 'mask', budget);
    const fingerprintExpression = input.fingerprint_expression ?? definition.defaultFingerprintExpression;
    const searchIndexes = input.search_indexes ?? [];
    const id = this.#tokenId(input.id, data, definition.hasCvc, budget);
    const keys = await this.#keys.keysFor(caller.tenantId);
    const token: StoredToken = {
      tenantId: caller.tenantId,
      id,
      type: definition.name,
      ...this.derived(keys, caller.tenantId, id, data, metadata, fingerprintExpression, searchIndexes, budget),
      fingerprintExpression,
      mask,
      containers,
      metadata,
      searchIndexes,
      deduplicate: input.deduplicate_token === true,
      createdBy: caller.applicationId,
      createdAt: now,
      modifiedBy: null,
      modifiedAt: null,
      expiresAt: input.expires_at === undefined ? null : parseExpiresAt(input.expires_at, now),
      cvcPurgeAt: definition.hasCvc && hasCvc(data) ? now + CVC_LIFETIME_MS : null,
    };
    return { token, data, transform, keys };
  }

  /**
   * The row an update makes of `current` (whose data, decrypted, is `currentData`): the patch
   * merged, checked against the caller's grants (containers, disclosure settings, expiry), and
   * sealed with the newest key. Writes nothing.
   */
  prepareUpdate(
    caller: Caller,
    current: StoredToken,
    currentData: unknown,
    patch: UpdateTokenInput,
    { keys, budget, now }: { keys: TenantKeys; budget: ExpressionBudget; now: number },
  ): { next: StoredToken; data: unknown; merged: unknown; transform: Transform } {
    const definition = getTokenType(current.type);
    const merged = patch.data === undefined ? currentData : mergePatch(currentData, patch.data);
    const data = patch.data === undefined ? currentData : definition.validate(merged);
    const containers = patch.containers === undefined ? current.containers : patch.containers === null ? [definition.defaultContainer] : patch.containers;
    const transform = requireTransform(caller, 'token:update', containers, true);
    const metadata = patch.metadata === undefined ? current.metadata : parseMetadata(mergePatch(current.metadata, patch.metadata) ?? {});
    const mask = patch.mask === undefined ? current.mask : mergePatch(current.mask, patch.mask);
    const fingerprintExpression =
      patch.fingerprint_expression === undefined ? current.fingerprintExpression : (patch.fingerprint_expression ?? definition.defaultFingerprintExpression);
    const searchIndexes = patch.search_indexes === undefined ? current.searchIndexes : (patch.search_indexes ?? []);
    const named = (['mask', 'fingerprint_expression', 'search_indexes', 'containers'] as const).filter((field) => patch[field] !== undefined);
    requireDisclosureChange(caller, current, { mask, fingerprintExpression, searchIndexes, containers }, named);
    const expiresAt = patch.expires_at === undefined ? current.expiresAt : patch.expires_at === null ? null : parseExpiresAt(patch.expires_at, now);
    requireExpiryChange(caller, current, expiresAt);
    if (mask !== null) this.#engine.compileTree(mask, 'mask', budget);
    const next: StoredToken = {
      ...current,
      ...this.derived(keys, current.tenantId, current.id, data, metadata, fingerprintExpression ?? '', searchIndexes, budget),
      fingerprintExpression,
      mask,
      containers,
      metadata,
      searchIndexes,
      deduplicate: patch.deduplicate_token === undefined ? current.deduplicate : patch.deduplicate_token === true,
      modifiedBy: caller.applicationId,
      modifiedAt: now,
      expiresAt,
      cvcPurgeAt: !definition.hasCvc || !hasCvc(data) ? null : patchSetsCvc(patch.data) ? now + CVC_LIFETIME_MS : current.cvcPurgeAt,
    };
    return { next, data, merged, transform };
  }

  /** Ciphertext, fingerprint and blind indexes: everything computed from the data with tenant keys. */
  derived(
    keys: TenantKeys,
    tenantId: string,
    id: string,
    data: unknown,
    metadata: Record<string, string>,
    fingerprintExpression: string,
    searchIndexes: readonly string[],
    budget: ExpressionBudget,
  ): Pick<StoredToken, 'ciphertext' | 'keyVersion' | 'fingerprint' | 'searchHashes'> {
    const printed = fingerprintExpression === '' ? '' : this.#engine.render(fingerprintExpression, { data, metadata }, 'fingerprint_expression', budget);
    const hashes = new Set<string>();
    searchIndexes.forEach((expression, i) => {
      const value = this.#engine.render(expression, { data }, `search_indexes[${i}]`, budget);
      if (value !== '') hashes.add(this.#keys.blindIndex(keys, value));
    });
    const { ciphertext, keyVersion } = this.#keys.encrypt(keys, tenantId, id, Buffer.from(JSON.stringify(data), 'utf8'));
    return {
      ciphertext,
      keyVersion,
      fingerprint: printed === '' ? null : this.#keys.fingerprint(keys, printed),
      searchHashes: [...hashes],
    };
  }

  /**
   * The id given (a value or an expression over the data), or a UUID. It must not carry the data
   * (the id guard, token-id.ts: data only through alias filters, no data value in the id after
   * normalization, never the cvc).
   * Assigned ids are version 7 UUIDs (RFC 9562: a millisecond timestamp, then 74 random bits) so that
   * new ids land at the end of the (tenant, id) index instead of on a random page: with random v4 ids
   * each creation dirtied one more index page, a large share of a creation's cost
   * (docs/performance.md, "Figures behind the code's choices"). The timestamp is the host's, not the injected clock's: it
   * orders ids, it is not domain time.
   */
  #tokenId(given: string | undefined, data: unknown, cardWithCvc: boolean, budget: ExpressionBudget): string {
    if (given === undefined) return timeOrderedUuid();
    const expression = given.includes('{{') || given.includes('{%');
    if (expression) checkIdExpression(given);
    const id = expression ? this.#engine.render(given, { data }, 'id', budget) : given;
    if (id.length === 0 || id.length > MAX_ID_LENGTH) throw ValidationError.field('id', `must be 1 to ${MAX_ID_LENGTH} characters`);
    if (!ID_PATTERN.test(id)) throw ValidationError.field('id', 'must not contain whitespace or any of / ? # % \\');
    // The rendered id too: `intent_{{ data.number | alias_card }}` would take the intents' namespace.
    if (isReservedForIntents(id)) throw ValidationError.field('id', RESERVED_ID_RULE);
    const cvc = cardWithCvc && hasCvc(data) ? String((data as Record<string, unknown>).cvc) : null;
    // A literal id, or an expression's own text: what an expression renders from the data is an
    // alias, random but for its kept ends, and checking it would refuse ids by chance.
    checkIdText(given, data, cvc);
    return id;
  }
}

export function hasCvc(data: unknown): boolean {
  return typeof data === 'object' && data !== null && (data as Record<string, unknown>).cvc !== undefined;
}

export function patchSetsCvc(patch: unknown): boolean {
  return typeof patch === 'object' && patch !== null && typeof (patch as Record<string, unknown>).cvc === 'string';
}
