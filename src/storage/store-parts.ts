import type { Store } from './store.js';

/**
 * The Store's methods by area. Both stores build one part per area (`sqlite/sqlite-<area>.ts`,
 * `postgres/postgres-<area>.ts`) whose methods carry exactly these names, and join them in one
 * typed composition (sqlite/sqlite-store.ts, postgres/postgres-store.ts). Adding a store method:
 * ARCHITECTURE.md, "Adding a store method".
 */
export const STORE_AREAS = {
  tenants: ['createTenant', 'getTenant', 'listTenants', 'insertWrappedKey', 'listWrappedKeys'],
  tokens: [
    'createToken',
    'createTokens',
    'getToken',
    'listTokens',
    'updateToken',
    'deleteToken',
    'getDeletedToken',
    'purgeExpiredTokens',
    'listCvcDue',
    'replaceCiphertext',
    'listTokensBelowKeyVersion',
    'countTokensBelowKeyVersion',
  ],
  tokenIntents: ['createTokenIntent', 'getTokenIntent', 'deleteTokenIntent', 'convertTokenIntent', 'purgeExpiredTokenIntents'],
  applications: ['createApplication', 'getApplication', 'listApplications', 'updateApplication', 'deleteApplication'],
  credentials: [
    'findApplicationKeys',
    'createApplicationKey',
    'listApplicationKeys',
    'getApplicationKey',
    'deleteApplicationKey',
    'replaceApplicationKeys',
    'createSession',
    'findSessions',
    'authorizeSession',
    'purgeExpiredSessions',
  ],
  reactors: [
    'createFormula',
    'getFormula',
    'listFormulas',
    'updateFormula',
    'deleteFormula',
    'createReactor',
    'getReactor',
    'getReactorAndFormula',
    'listReactors',
    'updateReactor',
    'deleteReactor',
  ],
  proxies: ['createProxy', 'getProxy', 'listProxies', 'findProxiesByKeyLookup', 'updateProxy', 'deleteProxy'],
  reactorRequests: ['createReactorRequest', 'getReactorRequest', 'startReactorRequest', 'finishReactorRequest', 'purgeExpiredReactorRequests'],
  idempotency: ['claimIdempotencyKey', 'completeIdempotencyKey', 'releaseIdempotencyKey', 'purgeExpiredIdempotencyKeys'],
  jobs: ['enqueueJob', 'scheduleJob', 'claimJobs', 'renewJobLease', 'finishJob', 'rescheduleJob', 'countDueJobs'],
  webhooks: [
    'createWebhook',
    'getWebhook',
    'listWebhooks',
    'listAllWebhooks',
    'updateWebhook',
    'deleteWebhook',
    'getWebhookSecret',
    'putWebhookSecret',
    'createWebhookDelivery',
    'getWebhookDelivery',
    'listWebhookDeliveries',
    'recordWebhookAttempt',
    'restartWebhookDelivery',
    'purgeWebhookDeliveries',
  ],
  audit: ['appendAudit', 'listAudit', 'auditHead', 'auditTenants', 'readAuditChain', 'readUnsealedAudit', 'readAuditSince', 'pruneAudit'],
} as const satisfies Record<string, readonly (keyof Store)[]>;

export type StoreArea = keyof typeof STORE_AREAS;
/** The Store method names of one area. */
export type AreaMethod<A extends StoreArea> = (typeof STORE_AREAS)[A][number];
/** One area's methods as the Store has them (each answers a Promise). */
export type StorePart<A extends StoreArea> = Pick<Store, AreaMethod<A>>;
/** The methods every store writes itself, beside its parts. */
export type StoreLifecycle = Pick<Store, 'migrate' | 'close' | 'withLock'>;

/** Every Store method is in one area or the lifecycle: a method added to the contract but to no area fails to compile here. */
type Unplaced = Exclude<keyof Store, AreaMethod<StoreArea> | keyof StoreLifecycle>;
export const EVERY_METHOD_PLACED: [Unplaced] extends [never] ? true : { unplaced: Unplaced } = true;

type Method = (...args: never[]) => unknown;

/**
 * The area's Store methods of `part`, bound to it (`wrap` puts a boundary around each, as the
 * SQLite store's does). The names come from STORE_AREAS, not from the part's prototype: a part may
 * have helpers of its own, and they stay private to the store.
 */
export function bindPart<A extends StoreArea, P extends { [K in AreaMethod<A>]: Method }>(
  area: A,
  part: P,
  wrap: (part: object, method: Method) => Method = (target, method) => method.bind(target) as Method,
): { [K in AreaMethod<A>]: P[K] } {
  const bound: Partial<Record<AreaMethod<A>, Method>> = {};
  for (const name of STORE_AREAS[area] as readonly AreaMethod<A>[]) bound[name] = wrap(part, part[name]);
  return bound as { [K in AreaMethod<A>]: P[K] };
}

/**
 * The methods `names` of `part`, bound to it: the methods of a partly shared area that a store
 * writes itself (areas/index.ts, `perStore`), joined with the shared operations' part.
 */
export function bindMethods<P extends object, N extends keyof P & string>(part: P, names: readonly N[]): Pick<P, N> {
  const bound: Partial<Pick<P, N>> = {};
  for (const name of names) bound[name] = (part[name] as Method).bind(part) as P[N];
  return bound as Pick<P, N>;
}
