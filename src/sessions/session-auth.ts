import { type Caller } from '../caller.js';
import { AuthenticationError } from '../errors.js';
import { hashesEqual } from '../applications/api-keys.js';
import type { Store } from '../storage/store.js';
import { sessionCaller } from './session-grants.js';

/**
 * Resolves a session key (already hashed) to its Caller, or null when no session has that key (the
 * key may still be an application key). A session that exists but cannot act is a 401 saying why:
 * expired, not yet authorized, or its authorizer deleted. Returns the session's expiry too, which
 * bounds how long the Caller may be remembered.
 */
export async function resolveSessionKey(store: Store, keyHash: string, keyLookup: string, now: number): Promise<{ caller: Caller; expiresAt: number } | null> {
  const candidates = await store.findSessions(keyLookup);
  let match: (typeof candidates)[number] | undefined;
  // Compare against every candidate so the time does not depend on which one matched.
  for (const session of candidates) if (hashesEqual(session.keyHash, keyHash)) match = session;
  if (match === undefined) return null;
  if (match.expiresAt <= now) throw new AuthenticationError('The session has expired; create a new session (POST /sessions) and have it authorized again');
  if (match.authorizedBy === null || match.grants === null) {
    throw new AuthenticationError('The session is not authorized yet: a private application must authorize its nonce (POST /sessions/authorize) first');
  }
  const authorizer = await store.getApplication(match.tenantId, match.authorizedBy);
  if (authorizer === null) throw new AuthenticationError('The application that authorized this session no longer exists');
  return { caller: sessionCaller({ ...match, authorizedBy: match.authorizedBy, grants: match.grants }, authorizer), expiresAt: match.expiresAt };
}
