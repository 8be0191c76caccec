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
import { errorResponse } from './problem.js';

export interface ProxyHandlerOptions {
  headerPrefix: string;
  maxBodyBytes: number;
  logger: Logger;
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

export function createProxyHandler(vault: Vault, options: ProxyHandlerOptions): (request: Request, pathname: string, search: string, seen?: ProxySeen) => Promise<Response> {
  const { headerPrefix, maxBodyBytes, logger } = options;
  const reserved = `${headerPrefix.toLowerCase()}-`;
  const apiKeyHeader = `${headerPrefix}-API-KEY`;
  const urlHeader = `${headerPrefix}-PROXY-URL`;
  const statusHeader = `${headerPrefix}-PROXY-DESTINATION-STATUS`;

  return async (request, pathname, search, seen) => {
    try {
      let caller: Caller;
      try {
        caller = await vault.authenticate(request.headers.get(apiKeyHeader));
      } catch (error) {
        throw error instanceof AuthenticationError ? new AuthenticationError(`${error.message}: send the application's key in the ${apiKeyHeader} header`) : error;
      }
      if (seen !== undefined) seen.applicationId = caller.applicationId;
      const url = request.headers.get(urlHeader);
      if (url === null || url.trim() === '') throw ValidationError.field(urlHeader, "is required: the destination's base URL (https)");
      const headers: [string, string][] = [];
      request.headers.forEach((value, name) => {
        if (!name.toLowerCase().startsWith(reserved)) headers.push([name, value]);
      });
      const answer = await vault.proxy(caller, {
        method: request.method,
        url,
        path: pathname.slice('/proxy'.length),
        query: search,
        headers,
        body: await readBody(request, maxBodyBytes),
      });
      const out = new Headers();
      for (const [name, value] of answer.headers) if (!name.startsWith(reserved)) out.append(name, value);
      out.set(statusHeader, String(answer.status));
      // A status a web Response cannot carry (an informational one as final) is the destination's fault.
      const status = answer.status >= 200 && answer.status <= 599 ? answer.status : 502;
      return new Response(NULL_BODY.has(status) || request.method === 'HEAD' ? null : (answer.body as BodyInit), { status, headers: out });
    } catch (error) {
      const problem = errorResponse(error, logger, {}, headerPrefix);
      return new Response(JSON.stringify({ proxy_error: JSON.parse(problem.body ?? 'null') as unknown }), {
        status: problem.status,
        headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
      });
    }
  };
}

async function readBody(request: Request, maxBytes: number): Promise<Uint8Array | null> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > maxBytes) throw new PayloadTooLargeError(maxBytes);
  if (request.body === null) return null;
  const bytes = await webBodyReader(request.body)(maxBytes);
  return bytes.byteLength === 0 ? null : bytes;
}
