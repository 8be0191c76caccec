/** Small builders for the hand-written parts of the OpenAPI document. */

/** A JSON Schema object, as it goes into the document. */
export type Schema = Record<string, unknown>;

/** A reference to a component schema. */
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const str = (description?: string, extra: Schema = {}): Schema => ({ type: 'string', ...(description ? { description } : {}), ...extra });
export const uuid = (description?: string): Schema => str(description, { format: 'uuid' });
export const dateTime = (description?: string): Schema => str(description, { format: 'date-time' });
/** An object of string values. */
export const stringMap = (description: string): Schema => ({ type: 'object', description, additionalProperties: { type: 'string' } });
/** An object whose properties are any JSON (a generated client accepts any keys). */
export const openObject = (description: string): Schema => ({ type: 'object', description, additionalProperties: true });
/** Any JSON value. */
export const anyJson = (description: string): Schema => ({ description });
/** A list response: `{ pagination, data: item[] }`. */
export const list = (item: string): Schema => ({
  type: 'object',
  required: ['pagination', 'data'],
  properties: { pagination: ref('Pagination'), data: { type: 'array', items: ref(item) } },
});
