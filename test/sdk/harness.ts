import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BasisTheory } from '@basis-theory/basis-theory-js';
/** The SDK client `init` resolves with (without Elements). */
export type BasisTheoryClient = Awaited<ReturnType<BasisTheory['init']>>;
import { onTestFinished } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { toNodeListener } from '../../src/http/node.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import type { TestStore } from '../support/stores.js';

/** The SDK release these tests drive (package.json pins it; the README names it). */
export const SDK_VERSION = '4.30.2';

/** A real HTTP server (node:http + the node adapter, `--header-prefix BT`) over a test vault, on a random port of `localhost`. */
export interface SdkServer {
  vault: TestVault;
  /** `http://localhost:PORT`: the SDK speaks plain http only to the host name localhost. */
  url: string;
  adminKey: string;
  /** An initialized SDK client acting with `key`. */
  sdk(key: string): Promise<BasisTheoryClient>;
  /** Creates an application in the test tenant and returns its key. */
  key(options: { permissions: Permission[]; rules?: AccessRule[]; type?: 'public' | 'private' | 'management' }): Promise<string>;
  /** A raw request with `BT-API-KEY`, for what the SDK has no call for and for malformed input. */
  raw(method: string, path: string, options?: { key?: string; body?: unknown; contentType?: string }): Promise<{ status: number; body: any; headers: Headers }>;
}

/**
 * Starts the HTTP API of a fresh vault on `store` (SQLite or PostgreSQL) the way `tokenvault serve
 * --header-prefix BT` serves it (with the test vault `options`, if any); the server is closed when the current test ends, before the vault.
 */
export async function startSdkServer(store: TestStore, options?: Parameters<TestStore['vault']>[0]): Promise<SdkServer> {
  const vault = await store.vault(options);
  const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
  const server: Server = createServer(toNodeListener(handler));
  // 'localhost' resolves here as it does for the SDK's http client (dns.lookup, first address).
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, 'localhost', () => resolve());
  });
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://localhost:${(server.address() as AddressInfo).port}`;
  return {
    vault,
    url,
    adminKey: vault.adminKey,
    sdk: (key) => new BasisTheory().init(key, { apiBaseUrl: url, disableTelemetry: true }) as Promise<BasisTheoryClient>,
    async key({ permissions, rules = [], type }) {
      return (await vault.caller({ permissions, rules, ...(type ? { type } : {}) })).key;
    },
    async raw(method, path, { key, body, contentType } = {}) {
      const headers: Record<string, string> = {};
      if (key !== undefined) headers['BT-API-KEY'] = key;
      if (body !== undefined) headers['content-type'] = contentType ?? 'application/json';
      else if (contentType !== undefined) headers['content-type'] = contentType;
      const response = await fetch(url + path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text === '' ? null : JSON.parse(text), headers: response.headers };
    },
  };
}

/** The status and problem body of a failed SDK call (BasisTheoryApiError). */
export async function sdkFailure(promise: Promise<unknown>): Promise<{ status: number; data: any }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { status?: number; data?: unknown };
    if (typeof e.status === 'number') return { status: e.status, data: e.data };
    throw error;
  }
  throw new Error('expected the SDK call to fail');
}
