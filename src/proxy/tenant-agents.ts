/**
 * Connection pools of the proxy, one per tenant (docs/proxies.md): a connection to a destination
 * is reused by later requests of the same tenant only, never across tenants. Each pool keeps a few
 * idle connections for a short time; the least recently used tenants' pools are closed past a
 * bound, so many tenants cannot hold many sockets.
 */
import http from 'node:http';
import https from 'node:https';

/** Idle connections are closed after this (ms). */
const IDLE_MS = 5_000;
/** Pools kept at once. */
const MAX_TENANTS = 128;

interface Pool {
  http: http.Agent;
  https: https.Agent;
}

export class TenantAgents {
  readonly #pools = new Map<string, Pool>();

  /** The tenant's agent for the protocol; its pool moves to the most recently used end. */
  for(tenantId: string, secure: boolean): http.Agent {
    let pool = this.#pools.get(tenantId);
    if (pool === undefined) {
      const options = { keepAlive: true, maxSockets: 32, maxFreeSockets: 8, timeout: IDLE_MS, scheduling: 'lifo' as const };
      pool = { http: new http.Agent(options), https: new https.Agent({ ...options, minVersion: 'TLSv1.2' }) };
      if (this.#pools.size >= MAX_TENANTS) {
        const [oldest, evicted] = this.#pools.entries().next().value as [string, Pool];
        this.#pools.delete(oldest);
        destroy(evicted);
      }
    } else this.#pools.delete(tenantId);
    this.#pools.set(tenantId, pool);
    return secure ? pool.https : pool.http;
  }

  /** Closes every pool (the vault closes). */
  close(): void {
    for (const pool of this.#pools.values()) destroy(pool);
    this.#pools.clear();
  }
}

function destroy(pool: Pool): void {
  pool.http.destroy();
  pool.https.destroy();
}
