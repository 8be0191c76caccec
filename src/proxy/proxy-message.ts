/**
 * A proxied request or answer as transforms see it (docs/proxies.md, Transforms): headers by
 * lower-case name, and the body as a value (parsed JSON under a JSON content type, text otherwise)
 * that a transform reads and replaces.
 */
import { ValidationError } from '../errors/errors.js';

export interface ProxyMessage {
  headers: Record<string, string>;
  body: Uint8Array | null;
}

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

function isJson(headers: Record<string, string>): boolean {
  const media = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  return media === 'application/json' || media.endsWith('+json');
}

/** The body as a value: null when empty, parsed JSON under a JSON type, else its UTF-8 text. */
export function bodyValue(message: ProxyMessage, field: string): unknown {
  if (message.body === null || message.body.byteLength === 0) return null;
  let text: string;
  try {
    text = decoder.decode(message.body);
  } catch {
    throw ValidationError.field(field, 'reads a text or JSON body: this one is binary');
  }
  if (!isJson(message.headers)) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw ValidationError.field(field, 'reads a JSON body: this one does not parse (its Content-Type says JSON)');
  }
}

/** The message with `value` as its body: a string as it is, anything else as JSON (typed so when untyped). */
export function withBody(message: ProxyMessage, value: unknown): ProxyMessage {
  const headers = { ...message.headers };
  delete headers['content-length'];
  if (value === null || value === undefined) return { headers, body: null };
  if (typeof value === 'string') return { headers, body: encoder.encode(value) };
  headers['content-type'] ??= 'application/json';
  return { headers, body: encoder.encode(JSON.stringify(value)) };
}

/**
 * Headers a transform returned: an object of strings without line breaks (a header must not split
 * in two); names lower-cased. ValidationError naming `field` otherwise.
 */
export function checkedHeaders(value: unknown, field: string): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw ValidationError.field(field, 'must be an object of header names and string values');
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, text] of Object.entries(value as Record<string, unknown>)) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw ValidationError.field(field, `'${name.slice(0, 64)}' is not a header name`);
    if (typeof text !== 'string' || /[\r\n\0]/.test(text)) throw ValidationError.field(`${field}.${name.toLowerCase()}`, 'must be a string without line breaks');
    out[name.toLowerCase()] = text;
  }
  return out;
}
