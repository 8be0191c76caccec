/**
 * What no-leak-proxy-calls.property.test.ts draws and runs against: the applications, proxies and
 * steps it draws, the transforms' code, and the destination (a fetch the test vault is given as
 * `proxy.unsafeFetch`, docs/proxies.md, Options) that records what it received and answers with
 * an echo of it plus a value of its own (`issued`: what a response tokenize or mask must hide).
 */
import fc from 'fast-check';
import type { AccessRule, Permission } from '../../src/permissions/permissions.js';
import { TOKEN_CONTAINERS, rulesOf } from './reference-model.js';
import { makerStep } from './proxy-maker-steps.js';

export const FUZZ_RUNS = Number(process.env.TOKENVAULT_FUZZ_RUNS ?? 0);
export const REQUEST_KINDS = ['code', 'tokenize'] as const;
export const RESPONSE_KINDS = ['code', 'mask', 'tokenize', 'append_json', 'append_header'] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];
export type ResponseKind = (typeof RESPONSE_KINDS)[number];

/** The callers: private applications with some of proxy:invoke, token:use and token:read, or a public one. */
export const actorSpec = fc.oneof(
  {
    arbitrary: fc.record({
      type: fc.constant('private' as const),
      permissions: fc.subarray<Permission>(['token:read']).map((p): Permission[] => ['proxy:invoke', 'token:use', ...p]),
      rules: rulesOf(['token:use', 'token:read']),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      type: fc.constant('private' as const),
      permissions: fc.subarray<Permission>(['proxy:invoke', 'token:use', 'token:read'], { minLength: 1 }),
      rules: rulesOf(['token:use', 'token:read']),
    }),
    weight: 2,
  },
  fc.record({ type: fc.constant('public' as const), permissions: fc.constant<Permission[]>(['token:create']), rules: fc.constant<AccessRule[]>([]) }),
);
/** The applications proxies are bound to: what their transforms may do is theirs. */
export const boundSpec = fc.record({
  permissions: fc.oneof(
    { arbitrary: fc.subarray<Permission>(['token:read', 'token:use']).map((p): Permission[] => ['token:create', ...p]), weight: 3 },
    fc.subarray<Permission>(['token:create', 'token:read', 'token:use'], { minLength: 1 }),
  ),
  rules: rulesOf(['token:create', 'token:read', 'token:use']),
});

const n = fc.nat(30);
const container = fc.option(fc.nat(TOKEN_CONTAINERS.length - 1), { freq: 2 });
export const proxySpec = fc.record({
  requireAuth: fc.boolean(),
  app: fc.option(n, { freq: 4 }),
  /** Bound by a private application covering the application (not an administrator): its grants stay those of binding time. */
  byBinder: fc.boolean(),
  configured: fc.boolean(),
  request: fc.shuffledSubarray([...REQUEST_KINDS]),
  requestContainer: container,
  response: fc.shuffledSubarray([...RESPONSE_KINDS]),
  responseContainer: container,
});
export type ProxySpec = typeof proxySpec extends fc.Arbitrary<infer T> ? T : never;

const via = fc.constantFrom('in-process' as const, 'header' as const, 'query' as const);
/** One call in four names another tenant's token too. */
const rarely = fc.constantFrom(false, false, false, true);
const named = fc.array(fc.record({ token: n, whole: fc.boolean() }), { maxLength: 2 });
export const step = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('token' as const), card: fc.boolean(), containers: fc.subarray([...TOKEN_CONTAINERS], { minLength: 1, maxLength: 2 }) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('ephemeral' as const), actor: n, named, foreignToken: rarely, via }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('keyed' as const),
      actor: fc.option(n, { freq: 2 }),
      proxy: n,
      key: fc.oneof({ arbitrary: fc.constant('current' as const), weight: 8 }, fc.constantFrom('rotated' as const, 'unknown' as const, 'foreign' as const)),
      named,
      foreignToken: rarely,
      probe: fc.option(n),
      failing: fc.boolean(),
      via,
    }),
    weight: 6,
  },
  fc.record({ kind: fc.constant('rotate' as const), proxy: n }),
  fc.record({ kind: fc.constant('widen' as const), app: n }),
  // The maker's key regenerated (or a bound application's), and an administrator's confirmation.
  { arbitrary: makerStep, weight: 2 },
  fc.record({ kind: fc.constant('foreign' as const), proxy: n, how: fc.constantFrom('their caller, our key', 'their caller, our token') }),
);
export type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

/**
 * Request code: reads the token the body names in `probe` through `req.bt` (the proxy's
 * application, or nothing), writes an expression naming it (which must arrive as written), adds
 * the configuration's API_KEY as the authorization header.
 */
export const REQUEST_CODE = `module.exports = async (req) => {
  const args = req.args.body || {};
  let probed = null;
  if (args.probe) {
    if (!req.bt) probed = 'no-bt';
    else { try { probed = (await req.bt.tokens.retrieve(args.probe)).data; } catch (e) { probed = 'denied'; } }
  }
  const headers = { ...req.args.headers };
  if (req.configuration.API_KEY) headers.authorization = 'Bearer ' + req.configuration.API_KEY;
  // An expression the author writes is forwarded as written: never evaluated as the caller.
  const smuggled = args.probe ? '{{ ' + args.probe + ' }}' : null;
  return { headers, body: { ...args, probed, smuggled } };
};`;
/** Response code: the same probe, over the id the destination echoed. */
export const RESPONSE_CODE = `module.exports = async (req) => {
  const body = req.args.body;
  const id = body && body.received && body.received.probe;
  let probed = null;
  if (id) {
    if (!req.bt) probed = 'no-bt';
    else { try { probed = (await req.bt.tokens.retrieve(id)).data; } catch (e) { probed = 'denied'; } }
  }
  return { body: { ...body, response_probed: probed } };
};`;

/** The transforms of a proxy as `vault.proxies.create` takes them. */
export function transformsOf(spec: ProxySpec): { request_transforms: unknown[]; response_transforms: unknown[] } {
  const containers = (c: number | null) => (c === null ? {} : { containers: [TOKEN_CONTAINERS[c]] });
  const request = spec.request.map((kind) =>
    kind === 'code'
      ? { type: 'code', code: REQUEST_CODE }
      : { type: 'tokenize', expression: JSON.stringify({ type: 'card', data: '{{ args.card }}', ...containers(spec.requestContainer) }) },
  );
  const response = spec.response.map((kind) => {
    switch (kind) {
      case 'code':
        return { type: 'code', code: RESPONSE_CODE };
      case 'mask':
        return { type: 'mask', expression: '"issued":"ISSUED-(\\d+)"', replacement: '#' };
      case 'tokenize':
        return { type: 'tokenize', expression: JSON.stringify({ type: 'token', data: '{{ args.issued }}', ...containers(spec.responseContainer) }), location: '$.issued_token' };
      case 'append_json':
        return { type: 'append_json', value: '{"via":"vault"}', location: '$.meta' };
      case 'append_header':
        return { type: 'append_header', value: 'yes', location: 'x-appended' };
    }
  });
  return { request_transforms: request, response_transforms: response };
}

/** What the destination received. */
export interface Receipt {
  url: string;
  headers: Record<string, string>;
  body: string;
  issued: string;
}

/** The destination: records each request; answers 200 (or `failWith`) with the body and x-echo header it got and a fresh `issued` value. */
export class Destination {
  readonly received: Receipt[] = [];
  failWith: number | null = null;
  #counter = 0;

  readonly fetch = (async (url: unknown, init?: RequestInit) => {
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, name) => (headers[name] = value));
    const body = init?.body ? new TextDecoder().decode(init.body as Uint8Array) : '';
    const issued = `ISSUED-${String(++this.#counter).padStart(6, '0')}${Math.random().toString().slice(2, 10)}`;
    this.received.push({ url: String(url), headers, body, issued });
    let parsed: unknown = body;
    try {
      parsed = JSON.parse(body);
    } catch {
      // Not JSON: echoed as text.
    }
    const answer = JSON.stringify({ received: parsed, header: headers['x-echo'] ?? null, issued });
    // A Range is honoured as servers do, with a 206 slice of the text (proxy-range-steps.ts).
    const range = this.failWith === null ? /^bytes=(\d*)-(\d*)$/.exec(headers['range'] ?? '') : null;
    const [first, last] = [range?.[1] ?? '', range?.[2] ?? ''];
    if (range !== null && first + last !== '') {
      const from = first === '' ? Math.max(0, answer.length - Number(last)) : Number(first);
      const to = first === '' || last === '' ? answer.length - 1 : Math.min(Number(last), answer.length - 1);
      return new Response(answer.slice(from, to + 1), { status: 206, headers: { 'content-type': 'application/json', 'content-range': `bytes ${from}-${to}/${answer.length}` } });
    }
    return new Response(answer, { status: this.failWith ?? 200, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
}
