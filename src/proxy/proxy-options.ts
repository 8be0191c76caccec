/**
 * Options of the ephemeral proxy (docs/proxies.md), checked once when the vault is created. The
 * destination rules that are not options (https, DNS names, public addresses, no redirects) are
 * in proxy-destination.ts.
 */
import * as v from 'valibot';
import { validationFromIssues } from '../validation/issues.js';
import type { RateLimit } from './proxy-rate-limit.js';

/** Starts a timer that calls `fire` after `ms`; returns what cancels it. Tests inject one they fire themselves. */
export type SetTimer = (ms: number, fire: () => void) => () => void;

export interface ProxyOptions {
  /** Turns `/proxy` off for every tenant (default true: on). */
  ephemeral?: boolean;
  /** Tenants for which the ephemeral proxy is off (the others keep it). */
  ephemeralDisabledTenants?: string[];
  /** Distinct tokens one proxied request may detokenize (default 20, at most 100). */
  maxTokens?: number;
  /** How long the destination may take to answer, whole (default 25 000 ms). */
  timeoutMs?: number;
  /** Largest destination answer accepted (default 4 MiB); larger is a 502. */
  maxResponseBytes?: number;
  /** Destination ports allowed for https (default [443, 8443]). */
  allowPorts?: number[];
  /**
   * Sends the request through this function instead of node:https (a test's fake destination).
   * UNSAFE, hence the name: the URL rules (https, DNS name, no credentials, allowed port) still
   * hold, but the vault resolves no name and checks no address, so this function alone decides
   * whether `https://metadata.google.internal/` or an intranet name is reached. Never give it a
   * real network fetch in production (docs/proxies.md, In-process, and in tests).
   */
  unsafeFetch?: typeof fetch;
  /** Refused: the earlier name of `unsafeFetch`, which read as if the address check still ran. */
  fetch?: never;
  /** Timer of the upstream time limit (default setTimeout). */
  setTimer?: SetTimer;
  /**
   * Unauthenticated calls of inbound proxies (`require_auth: false`): at most `perKey` calls of one
   * proxy and `perAddress` calls from one client address per window (defaults 100 and 20 per
   * second); past that a 429 with Retry-After.
   */
  inboundRateLimit?: { perKey?: RateLimit; perAddress?: RateLimit };
}

export interface ResolvedProxyOptions {
  ephemeral: boolean;
  ephemeralDisabledTenants: ReadonlySet<string>;
  maxTokens: number;
  timeoutMs: number;
  maxResponseBytes: number;
  allowPorts: ReadonlySet<number>;
  unsafeFetch: typeof fetch | undefined;
  setTimer: SetTimer;
  inboundRateLimit: { perKey: RateLimit; perAddress: RateLimit };
}

export const DEFAULT_PROXY_MAX_TOKENS = 20;
export const DEFAULT_PROXY_TIMEOUT_MS = 25_000;
export const DEFAULT_PROXY_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_INBOUND_RATE_LIMIT = Object.freeze({ perKey: Object.freeze({ requests: 100, windowMs: 1000 }), perAddress: Object.freeze({ requests: 20, windowMs: 1000 }) });
export const DEFAULT_PROXY_PORTS: readonly number[] = Object.freeze([443, 8443]);

const Limit = v.strictObject({
  requests: v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'), v.maxValue(1_000_000, 'must be at most 1000000')),
  windowMs: v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'), v.maxValue(86_400_000, 'must be at most 86400000 (a day)')),
});

const port = v.pipe(v.number(), v.integer('must be whole numbers'), v.minValue(1, 'must be ports (1-65535)'), v.maxValue(65535, 'must be ports (1-65535)'));

export const ProxyOptionsSchema = v.strictObject({
  ephemeral: v.optional(v.boolean()),
  ephemeralDisabledTenants: v.optional(v.array(v.pipe(v.string(), v.minLength(1, 'must not be empty')))),
  maxTokens: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'), v.maxValue(100, 'must be at most 100'))),
  timeoutMs: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'), v.maxValue(120_000, 'must be at most 120000'))),
  maxResponseBytes: v.optional(
    v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'), v.maxValue(64 * 1024 * 1024, 'must be at most 64 MiB')),
  ),
  allowPorts: v.optional(v.pipe(v.array(port), v.minLength(1, 'must list at least one port'))),
  unsafeFetch: v.optional(v.custom<typeof fetch>((f) => typeof f === 'function', 'must be a fetch function')),
  fetch: v.optional(v.custom<never>(() => false, 'is now named unsafeFetch: a supplied fetch resolves names itself, so no address check runs')),
  setTimer: v.optional(v.custom<SetTimer>((f) => typeof f === 'function', 'must be a function (ms, fire) => cancel')),
  inboundRateLimit: v.optional(v.strictObject({ perKey: v.optional(Limit), perAddress: v.optional(Limit) })),
});

const systemTimer: SetTimer = (ms, fire) => {
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
};

/** Checks and completes the options (ValidationError naming `options.proxy.<field>`). */
export function resolveProxyOptions(options: ProxyOptions | undefined): ResolvedProxyOptions {
  const parsed = v.safeParse(ProxyOptionsSchema, options ?? {});
  if (!parsed.success) throw validationFromIssues(parsed.issues, 'options.proxy');
  const o = parsed.output;
  return Object.freeze({
    ephemeral: o.ephemeral ?? true,
    ephemeralDisabledTenants: new Set(o.ephemeralDisabledTenants ?? []),
    maxTokens: o.maxTokens ?? DEFAULT_PROXY_MAX_TOKENS,
    timeoutMs: o.timeoutMs ?? DEFAULT_PROXY_TIMEOUT_MS,
    maxResponseBytes: o.maxResponseBytes ?? DEFAULT_PROXY_MAX_RESPONSE_BYTES,
    allowPorts: new Set(o.allowPorts ?? DEFAULT_PROXY_PORTS),
    unsafeFetch: o.unsafeFetch,
    setTimer: o.setTimer ?? systemTimer,
    inboundRateLimit: {
      perKey: o.inboundRateLimit?.perKey ?? DEFAULT_INBOUND_RATE_LIMIT.perKey,
      perAddress: o.inboundRateLimit?.perAddress ?? DEFAULT_INBOUND_RATE_LIMIT.perAddress,
    },
  });
}
