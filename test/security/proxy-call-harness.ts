/**
 * The world of no-leak-proxy-calls.property.test.ts: what one store's vault shares across runs
 * (the other tenant, the secrets to look for, the log), the model's principals, tokens and proxies,
 * the leak check, and one proxy call made in-process (`vault.proxy`) or over HTTP
 * (`createFetchHandler`, the key in the header or the query; docs/proxies.md).
 */
import { expect } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import { InternalError, VaultError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/fetch-handler.js';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import type { TestVault } from '../../src/testing/index.js';
import { type ModelApp, TOKEN_PERMISSIONS, luhn } from './reference-model.js';
import type { Destination, ProxySpec } from './proxy-call-fixtures.js';
import type { MakerState } from './proxy-maker-steps.js';

export const REVEAL_ALL: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: [...TOKEN_PERMISSIONS] }];
/** The fields docs/proxies.md (Audit) lists for a proxy:invoke entry's detail: every call's, a keyed call's, a refusal's. */
export const AUDIT_FIELDS = ['method', 'host', 'path', 'query_keys', 'token_ids', 'status', 'latency_ms'];
export const KEYED_AUDIT_FIELDS = ['proxy_id', 'authenticated', 'created_token_ids'];
/** An application's call with a proxy key that opens nothing: recorded in its own tenant, naming no proxy. */
export const INVALID_KEY_AUDIT_FIELDS = ['error', 'proxy_id', 'authenticated', 'method', 'latency_ms'];

export interface Principal {
  caller: Caller;
  key: string;
  model: ModelApp;
}
export interface PToken {
  id: string;
  containers: string[];
  secret: string;
  card: boolean;
}
/** `maker`, `ended`: whose credentials its key stands on, and whether they changed since (proxy-maker-steps.ts). */
export interface PProxy extends MakerState {
  spec: ProxySpec;
  id: string;
  key: string;
  oldKeys: string[];
  app: Principal | null;
  /** The application's grants when a non-administrator bound it: the proxy acts within them too. */
  atBinding: ModelApp | null;
  config: string | null;
}
/** What a call showed its caller. */
export interface Outcome {
  ok: boolean;
  status: number;
  /** The answer's body, or the error's message and fields. */
  body: string;
  /** Body and headers: what a leak check reads. */
  text: string;
  headers: Record<string, string>;
}

/** What lives as long as one store's vault: the other tenant, every secret made, the log. */
export interface Shared {
  vault: TestVault;
  handler: (request: Request) => Promise<Response>;
  destination: Destination;
  logged: string[];
  foreign: { reader: Principal; token: PToken; proxyKey: string };
  /** Token plaintexts (card numbers, strings, issued values). */
  secrets: Set<string>;
  /** Proxy keys, API keys and configuration values: shown to nobody but their maker. */
  never: Set<string>;
  /** Those of the other tenant, which every run checks too. */
  base: { secrets: ReadonlySet<string>; never: ReadonlySet<string> };
}

let counter = 0;
export const fresh = () => `${String(++counter).padStart(6, '0')}${Math.random().toString().slice(2, 9).padEnd(7, '0')}`;
/** A valid card number of fresh digits (16). */
export const cardNumber = () => luhn(`4${fresh()}0`);

export async function principal(shared: Shared, admin: Caller, spec: { type: 'private' | 'public'; permissions: Permission[]; rules: AccessRule[] }): Promise<Principal> {
  const rules = spec.rules.map((rule) => ({ ...rule, permissions: [...new Set(rule.permissions)] }));
  const made = await shared.vault.applications.create(admin, { name: 'app', type: spec.type, permissions: spec.permissions, rules });
  shared.never.add(made.key!);
  return { caller: await shared.vault.authenticate(made.key!), key: made.key!, model: { id: made.id, type: spec.type, permissions: [...spec.permissions], rules } };
}

export async function makeShared(vault: TestVault, destination: Destination, logged: string[]): Promise<Shared> {
  const shared = { vault, destination, logged, secrets: new Set<string>(), never: new Set<string>() } as Shared;
  shared.handler = createFetchHandler(vault, { headerPrefix: 'BT', logger: vault.logger });
  const { application } = await vault.createTenant({ name: 'other' });
  shared.never.add(application.key);
  const admin = await vault.authenticate(application.key);
  const reader = await principal(shared, admin, { type: 'private', permissions: [...TOKEN_PERMISSIONS, 'proxy:invoke'], rules: REVEAL_ALL });
  const secret = `THEIRS-${fresh()}`;
  shared.secrets.add(secret);
  const token = await vault.tokens.create(reader.caller, { type: 'token', data: secret });
  const theirs = `their-config-${fresh()}`;
  shared.never.add(theirs);
  const proxy = await vault.proxies.create(admin, { name: 'theirs', destination_url: 'https://other.example.com/', configuration: { K: theirs } });
  shared.never.add(proxy.key!);
  shared.foreign = { reader, token: { id: token.id, containers: ['/general/high/'], secret, card: false }, proxyKey: proxy.key! };
  shared.base = { secrets: new Set(shared.secrets), never: new Set(shared.never) };
  return shared;
}

/** Fails when `text` shows a key or configuration value, or a token plaintext outside `allowed`. */
export function checkShown(shared: Shared, label: string, text: string, allowed: ReadonlySet<string>): void {
  for (const value of shared.never) expect(text.includes(value), `${label} shows a key or configuration value`).toBe(false);
  for (const secret of shared.secrets) if (!allowed.has(secret)) expect(text.includes(secret), `${label} shows ${secret}, which it may not know`).toBe(false);
}

/** A call, in-process or over HTTP; a refusal is an outcome, an internal error fails the test. */
export async function call(
  shared: Shared,
  via: 'in-process' | 'header' | 'query',
  who: Principal | null,
  request: { url?: string; key?: string; headers: Record<string, string>; body: string },
): Promise<Outcome> {
  if (via === 'in-process') {
    try {
      const base = { method: 'POST', path: '/charges', query: 'a=1', headers: request.headers, body: request.body };
      const answer =
        request.key === undefined
          ? await shared.vault.proxy(who!.caller, { ...base, url: request.url! })
          : await shared.vault.proxy(who?.caller ?? null, { ...base, key: request.key });
      const text = new TextDecoder().decode(answer.body);
      return { ok: true, status: answer.status, body: text, text: text + JSON.stringify(answer.headers), headers: Object.fromEntries(answer.headers) };
    } catch (error) {
      if (!(error instanceof VaultError) || error instanceof InternalError) throw error;
      const text = `${error.message} ${JSON.stringify((error as { errors?: unknown }).errors ?? {})}`;
      return { ok: false, status: 0, body: text, text, headers: {} };
    }
  }
  const headers: Record<string, string> = { ...request.headers };
  if (who !== null) headers['BT-API-KEY'] = who.key;
  if (request.url !== undefined) headers['BT-PROXY-URL'] = request.url;
  if (request.key !== undefined && via === 'header') headers['BT-PROXY-KEY'] = request.key;
  const query = request.key !== undefined && via === 'query' ? `&bt-proxy-key=${encodeURIComponent(request.key)}` : '';
  const response = await shared.handler(new Request(`http://vault.test/proxy/charges?a=1${query}`, { method: 'POST', headers, body: request.body }));
  expect(response.status, 'an HTTP proxy call ends in an internal error').not.toBe(500);
  const text = await response.text();
  const answered: Record<string, string> = {};
  response.headers.forEach((value, name) => (answered[name] = value));
  return { ok: response.headers.has('bt-proxy-destination-status'), status: response.status, body: text, text: text + JSON.stringify(answered), headers: answered };
}
