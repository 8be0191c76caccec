/**
 * Where detokenization expressions may be in a proxied request (docs/proxies.md): the strings of a
 * JSON body, the values of a form body, a text body as a whole, and header values. The request is
 * turned into one JSON tree (`{ headers, body }`) so that every token it names is counted,
 * authorized and read together, exactly as `/detokenize` does, before anything is sent; then the
 * tree is turned back into headers and body bytes. A body without `{{` goes on byte for byte.
 */
import { ValidationError } from '../errors/errors.js';

type BodyKind = 'none' | 'raw' | 'json' | 'form' | 'text';

/** A request's headers and body as one tree with expressions, and how to turn it back. */
export interface ExpressionTree {
  tree: { headers: Record<string, string>; body: unknown };
  kind: BodyKind;
  /** The original bytes, sent as they are when the body holds no expression (kind 'raw'). */
  raw: Uint8Array | null;
}

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/** Builds the tree; ValidationError (400) for a JSON body that does not parse. */
export function expressionTree(headers: Record<string, string>, contentType: string | undefined, body: Uint8Array | null): ExpressionTree {
  if (body === null || body.byteLength === 0) return { tree: { headers, body: null }, kind: 'none', raw: null };
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    // Not UTF-8 (an image, a PDF): no expression can be in it.
    return { tree: { headers, body: null }, kind: 'raw', raw: body };
  }
  if (!text.includes('{{')) return { tree: { headers, body: null }, kind: 'raw', raw: body };
  const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (media === 'application/json' || media.endsWith('+json')) {
    try {
      return { tree: { headers, body: JSON.parse(text) as unknown }, kind: 'json', raw: null };
    } catch {
      throw ValidationError.field('body', 'is not valid JSON (its Content-Type says it is)');
    }
  }
  if (media === 'application/x-www-form-urlencoded') return { tree: { headers, body: [...new URLSearchParams(text)] }, kind: 'form', raw: null };
  return { tree: { headers, body: text }, kind: 'text', raw: null };
}

/** Headers and body bytes of a detokenized tree. ValidationError when a header value became unsendable. */
export function fromExpressionTree(source: ExpressionTree, detokenized: unknown): { headers: Record<string, string>; body: Uint8Array | null } {
  const { headers: tree, body } = detokenized as { headers: Record<string, unknown>; body: unknown };
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(tree)) {
    const text = asText(value);
    // Token data must not split a header into two (response splitting) or end it early.
    if (/[\r\n\0]/.test(text)) throw ValidationError.field(`headers.${name}`, 'would hold a line break or NUL after detokenization');
    headers[name] = text;
  }
  switch (source.kind) {
    case 'none':
      return { headers, body: null };
    case 'raw':
      return { headers, body: source.raw };
    case 'json':
      return { headers, body: encoder.encode(JSON.stringify(body)) };
    case 'form':
      return { headers, body: encoder.encode(new URLSearchParams((body as unknown[][]).map(([k, v]) => [asText(k), asText(v)])).toString()) };
    case 'text':
      return { headers, body: encoder.encode(asText(body)) };
  }
}

function asText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}
