/**
 * The `fetch` reactors get: deny by default. A request goes out only when its host is in
 * `allowHosts`, over http or https, and (unless `allowPrivateNetwork`) every address the host
 * resolves to is a public one. The connection is made to the address that was checked, through a
 * pinned `lookup`, so a DNS answer that changes between the check and the connect (rebinding)
 * cannot redirect it. Redirects are not followed: a 3xx comes back to the reactor as is.
 */
import { isIP } from 'node:net';
import { ValidationError } from '../../errors/errors.js';
import { hostOf, parseHttpUrl, resolvePublicTarget, type Target } from './egress-target.js';
import { sendPinned, sendWithFetch } from './egress-transport.js';
import type { HostFetch, HostFetchRequest, HostFetchResponse } from '../sandbox.js';

export interface EgressFetchOptions {
  /** Hosts reactors may call: `api.example.com`, or `*.example.com` for any subdomain (not the apex). */
  allowHosts: string[];
  /** Also allow loopback, private, link-local and other non-public addresses. For tests and on-premise use. */
  allowPrivateNetwork: boolean;
  /** Whole-request time limit. Default 10 000 ms. */
  timeoutMs?: number;
  /** Largest response body accepted. Default 1 MiB. */
  maxResponseBytes?: number;
  /**
   * Sends the request instead of node:http(s), after the same host and address checks. The address
   * is then not pinned, so DNS rebinding protection is only as good as `fetchImpl`'s resolver.
   */
  fetchImpl?: typeof fetch;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Headers the transport owns; a reactor setting them could smuggle requests or hide the real host. */
const DROPPED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-authorization',
  'proxy-connection',
  'accept-encoding',
]);
const HOST_PATTERN = /^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/**
 * Creates the HostFetch given to reactors.
 * @example createEgressFetch({ allowHosts: ['api.stripe.com', '*.example.com'], allowPrivateNetwork: false })
 */
export function createEgressFetch(options: EgressFetchOptions): HostFetch {
  const allowHosts = normalizeAllowHosts(options.allowHosts);
  const timeoutMs = positiveInteger(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, 'reactors.egress.timeoutMs');
  const maxResponseBytes = positiveInteger(options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, 'reactors.egress.maxResponseBytes');
  const allowPrivateNetwork = options.allowPrivateNetwork === true;
  const fetchImpl = options.fetchImpl;

  return async (request: HostFetchRequest): Promise<HostFetchResponse> => {
    const method = String(request.method).toUpperCase();
    if (!METHODS.has(method)) throw new Error(`HTTP method '${method}' is not allowed`);
    const target = await resolveTarget(request.url, allowHosts, allowPrivateNetwork);
    const headers = outgoingHeaders(request.headers);
    const body = request.body === null || method === 'GET' || method === 'HEAD' ? null : String(request.body);
    const limits = { timeoutMs, maxResponseBytes };
    return fetchImpl === undefined ? sendPinned(target, method, headers, body, limits) : sendWithFetch(fetchImpl, target, method, headers, body, limits);
  };
}

function normalizeAllowHosts(hosts: unknown): string[] {
  if (!Array.isArray(hosts)) throw new ValidationError({ 'reactors.egress.allowHosts': ['must be an array of host names'] });
  return hosts.map((entry: unknown) => {
    let host = typeof entry === 'string' ? entry.trim().toLowerCase().replace(/\.$/, '') : '';
    if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
    if (isIP(host) !== 0 || HOST_PATTERN.test(host)) return host;
    throw new ValidationError({ 'reactors.egress.allowHosts': [`'${String(entry)}' is not a host name or *.domain pattern`] });
  });
}

function positiveInteger(value: number, field: string): number {
  if (!Number.isInteger(value) || value <= 0) throw new ValidationError({ [field]: ['must be a positive integer'] });
  return value;
}

/** Whether `host` (lower-case, no brackets) matches an entry: exact, or `*.domain` for any subdomain of it. */
export function isAllowedHost(host: string, allowHosts: readonly string[]): boolean {
  return allowHosts.some((pattern) => (pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : host === pattern));
}

/** Checks scheme, host and addresses; returns where to connect. */
async function resolveTarget(rawUrl: string, allowHosts: string[], allowPrivateNetwork: boolean): Promise<Target> {
  const url = parseHttpUrl(rawUrl);
  const host = hostOf(url);
  if (!isAllowedHost(host, allowHosts)) {
    throw new Error(`Host '${host}' is not allowed: add it to the reactors.egress.allowHosts option (tokenvault serve --allow-host ${host})`);
  }
  return resolvePublicTarget(url, allowPrivateNetwork);
}

function outgoingHeaders(headers: Record<string, string> | null | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === null || typeof headers !== 'object') return out;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (DROPPED_HEADERS.has(lower) || lower.startsWith('proxy-') || lower === '__proto__') continue;
    out[lower] = String(value);
  }
  // Bodies come back as text; compressed bytes would be garbage to the reactor.
  out['accept-encoding'] = 'identity';
  return out;
}
