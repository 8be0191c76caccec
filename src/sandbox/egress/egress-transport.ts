/** Sending a request to a checked target (egress-target.ts), within its time and response-size limits. */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Target } from './egress-target.js';
import { readLimitedBody } from './limited-body.js';
import type { HostFetchResponse } from '../sandbox.js';

/** Time and response-size limits of one request. */
export interface Limits {
  timeoutMs: number;
  maxResponseBytes: number;
}

/**
 * Sends one request over node:http(s) to the target's checked address (pinned lookup, no agent,
 * redirects not followed), within the limits; the response body is read as text.
 */
export function sendPinned(target: Target, method: string, headers: Record<string, string>, body: string | null, limits: Limits): Promise<HostFetchResponse> {
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
    req.on('error', (error: NodeJS.ErrnoException) => fail(new Error(`Request to '${target.host}' failed${error.code === undefined ? '' : ` (${error.code})`}`)));
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

export async function sendWithFetch(
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
    throw new Error(signal.aborted ? `Request to '${target.host}' timed out after ${limits.timeoutMs} ms` : `Request to '${target.host}' failed`);
  }
  let bytes: Buffer | 'over';
  try {
    bytes = await readLimitedBody(response.body, limits.maxResponseBytes);
  } catch {
    throw new Error(signal.aborted ? `Request to '${target.host}' timed out after ${limits.timeoutMs} ms` : `Request to '${target.host}' failed while reading the response`);
  }
  if (bytes === 'over') throw new Error(`Response from '${target.host}' exceeds the limit of ${limits.maxResponseBytes} bytes`);
  const entries: [string, string][] = [];
  response.headers.forEach((value, name) => entries.push([name, value]));
  return {
    status: response.status,
    statusText: response.statusText,
    headers: responseHeaders(entries),
    body: bytes.toString('utf8'),
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
