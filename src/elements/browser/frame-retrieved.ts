/*
 * Values a frame read from the vault for another element to show (Basis Theory's reveal:
 * `tokens.retrieve` with a session key, then `element.setValue(token.data.number)`). The frame keeps
 * the data; the page receives the token with each value of its data replaced by a DataRef naming
 * this frame, a correlation and a path, which only another frame of this page, instance and key can
 * turn back into the value (frame.ts, `collect`).
 */
import type { DataRef } from '../protocol.js';

/** Most values one frame keeps at a time (each retrieve adds one token's data). */
const MAX_KEPT = 100;

export class RetrievedValues {
  readonly #kept = new Map<string, unknown>();

  /** Keeps `data` and returns it with every leaf replaced by a reference (the whole value, when it is one). */
  keep(data: unknown, elementId: string): unknown {
    const correlationId = crypto.randomUUID();
    if (this.#kept.size >= MAX_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    this.#kept.set(correlationId, data);
    const refs = (value: unknown, path: string[]): unknown => {
      if (Array.isArray(value)) return value.map((v, i) => refs(v, [...path, String(i)]));
      if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, refs(v, [...path, k])]));
      return { correlationId, elementId, path: path.join('.') } satisfies DataRef;
    };
    return refs(data, []);
  }

  /** The value a reference names, or undefined when this frame keeps none such. */
  value(correlationId: string, path: string): unknown {
    if (!this.#kept.has(correlationId)) return undefined;
    let at: unknown = this.#kept.get(correlationId);
    for (const step of path === '' ? [] : path.split('.')) {
      if (typeof at !== 'object' || at === null || !Object.hasOwn(at, step)) return undefined;
      at = (at as Record<string, unknown>)[step];
    }
    return at;
  }
}

export function isDataRef(value: unknown): value is DataRef {
  if (typeof value !== 'object' || value === null) return false;
  const ref = value as Partial<DataRef>;
  return typeof ref.correlationId === 'string' && typeof ref.elementId === 'string' && typeof ref.path === 'string';
}
