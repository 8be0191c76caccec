import { randomUUID } from 'node:crypto';
import { refuseNul } from '../validation/no-nul.js';
import { generateNonce, generateSessionKey, hashApiKey, hashNonce } from '../auth/api-keys.js';
import type { AuditLog } from '../audit/audit.js';
import { type Caller, coversGrants, makeCaller } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import { AuthorizationError, ConflictError, NotFoundError, requireCreated } from '../errors/errors.js';
import type { Store } from '../storage/store.js';
import { formatIso } from '../common/time.js';
import { type AuthorizeSessionRequest, parseAuthorizeSession } from './session-input.js';

/** How long a session lives from its creation (the authorization may shorten it, never extend it). */
export const SESSION_TTL_MS = 3 * 60 * 1000;

/** What `POST /sessions` returns: the key and nonce are shown this once. */
export interface SessionView {
  session_key: string;
  nonce: string;
  expires_at: string;
}

/**
 * Sessions: a public application (in a browser, say) creates a short-lived session key and a
 * nonce; it hands the nonce to its backend, whose private application authorizes the session with
 * some of its own grants; the session key then acts with exactly those grants, bounded by what the
 * authorizer holds at each request, until it expires, or until the keys of either application are
 * regenerated or one of them is deleted (see resolveSessionKey).
 */
export class SessionService {
  #store: Store;
  #clock: Clock;
  #audit: AuditLog;

  constructor(deps: { store: Store; clock: Clock; audit: AuditLog }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
  }

  /** Creates a pending session (public applications only). Its key works once it is authorized. */
  async create(caller: Caller): Promise<SessionView> {
    return this.#audit.guard(caller, 'session:create', null, async () => {
      if (caller.session !== undefined) throw new AuthorizationError('A session key cannot create sessions; use the public application key');
      if (caller.applicationType !== 'public') {
        throw new AuthorizationError(`Sessions are created by public applications; this is a ${caller.applicationType} application`);
      }
      const now = this.#clock.now();
      const key = generateSessionKey();
      const nonce = generateNonce();
      const id = randomUUID();
      const expiresAt = now + SESSION_TTL_MS;
      const created = await this.#store.createSession({
        id,
        tenantId: caller.tenantId,
        applicationId: caller.applicationId,
        creatorGeneration: await this.#generation(caller),
        ...hashApiKey(key),
        nonceHash: hashNonce(nonce),
        createdAt: now,
        expiresAt,
        authorizedBy: null,
        authorizedAt: null,
        grants: null,
        authorizerGeneration: null,
      });
      requireCreated(created, 'Session', id);
      this.#record(caller, 'session:create', id);
      return { session_key: key, nonce, expires_at: formatIso(expiresAt) };
    });
  }

  /**
   * Authorizes the session with that nonce (private applications only) with `permissions` or
   * `rules`, which must not exceed the caller's own grants (403). A nonce works once (409 after).
   */
  async authorize(caller: Caller, body: AuthorizeSessionRequest): Promise<void> {
    await this.#audit.guard(caller, 'session:authorize', null, async () => {
      if (caller.session !== undefined) throw new AuthorizationError('A session key cannot authorize sessions; use the private application key');
      if (caller.applicationType !== 'private') {
        throw new AuthorizationError(`Sessions are authorized by private applications; this is a ${caller.applicationType} application`);
      }
      refuseNul(body, '');
      const now = this.#clock.now();
      const input = parseAuthorizeSession(body, now, SESSION_TTL_MS);
      const asked = makeCaller({ tenantId: caller.tenantId, id: caller.applicationId, type: caller.applicationType, ...input.grants });
      const missing = input.grants.permissions.find((p) => !caller.permissions.has(p));
      if (missing !== undefined) throw new AuthorizationError(`The application lacks the '${missing}' permission, so it cannot give it to a session`);
      if (!coversGrants(caller, asked)) {
        throw new AuthorizationError(
          "The session's grants exceed the application's own: each permission must be granted on every container the session names, with a transform at least as revealing",
        );
      }
      const result = await this.#store.authorizeSession(
        caller.tenantId,
        hashNonce(input.nonce),
        { authorizedBy: caller.applicationId, authorizedAt: now, grants: input.grants, authorizerGeneration: await this.#generation(caller), expiresAt: input.expiresAt },
        now,
      );
      if (result.status === 'not_found') throw new NotFoundError('Session with this nonce (unknown or expired)');
      if (result.status === 'already_authorized') throw new ConflictError('The session of this nonce is already authorized; a nonce is used once');
      this.#record(caller, 'session:authorize', result.session.id);
    });
  }

  /**
   * The generation of the caller's credentials the session records: the one its key resolved at
   * (so a session made with a key revoked meanwhile ends at once), or, for a Caller built in
   * process without one, the application's as stored now.
   */
  async #generation(caller: Caller): Promise<number> {
    if (caller.credentialsGeneration !== undefined) return caller.credentialsGeneration;
    return (await this.#store.getApplication(caller.tenantId, caller.applicationId))?.credentialsGeneration ?? 0;
  }

  #record(caller: Caller, operation: string, resourceId: string): void {
    this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation, resourceId, outcome: 'success' });
  }
}
