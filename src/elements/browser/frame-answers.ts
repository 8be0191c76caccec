/*
 * What a frame answers with (frame.ts): the vault's errors in our shape, an element's combined state,
 * and answers scrubbed of the values the frame sent, so the page never receives one back.
 */
import type { ElementsErrorShape } from '../protocol.js';
import type { Field } from './frame-fields.js';

export function problemToError(status: number, text: string): ElementsErrorShape {
  try {
    const parsed = JSON.parse(text) as { type?: string; detail?: string; title?: string; proxy_error?: unknown };
    // The proxy wraps its own refusals (docs/proxies.md).
    const problem = (typeof parsed.proxy_error === 'object' && parsed.proxy_error !== null ? parsed.proxy_error : parsed) as { type?: string; detail?: string; title?: string };
    const code = typeof problem.type === 'string' ? problem.type.replace(/^urn:tokenvault:problem:/, '').replace(/-/g, '_') : 'request_failed';
    return { code, message: String(problem.detail ?? problem.title ?? 'The vault refused the request'), status };
  } catch {
    return { code: 'request_failed', message: `The vault answered ${status}`, status };
  }
}

export function apiKeyOf(message: { apiKey?: unknown }): string | undefined {
  return typeof message.apiKey === 'string' && message.apiKey.length > 0 && message.apiKey.length <= 512 ? message.apiKey : undefined;
}

export function combinedState(fields: Field[]): { empty: boolean; complete: boolean; valid: boolean; errors: string[]; cardBrand?: string } {
  const states = fields.map((f) => f.state());
  const brand = states.find((s) => s.cardBrand !== undefined)?.cardBrand;
  const out = {
    empty: states.every((s) => s.empty),
    complete: states.every((s) => s.complete),
    valid: states.every((s) => s.valid),
    errors: [...new Set(states.flatMap((s) => s.errors))],
  };
  return brand === undefined ? out : { ...out, cardBrand: brand };
}

export function collectSecrets(value: unknown, into: string[]): void {
  if (typeof value === 'string' && value.length > 0) into.push(value);
  else if (typeof value === 'object' && value !== null)
    for (const [k, v] of Object.entries(value)) if (k !== 'expiration_month' && k !== 'expiration_year' && k !== 'month' && k !== 'year') collectSecrets(v, into);
}

/** The vault's answer without any string holding a submitted value (what a revealing caller's answer would show). */
export function scrub(value: unknown, secrets: string[]): unknown {
  if (typeof value === 'string') {
    const digits = value.replace(/\D/g, '');
    return secrets.some((s) => s === value || (s.length >= 12 && /^\d+$/.test(s) && digits.includes(s))) ? undefined : value;
  }
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value)
        .map(([k, v]) => [k, scrub(v, secrets)])
        .filter(([, v]) => v !== undefined),
    );
  return value;
}

export function scrubError(error: unknown, secrets: string[]): ElementsErrorShape {
  const shape = asError(error);
  let message = shape.message;
  for (const s of secrets) message = message.split(s).join('[value]');
  return { ...shape, message };
}

export function asError(error: unknown): ElementsErrorShape {
  if (typeof error === 'object' && error !== null && typeof (error as ElementsErrorShape).code === 'string') {
    const e = error as ElementsErrorShape;
    return { code: e.code, message: String(e.message).slice(0, 500), ...(e.status !== undefined ? { status: e.status } : {}) };
  }
  return { code: 'internal_error', message: 'The element failed' };
}
