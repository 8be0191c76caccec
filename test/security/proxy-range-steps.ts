/**
 * Ranged answers in the proxy-call property (no-leak-proxy-calls.property.test.ts;
 * docs/proxies.md, Whole answers): an anonymous caller of a keyed proxy asks for a slice of the
 * answer (`Range`, with `If-Range`), and the destination (proxy-call-fixtures.ts) honours it with a
 * 206 of its JSON text whenever a Range reaches it. The model:
 * - a proxy with response transforms forwards no Range: the destination never receives one, and
 *   no 206 comes back through it;
 * - where a response `mask` or `tokenize` hides the destination's `issued` value, no eight of its
 *   digits in a row reach the caller (a slice masked on its own would show them), in the answer or
 *   in an error; nor does the log;
 * - a proxy without response transforms passes the 206 on as the destination sent it;
 * - a proxy that needs an API key refuses the anonymous call and sends nothing.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { type PProxy, type Shared, call, cardNumber, checkShown } from './proxy-call-harness.js';

export const rangedStep = fc.record({
  kind: fc.constant('ranged' as const),
  proxy: fc.nat(30),
  /** A suffix (`bytes=-n`: the answer's end, where `issued` is) or a span from a drawn offset. */
  range: fc.oneof(
    fc.integer({ min: 8, max: 48 }).map((n) => `bytes=-${n}`),
    fc.tuple(fc.nat(120), fc.integer({ min: 1, max: 24 })).map(([from, length]) => `bytes=${from}-${from + length - 1}`),
  ),
  via: fc.constantFrom('in-process' as const, 'header' as const, 'query' as const),
});
export type RangedStep = typeof rangedStep extends fc.Arbitrary<infer T> ? T : never;

/** The draws of the property's steps with ranged calls among them, one in eight. */
export function withRanged<T>(step: fc.Arbitrary<T>): fc.Arbitrary<T | RangedStep> {
  return fc.oneof({ arbitrary: step, weight: 7 }, { arbitrary: rangedStep, weight: 1 });
}

export function isRanged(step: unknown): step is RangedStep {
  return (step as { kind?: unknown }).kind === 'ranged';
}

/** Whether `text` holds eight digits in a row of `issued`'s digits. */
function showsDigits(text: string, issued: string): boolean {
  const digits = issued.replace(/\D/g, '');
  for (let i = 0; i + 8 <= digits.length; i++) if (text.includes(digits.slice(i, i + 8))) return true;
  return false;
}

export async function runRangedStep(shared: Shared, proxies: readonly PProxy[], s: RangedStep): Promise<void> {
  const proxy = proxies[s.proxy % proxies.length]!;
  const label = JSON.stringify(s);
  const card = cardNumber();
  shared.secrets.add(card);
  shared.destination.failWith = null;
  const sentBefore = shared.destination.received.length;
  const logsBefore = shared.logged.length;
  const body = JSON.stringify({ refs: [], card: { number: card, expiration_month: 12, expiration_year: 2031 } });
  const outcome = await call(shared, s.via, null, { key: proxy.key, headers: { 'content-type': 'application/json', range: s.range, 'if-range': '"v1"' }, body });
  const received = shared.destination.received.slice(sentBefore);
  if (proxy.spec.requireAuth) {
    expect([outcome.ok, received.length], `${label}: an anonymous call of a proxy that needs an API key`).toEqual([false, 0]);
    return;
  }
  const { response } = proxy.spec;
  const transformed = response.length > 0;
  const hides = response.includes('mask') || response.includes('tokenize');
  const receipt = received.at(-1);
  if (receipt !== undefined) {
    shared.secrets.add(receipt.issued);
    expect(receipt.headers['range'] !== undefined, `${label}: a Range reaches the destination`).toBe(!transformed);
    expect(receipt.headers['if-range'] !== undefined, `${label}: an If-Range reaches the destination`).toBe(!transformed);
    if (transformed && outcome.ok) expect(outcome.status, `${label}: a transformed proxy passes on a 206`).not.toBe(206);
    if (!transformed) expect([outcome.ok, outcome.status], `${label}: an untransformed proxy passes the 206 on`).toEqual([true, 206]);
    if (hides) expect(showsDigits(outcome.text, receipt.issued), `${label}: digits past the ${response.join(', ')} reach the caller: ${outcome.text.slice(0, 200)}`).toBe(false);
  }
  const allowed = new Set([card, ...(receipt !== undefined && !hides ? [receipt.issued] : [])]);
  checkShown(shared, `${label}: the caller's answer`, outcome.text, allowed);
  const logged = shared.logged.slice(logsBefore).join('\n');
  checkShown(shared, `${label}: the log`, logged, new Set());
  if (receipt !== undefined) expect(showsDigits(logged, receipt.issued), `${label}: the log shows the destination's digits`).toBe(false);
}
