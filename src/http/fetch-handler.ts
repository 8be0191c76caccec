import * as v from 'valibot';
import type { Caller } from '../auth/caller.js';
import { AuthenticationError, ValidationError } from '../errors/errors.js';
import type { Logger as PinoLogger } from 'pino';
import { isLoggerLike, type Logger, toLogger } from '../common/logger.js';
import type { ExchangeObserver } from '../observability/exchange-event.js';
import { validationFromIssues } from '../validation/issues.js';
import type { Vault } from '../vault.js';
import { type JsonBody, readJsonBody, webBodyReader } from './body.js';
import type { ExchangeHandler, ExchangeRequest, ExchangeResponse } from './exchange.js';
import { DEFAULT_IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS } from '../idempotency/idempotency-service.js';
import { referencedTokenIds, requestFingerprint } from './idempotency.js';
import { textResponse } from './json-response.js';
import { handleElementsRequest, isElementsPath } from './elements-handler.js';
import { createProxyHandler, isProxyPath } from './proxy-handler.js';
import { type RequestInfo, type TrustForwardedFor, TrustForwardedForSchema } from './client-address.js';
import { buildOpenApiDocument } from './openapi/document.js';
import { foreignOrigin } from './request-origin.js';
import { splitTarget } from './request-target.js';
import { rejectUnknownQueryParameters } from './query-rule.js';
import { RouteError, errorResponse } from './problem.js';
import { Router } from './router.js';
import { ROUTES, type RouteDefinition } from './routes/index.js';
import type { RouteContext } from './routes/route.js';

/** A web-standard request handler: mount it in any runtime that speaks fetch. */
/**
 * A web fetch handler. `info` is what the adapter knows beyond the Request (the client's network
 * address, client-address.ts), passed beside it as Deno's `serve((request, info) => ...)` does.
 */
export type FetchHandler = (request: Request, info?: RequestInfo) => Promise<Response>;

export interface FetchHandlerOptions {
  /**
   * Prefix of the header names (default `SVC`): the API key comes in `<prefix>-API-KEY` and
   * idempotency keys in `<prefix>-IDEMPOTENCY-KEY`. Letters, digits and inner dashes.
   */
  headerPrefix?: string;
  /** Largest request body accepted, in bytes (default 1 MiB); larger bodies get a 413. */
  maxBodyBytes?: number;
  /**
   * Receives unexpected errors (name, message and stack frames; docs/logging.md): a Logger or a
   * pino logger. Default: the vault's logger.
   */
  logger?: Logger | PinoLogger;
  /**
   * How long an idempotency key stays claimed by a request in flight (default 5 minutes): after
   * that, should the process have died, the key may be used again. Keep it above your longest
   * request (a reactor run's time limit): a retry after the lease runs the request again.
   */
  idempotencyLeaseMs?: number;
  /**
   * Called once per answered request with its method, route template, status, duration and
   * application id (never bodies, keys or query values): for an access log and metrics
   * (`accessLog`, `createMetrics`). Default: none, and nothing is measured.
   */
  onExchange?: ExchangeObserver;
  /**
   * Which `X-Forwarded-For` entries name the client, for the inbound proxies' per-address rate
   * limit (docs/proxies.md, Calling a pre-configured proxy). Default `false`: none, the address the
   * adapter gives (the socket's with `tokenvault/node`). `n` (1 to 10; `true` is 1): the number of
   * reverse proxies in front of the vault, each appending one entry, so the n-th from the right is
   * the client's. A list of the reverse proxies' addresses or CIDR ranges (`['10.0.0.0/8']`): only
   * a request from one of them has its entries read, from the right, skipping those on the list.
   * Trust only what is really in front: otherwise any client names its own address and escapes the
   * limit.
   * @example createFetchHandler(vault, { trustForwardedFor: ['10.0.0.0/8'] })
   */
  trustForwardedFor?: TrustForwardedFor;
}

const OptionsSchema = v.object({
  headerPrefix: v.optional(
    v.pipe(v.string(), v.regex(/^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$/, 'must be letters and digits, optionally joined by dashes'), v.maxLength(32, 'must be at most 32 characters')),
    'SVC',
  ),
  maxBodyBytes: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'), v.maxValue(1024 ** 3, 'must be at most 1 GiB')), 1_048_576),
  logger: v.optional(v.custom<Logger>(isLoggerLike, 'must have info, warn and error (a Logger or a pino logger)')),
  idempotencyLeaseMs: v.optional(
    v.pipe(v.number(), v.integer('must be a whole number of milliseconds'), v.minValue(1000, 'must be at least 1000'), v.maxValue(IDEMPOTENCY_TTL_MS, 'must be at most 24 hours')),
    DEFAULT_IDEMPOTENCY_LEASE_MS,
  ),
  onExchange: v.optional(v.custom<ExchangeObserver>((f) => typeof f === 'function', 'must be a function')),
  trustForwardedFor: v.optional(TrustForwardedForSchema, false),
});

type CheckedOptions = Readonly<Omit<v.InferOutput<typeof OptionsSchema>, 'logger'> & { logger: Logger }>;

/** Every response: token data must not sit in caches. */
const NO_STORE = 'no-store';

/**
 * Creates the HTTP API of a vault as a `(Request) => Promise<Response>` function. Routes hold no
 * business logic: each parses the request and makes one service call; the services authorize.
 * Errors are RFC 9457 problem documents; unexpected errors are a generic 500 with nothing leaked.
 *
 * @example
 * import { createFetchHandler } from 'tokenvault/http';
 * const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
 * const response = await handler(new Request('http://vault/tokens', { headers: { 'BT-API-KEY': key } }));
 */
export function createFetchHandler(vault: Vault, options: FetchHandlerOptions = {}): FetchHandler {
  const parsed = v.safeParse(OptionsSchema, options ?? {});
  if (!parsed.success) throw validationFromIssues(parsed.issues, 'options');
  // The logger is settled here, once: a pino logger adapted, none given the vault's (a vault built
  // by hand for a test may have none: stderr then).
  const checked: CheckedOptions = Object.freeze({ ...parsed.output, logger: toLogger(options.logger, vault.logger) });
  const core = createExchangeHandler(vault, checked);
  // The proxy passes bodies and answers through as they are (proxy-handler.ts), beside the JSON core.
  const proxy = createProxyHandler(vault, checked);
  const { onExchange } = checked;
  return async (request: Request, info?: RequestInfo): Promise<Response> => {
    const exchange = new WebExchangeRequest(request);
    // Elements' browser files and frame pages (docs/elements.md): static, no API key.
    if (isElementsPath(exchange.pathname)) return handleElementsRequest(exchange.method, exchange.pathname, exchange.search, checked.headerPrefix);
    if (isProxyPath(exchange.pathname)) {
      if (onExchange === undefined) return proxy(request, info, exchange.pathname, exchange.search);
      const started = performance.now();
      const seen = { applicationId: null };
      const response = await proxy(request, info, exchange.pathname, exchange.search, seen);
      try {
        onExchange({ method: request.method, route: '/proxy', status: response.status, durationMs: performance.now() - started, applicationId: seen.applicationId });
      } catch {
        // An observer's failure must not change the response.
      }
      return response;
    }
    const response = await core(exchange);
    return textResponse(response.body, response.status, response.headers);
  };
}

/** The handler core: routing, authentication, body parsing, idempotency, error mapping. Never throws. */
function createExchangeHandler(vault: Vault, options: CheckedOptions): ExchangeHandler {
  const { headerPrefix, maxBodyBytes, logger, idempotencyLeaseMs, onExchange } = options;
  const apiKeyHeaderName = `${headerPrefix}-API-KEY`;
  const apiKeyHeader = apiKeyHeaderName.toLowerCase();
  const idempotencyHeader = `${headerPrefix}-IDEMPOTENCY-KEY`.toLowerCase();
  // Sent by Elements' frames: the page they work for, checked against the application's allowed_origins.
  const pageOriginHeader = `${headerPrefix}-PAGE-ORIGIN`.toLowerCase();
  const replayedHeader = `${headerPrefix}-Idempotent-Replayed`.toLowerCase();
  const storedHeader = `${headerPrefix}-Idempotent-Stored`.toLowerCase();

  const router = new Router<RouteDefinition>();
  for (const route of ROUTES) router.add(route);
  let openapi: Record<string, unknown> | undefined;
  const openapiDocument = () => (openapi ??= buildOpenApiDocument(router.routes(), { headerPrefix, maxBodyBytes }));

  // The observer learns the route and application as `exchange` found them; the duration is
  // measured here, in the HTTP layer, with the monotonic performance clock (a duration, not a time
  // of day the core would use). Observed inside the one async function, not by a wrapper around it:
  // each layer of async functions costs a promise and a microtask turn per request, measurable at
  // the HTTP benchmark's rate.
  return exchange;

  async function exchange(request: ExchangeRequest): Promise<ExchangeResponse> {
    const started = onExchange === undefined ? 0 : performance.now();
    let route: RouteDefinition | null = null;
    let applicationId: string | null = null;
    let response: ExchangeResponse;
    try {
      const match = router.match(request.method, request.pathname);
      if (match.kind === 'not_found') throw new RouteError('route_not_found');
      if (match.kind === 'method_not_allowed') throw new RouteError('method_not_allowed', match.allow);
      route = match.route;
      const { params } = match;
      if (!route.auth) {
        rejectUnknownQueryParameters(route, request.search);
        response = respond(serialize(route.status, await route.handle({ vault, openapi: openapiDocument })));
      } else {
        let caller: Caller;
        try {
          // A browser's Origin from another page than the vault's own is checked too (docs/elements.md).
          const origin = request.header('origin');
          const requestOrigin = origin === null ? null : foreignOrigin(origin, request.header('host'));
          caller = await vault.authenticate(request.header(apiKeyHeader), request.header(pageOriginHeader), requestOrigin);
        } catch (error) {
          throw error instanceof AuthenticationError ? new AuthenticationError(`${error.message}: send the application's key in the ${apiKeyHeaderName} header`) : error;
        }
        applicationId = caller.applicationId;
        rejectUnknownQueryParameters(route, request.search);
        // The standard header name, ignored, would run a retried request twice: refuse it, naming ours.
        if (route.method !== 'GET' && route.method !== 'DELETE' && request.header('idempotency-key') !== null) {
          throw ValidationError.field('Idempotency-Key', `is not read by this vault: send the idempotency key in the ${headerPrefix}-IDEMPOTENCY-KEY header`);
        }
        const body: JsonBody | null = route.body ? await readJsonBody(request, route.body, maxBodyBytes) : null;
        const input = new Context(vault, caller, params, body === null ? undefined : body.value, request.search);
        const idempotencyKey = route.method === 'GET' || route.method === 'DELETE' ? null : request.header(idempotencyHeader);
        if (idempotencyKey === null) {
          const result = await route.handle(input);
          response = respond(serialize(route.statusFor?.(result) ?? route.status, result));
        } else {
          const handled = route;
          const { result, replayed, stored } = await vault.idempotency.run(
            caller,
            {
              key: idempotencyKey,
              keyName: `${headerPrefix}-IDEMPOTENCY-KEY`,
              fingerprint: requestFingerprint(route.method, request.pathname + request.search, body === null ? null : body.text),
              tokenIds: (ran) => referencedTokenIds(handled, params, input.body, ran),
              leaseMs: idempotencyLeaseMs,
            },
            () => handled.handle(input),
          );
          // A replay's status follows from its result as the first run's did.
          response = respond(serialize(route.statusFor?.(result) ?? route.status, result), replayed);
          // The request ran but will not be replayed: a retry with this key answers 409.
          if (stored === false) response.headers[storedHeader] = 'false';
        }
      }
    } catch (error) {
      response = errorResponse(error, logger, { 'cache-control': NO_STORE }, headerPrefix);
    }
    if (onExchange !== undefined) {
      try {
        onExchange({ method: request.method, route: route === null ? null : route.path, status: response.status, durationMs: performance.now() - started, applicationId });
      } catch {
        // An observer's failure must not change the response.
      }
    }
    return response;
  }

  function respond({ status, text }: SerializedResponse, replayed = false): ExchangeResponse {
    const headers: Record<string, string> = text === null ? { 'cache-control': NO_STORE } : { 'content-type': 'application/json', 'cache-control': NO_STORE };
    if (replayed) headers[replayedHeader] = 'true';
    return { status, headers, body: text };
  }
}

/** A route's context; a class rather than a literal with a getter, which costs a closure per request. */
class Context implements RouteContext {
  constructor(
    readonly vault: Vault,
    readonly caller: Caller,
    readonly params: Record<string, string>,
    readonly body: unknown,
    readonly search: string,
  ) {}

  /** Parsed when read: only list routes read the query. */
  get query(): URLSearchParams {
    return new URLSearchParams(this.search);
  }
}

/** A web Request as the core reads it; its URL is split without a URL parser, its body looked at only by routes that take one. */
class WebExchangeRequest implements ExchangeRequest {
  readonly method: string;
  readonly pathname: string;
  readonly search: string;
  readonly #request: Request;

  constructor(request: Request) {
    this.#request = request;
    this.method = request.method;
    ({ pathname: this.pathname, search: this.search } = splitTarget(targetOf(request.url)));
  }

  header(name: string): string | null {
    const value = this.#request.headers.get(name);
    // A Request built by hand has no Host header: its URL names the host (for the Origin check).
    if (value === null && name === 'host') return URL.canParse(this.#request.url) ? new URL(this.#request.url).host : null;
    return value;
  }

  get hasBody(): boolean {
    const declared = this.#request.headers.get('content-length');
    // A declared length says it without looking at the body (which a lazily built Request would then make).
    return declared !== null && /^\d+$/.test(declared) ? Number(declared) > 0 : this.#request.body !== null;
  }

  readBody(maxBytes: number): Promise<Uint8Array> {
    const declared = this.#request.headers.get('content-length');
    // A body of a declared length within the limit is read whole (Node's parser holds the client to
    // the length it declared); any other is streamed and counted, so it never exceeds the limit.
    if (declared !== null && /^\d+$/.test(declared) && Number(declared) <= maxBytes) {
      return this.#request.arrayBuffer().then(
        (buffer) => new Uint8Array(buffer),
        () => Promise.reject(ValidationError.field('body', 'could not be read completely')),
      );
    }
    return webBodyReader(this.#request.body)(maxBytes);
  }
}

/** The path and query of an absolute URL (what follows its authority). */
function targetOf(url: string): string {
  const authority = url.indexOf('://');
  const path = authority === -1 ? -1 : url.indexOf('/', authority + 3);
  return path === -1 ? '/' : url.slice(path);
}

/** A finished response: the status and the exact JSON text (null: no body). */
interface SerializedResponse {
  status: number;
  text: string | null;
}

function serialize(status: number, result: unknown): SerializedResponse {
  return status === 204 ? { status, text: null } : { status, text: JSON.stringify(result ?? null) };
}
