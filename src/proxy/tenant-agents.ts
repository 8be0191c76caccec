/**
 * Connection pools of the proxy, one per tenant (docs/proxies.md, Connection pools): a connection to
 * a destination is reused by later requests of the same tenant only, never across tenants. Each pool
 * keeps a few idle connections for a short time; the least recently used tenants' pools are closed
 * past a bound, so many tenants cannot hold many sockets.
 *
 * A pool is closed only once its requests in flight have ended: closing it cuts its sockets, and a
 * request cut after the destination acted on it (a payment API's charge) would come back as a 502
 * the client may retry. An evicted pool so takes no new request and is closed when its last one
 * ends; each request ends within the proxy's time limit, so a draining pool lives no longer than that.
 */
import http from 'node:http';
import https from 'node:https';

/** Idle connections are closed after this (ms). */
const IDLE_MS = 5_000;
/** Pools kept at once (pools still draining their requests after eviction are not counted). */
const MAX_TENANTS = 128;

class Pool {
  readonly http: http.Agent;
  readonly https: https.Agent;
  /** Requests sent through this pool that have not ended. */
  inFlight = 0;
  evicted = false;

  constructor() {
    const options = { keepAlive: true, maxSockets: 32, maxFreeSockets: 8, timeout: IDLE_MS, scheduling: 'lifo' as const };
    this.http = new http.Agent(options);
    this.https = new https.Agent({ ...options, minVersion: 'TLSv1.2' });
  }

  destroy(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

/** A tenant's agent for one request; `release` once the request has ended, whatever its outcome. */
export interface AgentLease {
  agent: http.Agent;
  release: () => void;
}

export class TenantAgents {
  readonly #pools = new Map<string, Pool>();
  /** Evicted pools whose requests have not all ended yet. */
  readonly #draining = new Set<Pool>();

  /** The tenant's agent for the protocol, held until `release`; its pool moves to the most recently used end. */
  lease(tenantId: string, secure: boolean): AgentLease {
    let pool = this.#pools.get(tenantId);
    if (pool === undefined) {
      pool = new Pool();
      if (this.#pools.size >= MAX_TENANTS) {
        const [oldest, evicted] = this.#pools.entries().next().value as [string, Pool];
        this.#pools.delete(oldest);
        this.#evict(evicted);
      }
    } else this.#pools.delete(tenantId);
    this.#pools.set(tenantId, pool);
    const held = pool;
    held.inFlight++;
    let released = false;
    return {
      agent: secure ? held.https : held.http,
      release: () => {
        if (released) return;
        released = true;
        held.inFlight--;
        if (held.evicted && held.inFlight === 0) {
          this.#draining.delete(held);
          held.destroy();
        }
      },
    };
  }

  /** Pools open: kept, and evicted ones still draining (for tests and metrics). */
  get size(): { kept: number; draining: number } {
    return { kept: this.#pools.size, draining: this.#draining.size };
  }

  /** Closes every pool, draining ones included (the vault closes). */
  close(): void {
    for (const pool of [...this.#pools.values(), ...this.#draining]) pool.destroy();
    this.#pools.clear();
    this.#draining.clear();
  }

  #evict(pool: Pool): void {
    pool.evicted = true;
    if (pool.inFlight === 0) pool.destroy();
    else this.#draining.add(pool);
  }
}
