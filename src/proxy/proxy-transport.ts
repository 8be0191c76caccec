/**
 * Sends a proxied request to its checked destination (proxy-destination.ts): to the pinned address,
 * TLS 1.2 at least, through the calling tenant's own connection pool (tenant-agents.ts: nothing is
 * reused across tenants), redirects not followed, within the time limit and the answer size limit. The answer
 * is read as bytes: the proxy returns it as the destination sent it.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { BadGatewayError, GatewayTimeoutError } from '../errors/errors.js';
import type { Target } from '../sandbox/egress/egress-target.js';
import { readLimitedBody } from '../sandbox/egress/limited-body.js';
import type { SetTimer } from './proxy-options.js';

/** The destination's answer. Header names are lower-case; a repeated header keeps every value. */
export interface DestinationResponse {
  status: number;
  headers: [string, string][];
  body: Uint8Array;
}

export interface OutgoingRequest {
  method: string;
  headers: Record<string, string>;
  body: Uint8Array | null;
}

export interface SendLimits {
  timeoutMs: number;
  maxResponseBytes: number;
  setTimer: SetTimer;
}

/**
 * Sends over node:http(s) to the target's pinned address, through `agent` (the tenant's pool; a
 * pooled connection was made to an address checked when it was made).
 */
export function sendToDestination(target: Target, request: OutgoingRequest, limits: SendLimits, agent: http.Agent | false = false): Promise<DestinationResponse> {
  const pinned = ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  }) as unknown as LookupFunction;
  const secure = target.url.protocol === 'https:';
  const headers = request.body === null ? request.headers : { ...request.headers, 'content-length': String(request.body.byteLength) };
  return new Promise<DestinationResponse>((resolve, reject) => {
    let settled = false;
    let cancelTimer: () => void = () => undefined;
    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      cancelTimer();
      outcome();
    };
    const fail = (error: Error): void => finish(() => reject(error));
    let req: http.ClientRequest;
    try {
      const options = { method: request.method, headers, lookup: pinned, agent };
      req = secure ? https.request(target.url, { ...options, minVersion: 'TLSv1.2', servername: target.host }) : http.request(target.url, options);
    } catch {
      reject(new BadGatewayError('The request could not be sent: a header name or value is not allowed'));
      return;
    }
    cancelTimer = limits.setTimer(limits.timeoutMs, () => {
      fail(new GatewayTimeoutError(`The destination '${target.host}' did not answer within ${limits.timeoutMs} ms`));
      req.destroy();
    });
    req.on('error', (error: NodeJS.ErrnoException) =>
      fail(new BadGatewayError(`The destination '${target.host}' could not be reached${error.code === undefined ? '' : ` (${error.code})`}`)),
    );
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > limits.maxResponseBytes) {
          fail(new BadGatewayError(`The answer of '${target.host}' exceeds the limit of ${limits.maxResponseBytes} bytes`));
          res.destroy();
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', () => fail(new BadGatewayError(`The destination '${target.host}' broke off its answer`)));
      res.on('end', () => finish(() => resolve({ status: res.statusCode ?? 502, headers: headerPairs(res.rawHeaders), body: Buffer.concat(chunks) })));
    });
    req.end(request.body ?? undefined);
  });
}

/** Sends through a fetch function (a test's, or an embedder's), after the same checks; redirects are not followed. */
export async function sendWithFetch(fetchImpl: typeof fetch, target: Target, request: OutgoingRequest, limits: SendLimits): Promise<DestinationResponse> {
  const controller = new AbortController();
  let timedOut = false;
  const cancel = limits.setTimer(limits.timeoutMs, () => {
    timedOut = true;
    controller.abort();
  });
  const failure = () =>
    timedOut
      ? new GatewayTimeoutError(`The destination '${target.host}' did not answer within ${limits.timeoutMs} ms`)
      : new BadGatewayError(`The destination '${target.host}' could not be reached`);
  try {
    let response: Response;
    try {
      response = await fetchImpl(target.url, {
        method: request.method,
        headers: request.headers,
        body: request.body as BodyInit | null,
        redirect: 'manual',
        signal: controller.signal,
      });
    } catch {
      throw failure();
    }
    let bytes: Buffer | 'over';
    try {
      bytes = await readLimitedBody(response.body, limits.maxResponseBytes);
    } catch {
      throw failure();
    }
    if (bytes === 'over') throw new BadGatewayError(`The answer of '${target.host}' exceeds the limit of ${limits.maxResponseBytes} bytes`);
    const headers: [string, string][] = [];
    // fetch has already decoded the body: its content-encoding no longer describes the bytes.
    response.headers.forEach((value, name) => {
      if (name.toLowerCase() !== 'content-encoding') headers.push([name.toLowerCase(), value]);
    });
    return { status: response.status, headers, body: bytes };
  } finally {
    cancel();
  }
}

function headerPairs(raw: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i]!.toLowerCase(), raw[i + 1]!]);
  return pairs;
}
