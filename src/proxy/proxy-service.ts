/**
 * The ephemeral (outbound) proxy (docs/proxies.md): a caller's request goes to a destination it
 * names, with the `{{ token_id }}` expressions of its body and header values replaced by token data
 * on the way, and the destination's answer comes back as it is. Nothing is sent unless every rule
 * holds: proxy:invoke, the tenant's proxy turned on, the destination's URL and every address it
 * resolves to (proxy-destination.ts), and every token it names allowed to the caller by token:use
 * exactly as `/detokenize` allows it (at most `maxTokens` of them). One audit entry per call names
 * the destination host, method, path, query keys, token ids, status and latency; never bodies or
 * header values.
 */
import type { AuditLog } from '../audit/audit.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import { AuthorizationError, BadGatewayError, ValidationError, VaultError } from '../errors/errors.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import { RefusedDestinationError, type Target } from '../sandbox/egress/egress-target.js';
import { type DetokenizeSource, detokenizeValue } from '../tokens/detokenize-service.js';
import { expressionTree, fromExpressionTree } from './proxy-body.js';
import { DEFAULT_DECODED_BODY_BYTES, decodedMessage } from './proxy-encoding.js';
import { type DestinationRules, destinationUrl, resolveDestination, unresolvedTarget } from './proxy-destination.js';
import { forwardedRequestHeaders, returnedResponseHeaders } from './proxy-headers.js';
import type { ProxyMessage } from './proxy-message.js';
import type { ResolvedProxyOptions } from './proxy-options.js';
import { TenantAgents } from './tenant-agents.js';
import { type DestinationResponse, sendToDestination, sendWithFetch } from './proxy-transport.js';

/** A request for the destination, as `vault.proxy` takes it. */
export interface ProxyRequest {
  /** GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS. */
  method: string;
  /** The destination's base URL (`<prefix>-PROXY-URL` over HTTP); not with `key`. */
  url?: string | null;
  /**
   * A pre-configured proxy's key (`<prefix>-PROXY-KEY` over HTTP): the destination is that proxy's,
   * and its transforms run (keyed-proxy-service.ts).
   */
  key?: string;
  /** The caller's network address, for an unauthenticated keyed call's rate limit (the HTTP adapter's). */
  clientAddress?: string | null;
  /** Appended to the base URL's path (`/v1/charges`); default none. */
  path?: string;
  /** Appended to the base URL's query (`?a=1` or `a=1`); default none. */
  query?: string;
  /** Headers for the destination; values may hold expressions. Hop-by-hop headers are dropped. */
  headers?: Record<string, string> | Iterable<[string, string]>;
  /** The body; its strings (JSON), values (form) or whole text may hold expressions. */
  body?: string | Uint8Array | null;
  /**
   * The largest body once decompressed, when a `content-encoding` header says it is compressed
   * (docs/proxies.md, Compressed request bodies); default 1 MiB. Over HTTP, the handler's `maxBodyBytes`: the same limit as
   * an uncompressed body.
   */
  maxBodyBytes?: number;
}

/** The destination's answer, as it sent it (less hop-by-hop headers and set-cookie). */
export interface ProxyResponse {
  status: number;
  headers: [string, string][];
  body: Uint8Array;
}

export const PROXY_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** ValidationError (400; 405 over HTTP, proxy-handler.ts) for a method the proxy does not carry; `method` upper-cased. */
export function checkMethod(method: string): void {
  if (!PROXY_METHODS.has(method)) throw ValidationError.field('method', `must be one of ${[...PROXY_METHODS].join(', ')}`);
}
const encoder = new TextEncoder();

/** What the audit entry of a call says (docs/proxies.md, Audit). */
interface CallRecord {
  method: string;
  host: string | null;
  path: string | null;
  query_keys: string[];
  token_ids: string[];
  status: number | null;
  latency_ms: number;
}

export class ProxyService {
  /** Tokens, then token intents (the vault's TokenSources): what `{{ <id> }}` resolves against. */
  readonly #tokens: DetokenizeSource;
  readonly #engine: ExpressionEngine;
  readonly #audit: AuditLog;
  readonly #options: ResolvedProxyOptions;
  readonly #rules: DestinationRules;
  readonly #agents = new TenantAgents();

  constructor(deps: { tokens: DetokenizeSource; expressions: ExpressionEngine; audit: AuditLog; options: ResolvedProxyOptions; allowPrivateNetwork: boolean }) {
    this.#tokens = deps.tokens;
    this.#engine = deps.expressions;
    this.#audit = deps.audit;
    this.#options = deps.options;
    this.#rules = { allowPrivateNetwork: deps.allowPrivateNetwork, allowPorts: deps.options.allowPorts };
  }

  /** The destination rules and options (a keyed proxy's call follows them too). */
  get rules(): DestinationRules {
    return this.#rules;
  }

  get options(): ResolvedProxyOptions {
    return this.#options;
  }

  /**
   * Sends the request to its destination for the caller and returns the destination's answer.
   * @example await vault.proxy(caller, { method: 'POST', url: 'https://api.example.com', path: '/charges', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ card: `{{ ${token.id} }}` }) })
   */
  async invoke(caller: Caller, request: ProxyRequest): Promise<ProxyResponse> {
    const started = performance.now();
    const method = typeof request?.method === 'string' ? request.method.toUpperCase() : '';
    const record: CallRecord = { method, host: null, path: null, query_keys: [], token_ids: [], status: null, latency_ms: 0 };
    try {
      requirePermission(caller, 'proxy:invoke');
      if (!this.#options.ephemeral || this.#options.ephemeralDisabledTenants.has(caller.tenantId)) {
        throw new AuthorizationError(
          'The ephemeral proxy is turned off for this tenant: call a pre-configured proxy with its key instead, or ask the operator to turn it on (proxy.ephemeral, proxy.ephemeralDisabledTenants)',
        );
      }
      const { target } = await this.destination(method, request.url ?? null, request, record);
      const { message: outgoing, tokenIds } = await this.detokenize(caller, await this.decode(outgoingMessage(method, request), request));
      record.token_ids = tokenIds;
      const answer = await this.send(caller.tenantId, target, { method, headers: outgoing.headers, body: outgoing.body });
      record.status = answer.status;
      record.latency_ms = Math.round(performance.now() - started);
      this.#audit.record({
        tenantId: caller.tenantId,
        actor: caller.applicationId,
        operation: 'proxy:invoke',
        resourceId: record.host,
        outcome: 'success',
        detail: JSON.stringify(record),
      });
      return { status: answer.status, headers: returnedResponseHeaders(answer.headers, null), body: answer.body };
    } catch (error) {
      record.latency_ms = Math.round(performance.now() - started);
      const code = error instanceof VaultError ? error.code : 'internal_error';
      this.#audit.record({
        tenantId: caller.tenantId,
        actor: caller.applicationId,
        operation: 'proxy:invoke',
        resourceId: record.host,
        outcome: 'failure',
        detail: JSON.stringify({ error: code, ...record }),
      });
      throw error;
    }
  }

  /**
   * The checked method and destination of a call (a keyed proxy's too): the URL from `base` with
   * the request's path and query, its address resolved; what the audit says of it is set in `record`.
   */
  async destination(
    method: string,
    base: string | null,
    request: ProxyRequest,
    record: { host: string | null; path: string | null; query_keys: string[] },
  ): Promise<{ url: URL; target: Target }> {
    checkMethod(method);
    const url = destinationUrl(base, request.path ?? '', request.query ?? '', this.#rules);
    record.host = url.hostname;
    record.path = url.pathname;
    record.query_keys = [...new Set(url.searchParams.keys())];
    return { url, target: await this.resolve(url) };
  }

  /**
   * The message with a compressed body decompressed, at most the request's `maxBodyBytes` of it
   * (docs/proxies.md, Compressed request bodies): what reads the body (expressions, transforms) reads it decompressed.
   */
  decode(message: ProxyMessage, request: ProxyRequest): Promise<ProxyMessage> {
    const limit = request.maxBodyBytes ?? DEFAULT_DECODED_BODY_BYTES;
    if (!Number.isSafeInteger(limit) || limit < 1) throw ValidationError.field('maxBodyBytes', 'must be a whole number of bytes, at least 1');
    return decodedMessage(message, limit);
  }

  /** The message with the caller's `{{ }}` expressions replaced under its own access (as `/detokenize`). */
  async detokenize(caller: Caller, message: ProxyMessage): Promise<{ message: ProxyMessage; tokenIds: string[] }> {
    const source = expressionTree(message.headers, message.headers['content-type'], message.body);
    const detokenized = await detokenizeValue(this.#tokens, this.#engine, caller, source.tree, 'request', this.#options.maxTokens);
    return { message: fromExpressionTree(source, detokenized.value), tokenIds: [...detokenized.data.keys()] };
  }

  /** The address to connect to, checked (a keyed proxy's way out too: keyed-proxy-service.ts). */
  async resolve(url: URL): Promise<Target> {
    // `unsafeFetch` is the embedder's transport (a test's fake destination): the URL rules hold,
    // resolving the name and choosing the address are its own, which its name says (proxy-options.ts).
    if (this.#options.unsafeFetch !== undefined) return unresolvedTarget(url, this.#rules);
    try {
      return await resolveDestination(url, this.#rules);
    } catch (error) {
      if (error instanceof VaultError) throw error;
      // The refusal says neither whether the name resolved nor to what (egress-target.ts).
      if (error instanceof RefusedDestinationError) throw ValidationError.field('url', `names a host that is not allowed: it must resolve to public addresses only`);
      throw new BadGatewayError(`The destination '${url.hostname}' could not be resolved`);
    }
  }

  /** Sends to a resolved target over the tenant's own connections. */
  send(tenantId: string, target: Target, request: { method: string; headers: Record<string, string>; body: Uint8Array | null }): Promise<DestinationResponse> {
    const limits = { timeoutMs: this.#options.timeoutMs, maxResponseBytes: this.#options.maxResponseBytes, setTimer: this.#options.setTimer };
    const fetchImpl = this.#options.unsafeFetch;
    if (fetchImpl !== undefined) return sendWithFetch(fetchImpl, target, request, limits);
    // The pool is held until the answer is read (or the call failed): an eviction in between lets it finish.
    const lease = this.#agents.lease(tenantId, target.url.protocol === 'https:');
    return sendToDestination(target, request, limits, lease.agent).finally(lease.release);
  }

  /** Closes the tenants' idle connections (the vault closes). */
  close(): void {
    this.#agents.close();
  }
}

/** The request's headers (hop-by-hop ones dropped) and body; a GET or HEAD carries none. */
export function outgoingMessage(method: string, request: ProxyRequest): ProxyMessage {
  const body = request.body === undefined || request.body === null ? null : typeof request.body === 'string' ? encoder.encode(request.body) : request.body;
  if (body !== null && (method === 'GET' || method === 'HEAD')) throw ValidationError.field('body', `must be empty for ${method}`);
  return { headers: forwardedRequestHeaders(headerEntries(request.headers)), body };
}

function headerEntries(headers: ProxyRequest['headers']): [string, string][] {
  if (headers === undefined || headers === null) return [];
  if (typeof (headers as Iterable<[string, string]>)[Symbol.iterator] === 'function') return [...(headers as Iterable<[string, string]>)].map(([n, v]) => [String(n), String(v)]);
  return Object.entries(headers as Record<string, string>).map(([n, v]) => [n, String(v)]);
}
