/**
 * Calling a pre-configured proxy with its key (docs/proxies.md, Calling a pre-configured proxy):
 * the key (looked up by hash, compared in constant time) names the proxy and so the tenant; the
 * destination is the proxy's URL with the path and query of the call. With `require_auth` the
 * caller must also authenticate as an application of that tenant with proxy:invoke, and its
 * `{{ }}` expressions are detokenized under its own access, as the ephemeral proxy does. Without,
 * anyone holding the key may call (the inbound case): expressions are then forwarded as written,
 * never evaluated, and calls are rate-limited per proxy and per client address. Expressions are
 * evaluated before the transforms run, and never in what a transform produced: a transform's
 * author must not reach the caller's tokens by writing an expression. Transforms act as the
 * proxy's application within the grants it was bound with (proxy-transforms.ts).
 */
import type { AuditLog } from '../audit/audit.js';
import { hashApiKey, hashesEqual } from '../auth/api-keys.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import { withinBoundGrants } from '../auth/session-grants.js';
import type { Clock } from '../common/clock.js';
import { AuthenticationError, BadGatewayError, ConflictError, GatewayTimeoutError, ValidationError, VaultError } from '../errors/errors.js';
import { runOwner } from '../reactors/run-owner.js';
import type { ProxyRecord, Store } from '../storage/store.js';
import type { ConfigurationSealer } from './proxies-service.js';
import { configurationContext } from './proxies-service.js';
import { requireMakerCredentials } from './proxy-maker.js';
import type { RequestTransform, ResponseTransform } from './proxies-input.js';
import { forwardedRequestHeaders, returnedResponseHeaders } from './proxy-headers.js';
import type { ProxyMessage } from './proxy-message.js';
import { FixedWindowLimiter, addressBucket } from './proxy-rate-limit.js';
import { type ProxyRequest, type ProxyResponse, type ProxyService, checkMethod, outgoingMessage } from './proxy-service.js';
import { type TransformContext, type TransformDeps, runRequestTransforms, runResponseTransforms } from './proxy-transforms.js';
import { askWholeAnswer, wholeAnswer } from './whole-answer.js';

export class KeyedProxyService {
  readonly #store: Store;
  readonly #sealer: ConfigurationSealer;
  readonly #proxy: ProxyService;
  readonly #audit: AuditLog;
  readonly #transforms: TransformDeps;
  readonly #perKey: FixedWindowLimiter;
  readonly #perAddress: FixedWindowLimiter;

  constructor(deps: { store: Store; clock: Clock; records: ConfigurationSealer; proxy: ProxyService; audit: AuditLog; transforms: TransformDeps }) {
    this.#store = deps.store;
    this.#sealer = deps.records;
    this.#proxy = deps.proxy;
    this.#audit = deps.audit;
    this.#transforms = deps.transforms;
    const limits = deps.proxy.options.inboundRateLimit;
    this.#perKey = new FixedWindowLimiter(limits.perKey, deps.clock);
    this.#perAddress = new FixedWindowLimiter(limits.perAddress, deps.clock);
  }

  /**
   * Calls the proxy that `request.key` names, as `caller` (null: unauthenticated, allowed only by
   * a proxy with `require_auth: false`).
   */
  async invoke(caller: Caller | null, request: ProxyRequest & { key: string }): Promise<ProxyResponse> {
    const started = performance.now();
    const method = typeof request.method === 'string' ? request.method.toUpperCase() : '';
    // What is audited of a refusal, and what not (docs/proxies.md, Audit): a refusal by either
    // limit writes no entry, so a flood (from many addresses, or of guessed keys) cannot fill a
    // tenant's audit log; every unauthenticated call past both limits is recorded, whatever its
    // outcome, so their entries are bounded by the per-proxy limit.
    if (caller === null) this.#perAddress.take(addressBucket(request.clientAddress ?? null), 'from this address');
    // A method the proxy does not carry is refused once counted, before any lookup (docs/proxies.md, Methods).
    checkMethod(method);
    let proxy: ProxyRecord;
    try {
      proxy = await this.#find(request.key);
      if (caller !== null && caller.tenantId !== proxy.tenantId) throw invalidKey();
    } catch (error) {
      // Unauthenticated, a key that opens nothing names no tenant to record it in. An application
      // presenting one is recorded in its own tenant, naming no proxy (nor whether the key is another tenant's).
      if (caller !== null) {
        const code = error instanceof VaultError ? error.code : 'internal_error';
        this.#audit.record({
          tenantId: caller.tenantId,
          actor: caller.applicationId,
          operation: 'proxy:invoke',
          resourceId: null,
          outcome: 'failure',
          detail: JSON.stringify({ error: code, proxy_id: null, authenticated: true, method, latency_ms: Math.round(performance.now() - started) }),
        });
      }
      throw error;
    }
    // Before the require_auth check: unauthenticated calls of a proxy that needs an API key are
    // recorded too, so they must be bounded the same way.
    if (caller === null) this.#perKey.take(proxy.id, 'of this proxy');
    const record = {
      proxy_id: proxy.id,
      authenticated: caller !== null,
      method,
      host: null as string | null,
      path: null as string | null,
      query_keys: [] as string[],
      token_ids: [] as string[],
      created_token_ids: [] as string[],
      status: null as number | null,
      latency_ms: 0,
    };
    const actor = caller?.applicationId ?? `proxy:${proxy.id}`;
    try {
      // A proxy key ends with the credentials of the application that made it (proxy-maker.ts).
      await requireMakerCredentials(this.#store, proxy);
      if (caller === null && proxy.requireAuth) {
        throw new AuthenticationError("This proxy requires an API key as well as its proxy key: send the API key of an application of the proxy's tenant that holds proxy:invoke");
      }
      if (caller !== null) requirePermission(caller, 'proxy:invoke');
      if (request.url !== undefined && request.url !== null)
        throw ValidationError.field('url', "must not be given with a proxy key: a pre-configured proxy's destination is its own");
      const { url, target } = await this.#proxy.destination(method, proxy.destinationUrl, request, record);
      let message = outgoingMessage(method, request);
      // Read only when something reads it (expressions, transforms); otherwise it goes on as sent.
      if (caller !== null || proxy.requestTransforms.length > 0) message = await this.#proxy.decode(message, request);
      if (caller !== null) {
        // The caller's own expressions, under its own access; an unauthenticated call's are never evaluated.
        const detokenized = await this.#proxy.detokenize(caller, message);
        record.token_ids = detokenized.tokenIds;
        message = detokenized.message;
      }
      const ctx = await this.#context(proxy, caller, method, request.path ?? '', url);
      // The record holds the tokens as they are made: a call refused after a tokenize (a later
      // transform failing) still names the tokens it left behind (docs/proxies.md, Audit).
      record.created_token_ids = ctx.createdTokenIds;
      const transformed = await runRequestTransforms(this.#transforms, ctx, proxy.requestTransforms as RequestTransform[], message);
      let answer: { status: number; message: ProxyMessage };
      if ('status' in transformed) answer = transformed;
      else {
        const headers = forwardedRequestHeaders(Object.entries(transformed.headers));
        // Response transforms read the whole body, uncompressed (whole-answer.ts).
        if (proxy.responseTransforms.length > 0) askWholeAnswer(headers);
        const sent = wholeAnswer(proxy.responseTransforms.length > 0, await this.#proxy.send(proxy.tenantId, target, { method, headers, body: transformed.body }));
        answer = { status: sent.status, message: { headers: joined(sent.headers), body: sent.body } };
        // Only a success is transformed: an error answer comes back as the destination sent it.
        if (sent.status >= 200 && sent.status < 300 && proxy.responseTransforms.length > 0) {
          answer.message = await runResponseTransforms(this.#transforms, ctx, proxy.responseTransforms as ResponseTransform[], sent.status, answer.message);
        }
      }
      record.status = answer.status;
      record.latency_ms = Math.round(performance.now() - started);
      this.#audit.record({ tenantId: proxy.tenantId, actor, operation: 'proxy:invoke', resourceId: proxy.id, outcome: 'success', detail: JSON.stringify(record) });
      return { status: answer.status, headers: returnedResponseHeaders(Object.entries(answer.message.headers), null), body: answer.message.body ?? new Uint8Array() };
    } catch (error) {
      record.latency_ms = Math.round(performance.now() - started);
      const code = error instanceof VaultError ? error.code : 'internal_error';
      this.#audit.record({
        tenantId: proxy.tenantId,
        actor,
        operation: 'proxy:invoke',
        resourceId: proxy.id,
        outcome: 'failure',
        detail: JSON.stringify({ error: code, ...record }),
      });
      throw caller === null ? withoutDestination(error) : error;
    }
  }

  /** The proxy whose key this is: every candidate compared in constant time, so timing tells nothing. */
  async #find(key: string): Promise<ProxyRecord> {
    if (typeof key !== 'string' || key.length === 0 || key.length > 512) throw invalidKey();
    const { keyHash, keyLookup } = hashApiKey(key);
    let match: ProxyRecord | undefined;
    for (const candidate of await this.#store.findProxiesByKeyLookup(keyLookup)) if (hashesEqual(candidate.keyHash, keyHash)) match = candidate;
    if (match === undefined) throw invalidKey();
    return match;
  }

  async #context(proxy: ProxyRecord, caller: Caller | null, method: string, path: string, url: URL): Promise<TransformContext> {
    const configuration =
      proxy.configuration === null
        ? {}
        : (JSON.parse((await this.#sealer.openRecord(proxy.tenantId, configurationContext(proxy.id), proxy.configuration)).toString('utf8')) as Record<string, unknown>);
    let appCaller: Caller | null = null;
    if (proxy.applicationId !== null) {
      const application = await this.#store.getApplication(proxy.tenantId, proxy.applicationId);
      if (!application) throw new ConflictError("The proxy's application no longer exists; update the proxy");
      appCaller = withinBoundGrants(application, proxy.boundGrants);
    }
    return {
      tenantId: proxy.tenantId,
      proxyId: proxy.id,
      configuration,
      appCaller,
      caller,
      // An unauthenticated flood uses the proxy's own share of the sandbox's workers.
      owner: caller === null ? { tenantId: proxy.tenantId, applicationId: `proxy:${proxy.id}` } : runOwner(caller),
      method,
      path,
      query: Object.fromEntries(url.searchParams),
      createdTokenIds: [],
    };
  }
}

/** Headers by name, repeated ones joined as one list. */
function joined(headers: readonly [string, string][]): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of headers) out[name] = name in out ? `${out[name]}, ${value}` : value;
  return out;
}

/** One answer for every key that opens nothing here: unknown, rotated, deleted, or another tenant's. */
function invalidKey(): AuthenticationError {
  return new AuthenticationError('The proxy key is not valid: send the key shown when the proxy was created, or when its key was last rotated');
}

/**
 * An unauthenticated caller (an inbound proxy's third party) is told that the destination failed,
 * not which host it is: the destination is the proxy owner's backend (docs/proxies.md, Calling it).
 */
function withoutDestination(error: unknown): unknown {
  if (error instanceof GatewayTimeoutError) return new GatewayTimeoutError("The proxy's destination did not answer in time");
  if (error instanceof BadGatewayError) return new BadGatewayError("The proxy's destination could not be reached or did not answer properly");
  return error;
}
