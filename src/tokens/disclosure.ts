import { type Caller, grantScopes, transformFor } from '../auth/caller.js';
import { AuthorizationError } from '../errors/errors.js';
import type { Transform } from '../permissions/permissions.js';
import { sharedCaller } from '../auth/session-grants.js';
import type { ContainerScope, StoredToken } from '../storage/store.js';
import { sameJson } from '../common/same-json.js';
import { mergePatch } from './merge-patch.js';
import type { UpdateTokenInput } from './token-input.js';
import { stricter } from './token-view.js';

/*
 * Disclosure rules (ARCHITECTURE.md, Disclosure): what protects a token's data beyond each permission. No caller
 * learns more about a token's data than its token:read transform on the token reveals, whatever
 * the operation that answers.
 */

/**
 * The transform a create or update response applies to the data: the stricter of the operation's
 * own transform and the caller's token:read transform on the (resulting) token; `redact` (no data)
 * without a token:read grant there.
 */
export function responseTransform(caller: Caller, operation: Transform, containers: readonly string[]): Transform {
  const read = transformFor(caller, 'token:read', containers);
  return read === null ? 'redact' : stricter(operation, read);
}

/** Whether a response may carry the token's fingerprint: only to callers whose token:read transform on it is reveal. */
export function showsFingerprint(caller: Caller, containers: readonly string[]): boolean {
  return transformFor(caller, 'token:read', containers) === 'reveal';
}

/**
 * Who an answer about tokens is shown to: the caller, or, when it goes to someone else too (a
 * reactor's tokenize block answers its invoker), the grants both hold (intersectGrants), so the
 * answer shows neither more than it may see.
 */
export function audienceOf(caller: Caller, shownTo?: Caller): Caller {
  return shownTo === undefined ? caller : sharedCaller(caller, shownTo);
}

/**
 * Where a deduplicating create or update may find its duplicate: among tokens the answer's
 * audience (audienceOf) may reveal through token:read. A duplicate answer names the existing token
 * and shows its data, so matching any other token would tell the caller whether data it guessed
 * is in the vault, and hand it the id of a token it cannot read (docs/authority.md). Outside these
 * scopes a token is not a duplicate: a new one is created, so the answer is the same whether or not
 * such a token exists.
 */
export function dedupeScopes(audience: Caller): ContainerScope[] {
  return grantScopes(audience, 'token:read', true);
}

/** Why each attribute that decides what a token discloses needs the reveal transform to change. */
const DISCLOSING = {
  mask: 'a mask is rendered over the data for every masked reader, so writing one is reading the data',
  fingerprint_expression: 'a fingerprint over an expression of the data is an equality oracle on what the expression selects',
  search_indexes: 'a search index over the data is an equality oracle for data: searches',
  containers: 'containers decide who may read the token and with which transform',
} as const satisfies Record<string, string>;

/** The attributes an update would change, as they stand before and after. */
export interface DisclosingAttributes {
  mask: unknown;
  fingerprintExpression: string | null;
  searchIndexes: readonly string[];
  containers: readonly string[];
}

/**
 * Throws AuthorizationError when an update changes an attribute that decides what the token
 * discloses (mask, fingerprint_expression, search_indexes, containers) and the caller's token:read
 * transform on the token (its current containers) is not reveal: whoever may write a mask could
 * otherwise write `{{ data.number }}`. Writing an attribute's current value again changes nothing
 * and is allowed to a caller that may read the token (its answers show those settings anyway); a
 * caller without any token:read grant on it may not name them at all (`named`), or a refusal of
 * every value but the current one would confirm guesses of settings it cannot see.
 */
export function requireDisclosureChange(caller: Caller, current: StoredToken, next: DisclosingAttributes, named: readonly (keyof typeof DISCLOSING)[] = []): void {
  const read = transformFor(caller, 'token:read', current.containers);
  if (read === 'reveal') return;
  const changed: (keyof typeof DISCLOSING)[] = read === null ? [...named] : [];
  if (!sameJson(next.mask, current.mask)) changed.push('mask');
  if (next.fingerprintExpression !== current.fingerprintExpression) changed.push('fingerprint_expression');
  if (!sameJson(next.searchIndexes, current.searchIndexes)) changed.push('search_indexes');
  if (!sameJson([...next.containers].sort(), [...current.containers].sort())) changed.push('containers');
  if (changed.length === 0) return;
  const attribute = changed[0]!;
  throw new AuthorizationError(`Changing '${attribute}' needs the reveal transform of 'token:read' on the token: ${DISCLOSING[attribute]}`);
}

/**
 * Throws AuthorizationError when an update sets an expiry on a token that had none, or moves it
 * earlier, and the caller holds no token:delete grant on the token: an expiry two seconds ahead is
 * a deletion. Extending or removing the expiry stays with token:update.
 */
export function requireExpiryChange(caller: Caller, current: StoredToken, expiresAt: number | null): void {
  const shortens = expiresAt !== null && (current.expiresAt === null || expiresAt < current.expiresAt);
  if (!shortens || transformFor(caller, 'token:delete', current.containers) !== null) return;
  throw new AuthorizationError("Setting 'expires_at' on a token without one, or moving it earlier, shortens the token's life: it needs 'token:delete' on the token");
}

/**
 * Throws AuthorizationError when an update of a deduplicating token by a caller whose token:read
 * transform on it is not reveal could make the deduplication check run over data the caller did
 * not write: a patch of part of the data, a metadata change where the fingerprint expression reads
 * metadata, or turning deduplication on, each unless the patch replaces the whole data (the caller
 * then knows all of it, as on create). Whether a duplicate answers would tell something about data
 * it cannot see (patch a guessed number into a card, watch the answer). Decided on the request and
 * the token's settings only, never on whether the fingerprint changed: that comparison is itself
 * an equality oracle (a right guess leaves the fingerprint as it was).
 */
export function requireDedupeOverOwnData(caller: Caller, current: StoredToken, next: StoredToken, patch: UpdateTokenInput, data: unknown): void {
  if (!next.deduplicate || transformFor(caller, 'token:read', current.containers) === 'reveal') return;
  const wholeData = patch.data !== undefined && sameJson(mergePatch(null, patch.data), data);
  if (wholeData) return;
  const partialData = patch.data !== undefined;
  const metadataInFingerprint = patch.metadata !== undefined && (next.fingerprintExpression ?? '').includes('metadata');
  if (!partialData && !metadataInFingerprint && current.deduplicate) return;
  throw new AuthorizationError(
    "An update of a deduplicating token that keeps data the caller cannot read needs the reveal transform of 'token:read' on the token " +
      '(the duplicate answer would disclose that data); send the whole data, or turn deduplicate_token off',
  );
}
