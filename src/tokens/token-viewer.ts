import { type Caller, transformFor } from '../auth/caller.js';
import type { KeyRing, TenantKeys } from '../crypto/key-ring.js';
import { InternalError } from '../errors/errors.js';
import type { ExpressionBudget } from '../expressions/budget.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import type { Transform } from '../permissions/permissions.js';
import type { StoredToken } from '../storage/store.js';
import { responseTransform, showsFingerprint } from './disclosure.js';
import { type TokenView, tokenView, transformData, withoutExpiredCvc } from './token-view.js';

/**
 * What a caller is shown of stored tokens: their data decrypted with keys the service loaded, then
 * transformed (reveal, mask, redact) by the caller's grants within the call's expression budget.
 */
export class TokenViewer {
  #keys: KeyRing;
  #engine: ExpressionEngine;

  constructor(deps: { keys: KeyRing; expressions: ExpressionEngine }) {
    this.#keys = deps.keys;
    this.#engine = deps.expressions;
  }

  /** A create or update response: data under min(operation, token:read) transform, fingerprint only for revealers. */
  written(caller: Caller, operation: Transform, token: StoredToken, data: unknown, budget: ExpressionBudget): TokenView {
    const shown = responseTransform(caller, operation, token.containers);
    return tokenView(token, this.transform(shown, token, data, budget), true, showsFingerprint(caller, token.containers));
  }

  transform(transform: Transform, token: StoredToken, data: unknown, budget: ExpressionBudget): unknown {
    return transformData(this.#engine, transform, token, data, budget);
  }

  /**
   * Decrypts with keys the caller loaded with keysCovering, so the token's key version is among
   * them; one that is not is a row whose key is missing from the store.
   */
  data(keys: TenantKeys, token: StoredToken, now: number): unknown {
    const plaintext = this.#keys.decryptWithKeys(keys, token.tenantId, token.id, token.ciphertext);
    if (plaintext === null) throw new InternalError(`Token '${token.id}' is encrypted with data key version ${token.keyVersion}, which the store does not hold`);
    return this.#decode(token, plaintext, now);
  }

  #decode(token: StoredToken, plaintext: Buffer, now: number): unknown {
    return withoutExpiredCvc(token, JSON.parse(plaintext.toString('utf8')), now);
  }

  /**
   * The answer when deduplication found an existing token, one the caller may reveal (the store
   * matched only those: dedupeScopes): as the operation's transform shows it.
   */
  async duplicate(caller: Caller, keys: TenantKeys, existing: StoredToken, now: number, operation: Transform, budget: ExpressionBudget): Promise<TokenView> {
    const read = transformFor(caller, 'token:read', existing.containers);
    if (read !== 'reveal') throw new InternalError(`Deduplication matched token '${existing.id}', which the caller may not reveal`);
    const covering = keys.data.has(existing.keyVersion) ? keys : await this.#keys.keysCovering(caller.tenantId, [existing.keyVersion]);
    const data = this.transform(responseTransform(caller, operation, existing.containers), existing, this.data(covering, existing, now), budget);
    const view = tokenView(existing, data, false, true);
    view._extras = { deduplicated: true };
    return view;
  }
}
