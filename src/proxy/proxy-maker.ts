/**
 * A proxy's key is a credential, so it answers to the credentials of whoever made it, as a session
 * does (auth/session-auth.ts; docs/proxies.md, When a proxy's key ends). A proxy made, reconfigured
 * or given a new key by an application that is not a tenant administrator records that
 * application and its credentialsGeneration; once the application's keys are regenerated or one
 * is deleted (what ends its sessions), or the application is deleted, the proxy's key answers 401
 * until an administrator or a caller covering the application confirms it, or its key is rotated.
 * Otherwise a key stolen for a moment leaves a proxy behind that outlives it.
 */
import { type Caller, isTenantAdministrator } from '../auth/caller.js';
import { mayBindTo } from '../auth/binding-authz.js';
import { AuthenticationError, AuthorizationError, ConflictError } from '../errors/errors.js';
import type { ProxyMaker, ProxyRecord, Store } from '../storage/store.js';

/**
 * Whose credentials a proxy the caller makes (or gives a new key, or reconfigures) stands on: none
 * for a tenant administrator; a session's authorizer (a session ends with its authorizer's keys
 * too); otherwise the caller's application, at the generation its key resolved at, so a key
 * revoked meanwhile (one an auth cache still remembered) leaves a proxy that has ended already.
 */
export async function makerOf(store: Store, caller: Caller): Promise<ProxyMaker | null> {
  if (isTenantAdministrator(caller)) return null;
  const applicationId = caller.session?.authorizedBy ?? caller.applicationId;
  const generation = caller.session === undefined ? caller.credentialsGeneration : undefined;
  if (generation !== undefined) return { applicationId, credentialsGeneration: generation };
  return { applicationId, credentialsGeneration: (await store.getApplication(caller.tenantId, applicationId))?.credentialsGeneration ?? 0 };
}

/** Where a proxy's key stands: on no application's credentials (null), its maker's current ones, or ended. */
export type KeyStanding = null | 'current' | 'ended' | 'maker_deleted';

/** Read from the store at every call, never a cache, so a regeneration on any instance ends the key at once. */
export async function keyStanding(store: Store, proxy: ProxyRecord): Promise<KeyStanding> {
  if (proxy.maker === null) return null;
  const maker = await store.getApplication(proxy.tenantId, proxy.maker.applicationId);
  if (maker === null) return 'maker_deleted';
  return maker.credentialsGeneration === proxy.maker.credentialsGeneration ? 'current' : 'ended';
}

/** The 401 of a proxy whose maker's credentials changed since it was made or confirmed, or whose maker is gone. */
export async function requireMakerCredentials(store: Store, proxy: ProxyRecord): Promise<void> {
  const standing = await keyStanding(store, proxy);
  if (standing === null || standing === 'current') return;
  const maker = proxy.maker!.applicationId;
  throw new AuthenticationError(
    standing === 'maker_deleted'
      ? `This proxy's key ended when application ${maker} that made it was deleted; a tenant administrator must rotate its key (POST /proxies/${proxy.id}/key)`
      : `This proxy's key ended when the credentials of application ${maker} that made it changed; an administrator or a caller covering that application must confirm it (POST /proxies/${proxy.id}/confirm) or rotate its key`,
  );
}

/**
 * What confirming the proxy makes it stand on: its maker's current credentials; null when it
 * stands on none (nothing to confirm). A tenant administrator, or a caller covering the maker (who
 * could act as it anyway), may confirm; a proxy whose maker is gone is a 409, since nobody covers
 * it any more: an administrator rotates its key instead.
 */
export async function confirmedMaker(store: Store, caller: Caller, proxy: ProxyRecord): Promise<ProxyMaker | null> {
  if (proxy.maker === null) return null;
  const maker = await store.getApplication(proxy.tenantId, proxy.maker.applicationId);
  if (maker === null) {
    throw new ConflictError(
      `The application that made proxy '${proxy.id}' no longer exists, so nobody can confirm it; a tenant administrator may rotate its key (POST /proxies/${proxy.id}/key) or delete it`,
    );
  }
  if (!mayBindTo(caller, maker)) {
    throw new AuthorizationError(
      `Confirming proxy '${proxy.id}' is for a tenant administrator or a caller holding every permission and access grant of application '${maker.id}' that made it`,
    );
  }
  // The confirming key must still be current: one regenerated since it resolved (an auth cache
  // still remembered it) would otherwise stand the proxy on the credentials that replaced it, the
  // very change that ended the key, as makerOf refuses to.
  if (caller.credentialsGeneration !== undefined) {
    const own = caller.applicationId === maker.id ? maker : await store.getApplication(caller.tenantId, caller.applicationId);
    if (own === null || own.credentialsGeneration !== caller.credentialsGeneration) {
      throw new AuthenticationError('The API key of this request was regenerated or deleted since it was checked: send the request again with a current key');
    }
  }
  // A regeneration racing this leaves the generation read here behind: the key then ends again, the safe way.
  return { applicationId: maker.id, credentialsGeneration: maker.credentialsGeneration };
}
