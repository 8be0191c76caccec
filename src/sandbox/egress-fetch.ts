/**
 * The `fetch` reactors get: deny by default. A request goes out only when its host is in
 * `allowHosts`, over http or https, and (unless `allowPrivateNetwork`) every address the host
 * resolves to is a public one. The connection is made to the address that was checked, through a
 * pinned `lookup`, so a DNS answer that changes between the check and the connect (rebinding)
 * cannot redirect it. Redirects are not followed: a 3xx comes back to the reactor as is.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { ValidationError } from '../errors.js';
import { isRefusedAddress } from './ip-ranges.js';
import type { HostFetch, HostFetchRequest, HostFetchResponse } from './sandbox.js';

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

/** Where a checked request connects. */
export interface Target {
  url: URL;
  host: string;
  address: string;
  family: 4 | 6;
}

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
    return fetchImpl === undefined
      ? sendPinned(target, method, headers, body, limits)
      : sendWithFetch(fetchImpl, target, method, headers, body, limits);
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
  return allowHosts.some((pattern) =>
    pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : host === pattern,
  );
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

/** Parses an absolute http(s) URL; Error (our wording) otherwise. */
export function parseHttpUrl(rawUrl: string): URL {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new Error('Invalid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`Only http and https URLs are allowed, not ${url.protocol.replace(/:$/, '')}`);
  }
  return url;
}

/** The URL's host, lower-case, without IPv6 brackets or a trailing dot. */
export function hostOf(url: URL): string {
  const literal = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return literal.replace(/\.$/, '');
}

/**
 * Resolves the URL's host and refuses it (Error, our wording) when any address it resolves to is not
 * public, unless `allowPrivateNetwork`. Shared by reactor `fetch` and webhook delivery: the returned
 * target is what `sendPinned` connects to, so a DNS answer that changes after the check is not used.
 */
export async function resolvePublicTarget(url: URL, allowPrivateNetwork: boolean): Promise<Target> {
  const host = hostOf(url);
  let addresses: { address: string; family: number }[];
  if (isIP(host) !== 0) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await dnsLookup(host, { all: true, verbatim: true });
    } catch {
      throw new Error(`Host '${host}' could not be resolved`);
    }
  }
  const first = addresses[0];
  if (first === undefined) throw new Error(`Host '${host}' could not be resolved`);
  if (!allowPrivateNetwork && addresses.some((a) => isRefusedAddress(a.address))) {
    throw new Error(
      `Host '${host}' is not allowed: it resolves to a loopback, private, link-local or otherwise non-public address; set the reactors.egress.allowPrivateNetwork option to allow it (tokenvault serve --allow-private-network)`,
    );
  }
  return { url, host, address: first.address, family: first.family === 6 ? 6 : 4 };
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

/** Time and response-size limits of one request. */
export interface Limits {
  timeoutMs: number;
  maxResponseBytes: number;
}

/**
 * Sends one request over node:http(s) to the target's checked address (pinned lookup, no agent,
 * redirects not followed), within the limits; the response body is read as text.
 */
export function sendPinned(
  target: Target,
  method: string,
  headers: Record<string, string>,
  body: string | null,
  limits: Limits,
): Promise<HostFetchResponse> {
  // Every connection goes to the checked address, whatever the resolver would answer now.
  const pinned = ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  }) as unknown as LookupFunction;
  const transport = target.url.protocol === 'https:' ? https : http;
  return new Promise<HostFetchResponse>((resolve, reject) => {
    let settled = false;
    const fail = (error: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(error);
    };
    let req: http.ClientRequest;
    try {
      req = transport.request(target.url, {
        method,
        headers: body === null ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinned,
        agent: false,
      });
    } catch {
      throw new Error('Invalid request: a header name or value is not allowed');
    }
    const timer = setTimeout(() => {
      fail(new Error(`Request to '${target.host}' timed out after ${limits.timeoutMs} ms`));
      req.destroy();
    }, limits.timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) =>
      fail(new Error(`Request to '${target.host}' failed${error.code === undefined ? '' : ` (${error.code})`}`)),
    );
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > limits.maxResponseBytes) {
          fail(new Error(`Response from '${target.host}' exceeds the limit of ${limits.maxResponseBytes} bytes`));
          res.destroy();
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', () => fail(new Error(`Request to '${target.host}' failed while reading the response`)));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? '',
          headers: responseHeaders(Object.entries(res.headers)),
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    req.end(body ?? undefined);
  });
}

async function sendWithFetch(
  fetchImpl: typeof fetch,
  target: Target,
  method: string,
  headers: Record<string, string>,
  body: string | null,
  limits: Limits,
): Promise<HostFetchResponse> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let response: Response;
  try {
    response = await fetchImpl(target.url, { method, headers, body, redirect: 'manual', signal });
  } catch {
    throw new Error(
      signal.aborted ? `Request to '${target.host}' timed out after ${limits.timeoutMs} ms` : `Request to '${target.host}' failed`,
    );
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body !== null) {
    const reader = response.body.getReader();
    for (;;) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch {
        throw new Error(
          signal.aborted ? `Request to '${target.host}' timed out after ${limits.timeoutMs} ms` : `Request to '${target.host}' failed while reading the response`,
        );
      }
      if (step.done) break;
      size += step.value.byteLength;
      if (size > limits.maxResponseBytes) {
        await reader.cancel().catch(() => undefined);
        throw new Error(`Response from '${target.host}' exceeds the limit of ${limits.maxResponseBytes} bytes`);
      }
      chunks.push(step.value);
    }
  }
  const entries: [string, string][] = [];
  response.headers.forEach((value, name) => entries.push([name, value]));
  return {
    status: response.status,
    statusText: response.statusText,
    headers: responseHeaders(entries),
    body: Buffer.concat(chunks).toString('utf8'),
  };
}

function responseHeaders(entries: [string, string | string[] | undefined][]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (value === undefined || name === '__proto__') continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
