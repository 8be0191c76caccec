import { type Caller } from './caller.js';
import { AuthenticationError } from '../errors/errors.js';
import { hashesEqual } from './api-keys.js';
import type { Store } from '../storage/store.js';
import { sessionCaller } from './session-grants.js';

/**
 * Resolves a session key (already hashed) to its Caller, or null when no session has that key (the
 * key may still be an application key). A session that exists but cannot act is a 401 saying why:
 * expired, not yet authorized, its creator or authorizer deleted, or ended because the keys of
 * either were regenerated or one of them deleted since (its recorded credentials generation is no
 * longer the application's). Both applications are read from the store here, never from a cache,
 * so a revocation made on any instance ends the session at its next resolution. Returns the
 * session's expiry too, which bounds how long the Caller may be remembered.
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
  const [authorizer, creator] = await Promise.all([store.getApplication(match.tenantId, match.authorizedBy), store.getApplication(match.tenantId, match.applicationId)]);
  if (authorizer === null) throw new AuthenticationError('The application that authorized this session no longer exists');
  if (creator === null) throw new AuthenticationError('The public application that created this session no longer exists');
  if (match.authorizerGeneration !== authorizer.credentialsGeneration) throw ended('that authorized it');
  if (match.creatorGeneration !== creator.credentialsGeneration) throw ended('that created it');
  return { caller: sessionCaller({ ...match, authorizedBy: match.authorizedBy, grants: match.grants }, authorizer, creator), expiresAt: match.expiresAt };
}

function ended(which: string): AuthenticationError {
  return new AuthenticationError(
    `The session has ended: the keys of the application ${which} were regenerated or one of them was deleted since; create a new session (POST /sessions) and have it authorized again`,
  );
}
