import type { SessionGrants } from './application-store.js';
import type { Inserted, RecordUpdateResult } from './store-answers.js';
import type { PageRequest, PageResult } from './store-paging.js';

/**
 * A pre-configured proxy (docs/proxies.md): a destination with ordered request and response
 * transforms, called with its own key. Its configuration (secrets the transforms read) is sealed
 * with the tenant's data key (KeyRing.sealRecord) before it reaches the store; its key is kept only
 * as its hash and lookup prefix (auth/api-keys.ts hashApiKey), like an API key.
 */
export interface ProxyRecord {
  id: string;
  tenantId: string;
  name: string;
  destinationUrl: string;
  /** The request transforms in order (JSON objects, checked by the proxy service). */
  requestTransforms: unknown[];
  /** The response transforms in order. */
  responseTransforms: unknown[];
  /** The sealed JSON configuration; null when it has none. */
  configuration: Uint8Array | null;
  /** The application its transforms act as (`req.bt`, tokenize); null: none. */
  applicationId: string | null;
  /** As ReactorRecord.boundGrants: the binder's cover of the application when not an administrator. */
  boundGrants: SessionGrants | null;
  /** False: anyone holding the key may call it (an inbound proxy). */
  requireAuth: boolean;
  keyHash: string;
  keyLookup: string;
  /**
   * The application whose credentials the proxy's key stands on, and their credentialsGeneration
   * when it was made, confirmed or given a new key (docs/proxies.md, When a proxy's key ends); null:
   * made by a tenant administrator, and it ends with no application's keys. Stored as given.
   */
  maker: ProxyMaker | null;
  createdBy: string | null;
  createdAt: number;
  modifiedBy: string | null;
  modifiedAt: number | null;
}

/** Who a proxy's key answers to: an application, at one generation of its credentials. */
export interface ProxyMaker {
  applicationId: string;
  credentialsGeneration: number;
}

export interface ProxyFilter {
  /** Case-insensitive substring; `*` matches any run of characters. */
  name?: string;
}

/** What an update of a proxy changes (only the fields given), plus the modification stamp. */
export interface ProxyChanges {
  name?: string;
  destinationUrl?: string;
  requestTransforms?: unknown[];
  responseTransforms?: unknown[];
  configuration?: Uint8Array | null;
  applicationId?: string | null;
  boundGrants?: SessionGrants | null;
  requireAuth?: boolean;
  /** A rotated key (hash and lookup only). */
  key?: { keyHash: string; keyLookup: string };
  maker?: ProxyMaker | null;
  modifiedBy: string | null;
  modifiedAt: number;
}

/** Pre-configured proxies (see Store for the contract every method keeps). */
export interface ProxyStore {
  /** Inserts; 'exists' (nothing written) when the id is taken. */
  createProxy(proxy: ProxyRecord): Promise<Inserted>;
  getProxy(tenantId: string, id: string): Promise<ProxyRecord | null>;
  /** In creation order, filtered by a name pattern. */
  listProxies(tenantId: string, filter: ProxyFilter, page: PageRequest): Promise<PageResult<ProxyRecord>>;
  /**
   * The proxies (any tenant) whose key has this lookup prefix: the caller compares the full hash in
   * constant time. A proxy key names its tenant, as an API key does.
   */
  findProxiesByKeyLookup(keyLookup: string): Promise<ProxyRecord[]>;
  /**
   * Atomically writes `changes` (only the fields given). With `expected`: only while the proxy is
   * still bound to that application (the binding the caller's authorization was decided on); else
   * `changed` and nothing written.
   */
  updateProxy(tenantId: string, id: string, changes: ProxyChanges, expected?: { applicationId: string | null }): Promise<RecordUpdateResult<ProxyRecord>>;
  deleteProxy(tenantId: string, id: string): Promise<boolean>;
}
