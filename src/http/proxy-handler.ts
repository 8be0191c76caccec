/**
 * `ANY /proxy` and `/proxy/**` (docs/proxies.md): the HTTP face of `vault.proxy`. Unlike the JSON
 * routes, the request goes on as the caller sent it (any content type, any method the proxy
 * allows) and the destination's answer comes back as it is, with its status in
 * `<prefix>-PROXY-DESTINATION-STATUS`. The vault's own refusals come back as
 * `{"proxy_error": <problem>}` (the Basis Theory SDK's convention), so they are never mistaken for
 * the destination's. The vault's headers (`<prefix>-*`) are never forwarded, and a destination
 * cannot send back one that claims that prefix.
 */
import type { Caller } from '../auth/caller.js';
import { AuthenticationError, PayloadTooLargeError, ValidationError } from '../errors/errors.js';
import type { Logger } from '../common/logger.js';
import type { Vault } from '../vault.js';
import { webBodyReader } from './body.js';
import { PROXY_METHODS } from '../proxy/proxy-service.js';
import { RouteError, errorResponse } from './problem.js';
import { type RequestInfo, type TrustForwardedFor, clientAddressResolver } from './client-address.js';

export interface ProxyHandlerOptions {
  headerPrefix: string;
  maxBodyBytes: number;
  logger: Logger;
  /** Which X-Forwarded-For entries name the client (docs/proxies.md, Calling a pre-configured proxy). */
  trustForwardedFor: TrustForwardedFor;
}

/** Whether a request path is the proxy's (`/proxy` or below it). */
export function isProxyPath(pathname: string): boolean {
  return pathname === '/proxy' || pathname.startsWith('/proxy/');
}

/** Statuses whose response has no body (a web Response refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** What an exchange observer learns of a proxied request: the calling application, once authenticated. */
export interface ProxySeen {
  applicationId: string | null;
}

export function createProxyHandler(
  vault: Vault,
  options: ProxyHandlerOptions,
): (request: Request, info: RequestInfo | undefined, pathname: string, search: string, seen?: ProxySeen) => Promise<Response> {
  const { headerPrefix, maxBodyBytes, logger } = options;
  const clientAddressOf = clientAddressResolver(options.trustForwardedFor);
  const reserved = `${headerPrefix.toLowerCase()}-`;
  const apiKeyHeader = `${headerPrefix}-API-KEY`;
  const urlHeader = `${headerPrefix}-PROXY-URL`;
  const keyHeader = `${headerPrefix}-PROXY-KEY`;
  const keyParameter = `${headerPrefix}-proxy-key`.toLowerCase();
  const statusHeader = `${headerPrefix}-PROXY-DESTINATION-STATUS`;

  return async (request, info, pathname, search, seen) => {
    const carried = PROXY_METHODS.has(request.method.toUpperCase());
    try {
      const { key: queryKey, rest: query } = takeQueryKey(search, keyParameter);
      const key = request.headers.get(keyHeader) ?? queryKey;
      const apiKey = request.headers.get(apiKeyHeader);
      if (!carried) await refuseMethod(key, apiKey, query, request, info);
      let caller: Caller | null = null;
      // A pre-configured proxy with require_auth: false is called without an API key (docs/proxies.md).
      if (key === null || apiKey !== null) {
        try {
          // A browser element's frame names its page, checked against the application's allowed_origins (docs/elements.md).
          caller = await vault.authenticate(apiKey, request.headers.get(`${headerPrefix}-PAGE-ORIGIN`));
        } catch (error) {
          throw error instanceof AuthenticationError ? new AuthenticationError(`${error.message}: send the application's key in the ${apiKeyHeader} header`) : error;
        }
        if (seen !== undefined) seen.applicationId = caller.applicationId;
      }
      const url = request.headers.get(urlHeader);
      if (key !== null && url !== null) throw ValidationError.field(urlHeader, `must not be sent with ${keyHeader}: a pre-configured proxy's destination is its own`);
      if (key === null && (url === null || url.trim() === '')) throw ValidationError.field(urlHeader, "is required: the destination's base URL (https)");
      const headers: [string, string][] = [];
      request.headers.forEach((value, name) => {
        if (!name.toLowerCase().startsWith(reserved)) headers.push([name, value]);
      });
      const call = { method: request.method, path: pathname.slice('/proxy'.length), query, headers, body: await readBody(request, maxBodyBytes), maxBodyBytes };
      const answer = key === null ? await vault.proxy(caller!, { ...call, url }) : await vault.proxy(caller, { ...call, key, clientAddress: clientAddressOf(request, info) });
      const out = new Headers();
      for (const [name, value] of answer.headers) if (!name.startsWith(reserved)) out.append(name, value);
      out.set(statusHeader, String(answer.status));
      // A status a web Response cannot carry (an informational one as final) is the destination's fault.
      const status = answer.status >= 200 && answer.status <= 599 ? answer.status : 502;
      return new Response(NULL_BODY.has(status) || request.method === 'HEAD' ? null : (answer.body as BodyInit), { status, headers: out });
    } catch (error) {
      const problem = errorResponse(error, logger, {}, headerPrefix);
      const kept = Object.entries(problem.headers).filter(([name]) => name === 'retry-after' || name === 'allow');
      return new Response(JSON.stringify({ proxy_error: JSON.parse(problem.body ?? 'null') as unknown }), {
        status: problem.status,
        headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...Object.fromEntries(kept) },
      });
    }
  };

  /**
   * A method the proxy does not carry (TRACE, CONNECT, WebDAV's, any other token): a 405 with Allow,
   * its body never read (a web Request cannot even be made for TRACE or CONNECT). An unauthenticated
   * call with a proxy key is first counted as any other is (the inbound rate limit: a flood of them
   * meets its 429), through the service, which refuses the method right after counting it.
   */
  async function refuseMethod(key: string | null, apiKey: string | null, query: string, request: Request, info: RequestInfo | undefined): Promise<never> {
    if (key !== null && apiKey === null) {
      try {
        await vault.proxy(null, { method: request.method, key, query, clientAddress: clientAddressOf(request, info), body: null });
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error;
      }
    }
    throw new RouteError('method_not_allowed', [...PROXY_METHODS]);
  }
}

/**
 * The proxy key of the query (`?<prefix>-proxy-key=`, any case), and the query without it, every
 * other parameter kept byte for byte: the key never reaches the destination.
 */
function takeQueryKey(search: string, name: string): { key: string | null; rest: string } {
  let key: string | null = null;
  const kept: string[] = [];
  for (const part of search.replace(/^\?/, '').split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const rawName = eq === -1 ? part : part.slice(0, eq);
    let decoded: string;
    try {
      decoded = decodeURIComponent(rawName.replace(/\+/g, ' ')).toLowerCase();
    } catch {
      decoded = rawName.toLowerCase();
    }
    if (decoded !== name) {
      kept.push(part);
      continue;
    }
    try {
      key = decodeURIComponent((eq === -1 ? '' : part.slice(eq + 1)).replace(/\+/g, ' '));
    } catch {
      key = '';
    }
  }
  return { key, rest: kept.join('&') };
}

async function readBody(request: Request, maxBytes: number): Promise<Uint8Array | null> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxBytes) throw new PayloadTooLargeError(maxBytes);
  if (request.body === null) return null;
  const bytes = await webBodyReader(request.body)(maxBytes);
  return bytes.byteLength === 0 ? null : bytes;
}
