/*
 * Where a frame fills element references in a request body (docs/elements.md, "Security model" 1).
 * A reference is filled only where the vault stores the value encrypted: a token's `data`, at exact
 * paths (`body.data` for POST /tokens; for POST /tokenize the `data` of each create body, found as
 * the vault finds them: src/tokens/tokenize-bodies.ts). Anywhere else (metadata, a key named `data`
 * inside metadata, the tokenize body around the create bodies, which the answer echoes back) the
 * value would be stored in the clear or shown back: refused. A create body carrying a reference may
 * not choose what is derived from its data or shown of it. Pure, so it is tested in node.
 */
import type { ElementRef, ElementsErrorShape, SubmitPath } from '../protocol.js';

/** Create-body fields derived from the data (`id` may be an alias expression of it) or showing it. */
export const DERIVING_FIELDS = ['id', 'mask', 'fingerprint_expression', 'search_indexes'] as const;

/** Resolves one reference to its value (the frame's own or a sibling's). */
export type ResolveRef = (ref: ElementRef) => Promise<unknown>;

const OUTSIDE: ElementsErrorShape = { code: 'element_outside_data', message: "Elements may only be placed in a token's data" };

function isRef(value: unknown): value is ElementRef {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && '$tvElement' in value;
}

function containsRef(value: unknown): boolean {
  if (isRef(value)) return true;
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).some(containsRef);
}

/** The vault's test for a tokenize create body: an object with a string `type` and a `data` key. */
function isCreateBody(value: unknown): value is Record<string, unknown> & { type: string; data: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { type?: unknown }).type === 'string' && 'data' in value;
}

/** Every reference in a token's data replaced by its value (any depth: all of it is data). */
async function fillData(value: unknown, resolve: ResolveRef): Promise<unknown> {
  if (isRef(value)) return resolve(value);
  if (Array.isArray(value)) return Promise.all(value.map((v) => fillData(v, resolve)));
  if (typeof value !== 'object' || value === null) return value;
  const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await fillData(v, resolve)] as const));
  return Object.fromEntries(entries);
}

/** One create body: references only under its top-level `data`; none of DERIVING_FIELDS set beside them. */
async function fillCreateBody(body: unknown, resolve: ResolveRef): Promise<unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || isRef(body)) {
    if (containsRef(body)) throw OUTSIDE;
    return body;
  }
  const record = body as Record<string, unknown>;
  for (const [key, value] of Object.entries(record)) if (key !== 'data' && containsRef(value)) throw OUTSIDE;
  if (!('data' in record) || !containsRef(record['data'])) return body;
  for (const field of DERIVING_FIELDS) {
    if (record[field] !== undefined && record[field] !== null) {
      throw { code: 'unsupported_field', message: `A request with elements may not set ${field}; the token type's default applies` } satisfies ElementsErrorShape;
    }
  }
  return { ...record, data: await fillData(record['data'], resolve) };
}

/** A tokenize body: each create body filled as above; a reference outside every create body is refused. */
async function fillTokenize(value: unknown, resolve: ResolveRef): Promise<unknown> {
  if (isCreateBody(value)) return fillCreateBody(value, resolve);
  if (isRef(value)) throw OUTSIDE;
  if (Array.isArray(value)) return Promise.all(value.map((v) => fillTokenize(v, resolve)));
  if (typeof value !== 'object' || value === null) return value;
  const entries = await Promise.all(Object.entries(value).map(async ([k, v]) => [k, await fillTokenize(v, resolve)] as const));
  return Object.fromEntries(entries);
}

/**
 * The body with each reference replaced by its value, or a thrown ElementsErrorShape. A token
 * intent's body is filled as a token's (its `data` is sealed the same way: docs/token-intents.md).
 */
export function assemble(path: SubmitPath, body: unknown, resolve: ResolveRef): Promise<unknown> {
  return path === '/tokenize' ? fillTokenize(body, resolve) : fillCreateBody(body, resolve);
}

/** A proxied request's body: references filled wherever they are (the destination is what the values are for). */
export function fillAnywhere(body: unknown, resolve: ResolveRef): Promise<unknown> {
  return fillData(body, resolve);
}
