/*
 * Basis Theory's shapes on the page (docs/elements.md, "Basis Theory Web Elements and React
 * Elements"): their errors, camelCase models over the vault's snake_case API, and their style
 * object turned into the one the frame applies (frame-style.ts).
 */
import { ElementsError } from './page.js';

/** An answer of the vault refusing a request, as Basis Theory's page API throws it. */
export class BasisTheoryApiError extends Error {
  readonly status: number;
  readonly data: unknown;
  constructor(message: string, status: number, data?: unknown) {
    super(message);
    this.name = 'BasisTheoryApiError';
    this.status = status;
    this.data = data;
  }
}

/** Elements whose values are not valid (nothing was sent), as Basis Theory's page API throws it. */
export class BasisTheoryValidationError extends Error {
  readonly details: Record<string, unknown>;
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'BasisTheoryValidationError';
    this.details = details;
  }
}

/** An error from the frames in Basis Theory's classes; the code stays readable as `data.code` / `details.code`. */
export function toBtError(error: unknown): Error {
  if (error instanceof ElementsError) {
    if (error.status !== undefined) return new BasisTheoryApiError(error.message, error.status, { code: error.code, detail: error.message });
    return new BasisTheoryValidationError(error.message, { code: error.code });
  }
  return error instanceof Error ? error : new Error(String(error));
}

/** Keys whose values are the caller's own (never renamed). */
const OPAQUE = new Set(['data', 'metadata']);

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const camel = (key: string) => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

function rename(value: unknown, name: (key: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => rename(v, name));
  if (typeof value !== 'object' || value === null || value.constructor !== Object) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [name(k), OPAQUE.has(k) ? v : rename(v, name)]));
}

/** A model the page wrote in camelCase as the API reads it (`searchIndexes` → `search_indexes`); data and metadata as given. */
export const toSnake = (model: unknown) => rename(model, snake);
/** An answer of the API as Basis Theory's models write it (`tenant_id` → `tenantId`); data and metadata as given. */
export const toCamel = (answer: unknown) => rename(answer, camel);

/** The CSS properties Basis Theory lets a page set, which the frame's own list (frame-style.ts) also allows. */
const STYLE_PROPERTIES = ['color', 'backgroundColor', 'fontFamily', 'fontSize', 'fontWeight', 'fontStyle', 'letterSpacing', 'lineHeight', 'padding', 'textAlign', 'textTransform'];

function declarations(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof value !== 'object' || value === null) return out;
  for (const property of STYLE_PROPERTIES) {
    const given = (value as Record<string, unknown>)[property];
    if (typeof given === 'string') out[property] = given;
  }
  return out;
}

/**
 * Basis Theory's `style` (`{ base: { color, ':focus': {...}, '::placeholder': {...} }, invalid,
 * complete }`) as the frame's (`{ base, focus, invalid, complete, placeholderColor }`). `empty`,
 * `container`, `fonts` and the other selectors are not applied (docs/elements.md).
 */
export function frameStyle(style: unknown): Record<string, unknown> | undefined {
  if (typeof style !== 'object' || style === null) return undefined;
  const given = style as Record<string, Record<string, unknown> | undefined>;
  const base = given['base'] ?? {};
  const placeholder = (base['::placeholder'] as Record<string, unknown> | undefined)?.['color'];
  return {
    base: declarations(base),
    focus: declarations(base[':focus']),
    invalid: declarations(given['invalid']),
    complete: declarations(given['complete']),
    ...(typeof placeholder === 'string' ? { placeholderColor: placeholder } : {}),
  };
}
