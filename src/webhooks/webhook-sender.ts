import { performance } from 'node:perf_hooks';
import { RefusedDestinationError, parseHttpUrl, resolvePublicTarget } from '../sandbox/egress/egress-target.js';
import { sendPinned } from '../sandbox/egress/egress-transport.js';
import type { WebhookAttempt } from '../storage/store.js';
import { DELIVERY_TIMEOUT_MS } from './retry-schedule.js';
import type { SignedHeaders } from './signing-secrets.js';

/** The error of an attempt whose destination the address check refused (see RefusedDestinationError). */
export const REFUSED = 'delivery refused: the destination is not allowed';
/** Receivers answer with a status; their body is read (up to this much) and dropped. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** The result of one POST: `ok` for a 2xx, and the attempt to record (timing from performance.now, a measurement). */
export interface SendResult {
  ok: boolean;
  attempt: WebhookAttempt;
}

/**
 * POSTs one signed webhook. The host is resolved and every address checked (unless the private
 * network is allowed) at each attempt, and the connection goes to the checked address; redirects
 * are not followed (a 3xx is a failure). Never throws: refusals, timeouts (10 s) and connection
 * errors are failed attempts, described in our words (never the receiver's body); a refused
 * destination is described as just that (REFUSED).
 */
export async function sendWebhook(url: string, body: string, signed: SignedHeaders, options: { allowPrivateNetwork: boolean; now: number }): Promise<SendResult> {
  const started = performance.now();
  const done = (status: number | null, error: string | null): SendResult => ({
    ok: error === null,
    attempt: { at: options.now, status, error, durationMs: Math.round(performance.now() - started) },
  });
  try {
    const target = await resolvePublicTarget(parseHttpUrl(url), options.allowPrivateNetwork);
    const headers = { ...signed, 'content-type': 'application/json', 'user-agent': 'tokenvault-webhooks/1', 'accept-encoding': 'identity' };
    const response = await sendPinned(target, 'POST', headers, body, { timeoutMs: DELIVERY_TIMEOUT_MS, maxResponseBytes: MAX_RESPONSE_BYTES });
    if (response.status >= 200 && response.status < 300) return done(response.status, null);
    return done(response.status, `the receiver answered ${response.status}`);
  } catch (error) {
    // Refused before anything was sent: the attempt says only that (no host, no kind of address),
    // and takes no time, since the time a lookup took would tell again whether the name resolved.
    if (error instanceof RefusedDestinationError) return { ok: false, attempt: { at: options.now, status: null, error: REFUSED, durationMs: 0 } };
    const message = (error as Error).message;
    // A large answer to a 2xx would be reported as a failure here; receivers answer small.
    return done(null, message.length > 300 ? `${message.slice(0, 300)}…` : message);
  }
}
