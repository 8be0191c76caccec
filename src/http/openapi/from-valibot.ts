import { type ConversionConfig, type JsonSchema, toJsonSchema, toJsonSchemaDefs } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import { Configuration } from '../../reactors/reactor-input.js';
import type { Schema } from './schema-helpers.js';

type AnySchema = v.BaseSchema<unknown, unknown, v.BaseIssue<unknown>>;

/** What a generated schema needs besides what valibot expresses (attributes checked by hand). */
export interface SchemaPatch {
  description?: string;
  /** Properties added or replaced: those the service checks by hand (data, metadata, containers…). */
  properties?: Record<string, Schema>;
  /** Names added to `required`. */
  required?: string[];
  /** Set when the service refuses unknown attributes by hand around a non-strict valibot object. */
  additionalProperties?: false;
}

/**
 * Custom checks toJsonSchema cannot read, by identity: what each one accepts, in JSON Schema.
 * Everything else is converted from the valibot schema itself.
 */
const CUSTOM: ReadonlyMap<AnySchema, Schema> = new Map<AnySchema, Schema>([
  [Configuration as AnySchema, { type: 'object', additionalProperties: true, description: 'Configuration names and values.' }],
]);

const CONFIG = {
  target: 'draft-2020-12',
  // Input types: a request body is what the client sends, before valibot's transforms.
  typeMode: 'input',
  // Checks without a JSON Schema form (trim, custom predicates) are left to the server's 400.
  errorMode: 'ignore',
  overrideSchema: ({ valibotSchema }) => CUSTOM.get(valibotSchema) as JsonSchema | undefined,
} as const satisfies ConversionConfig;

/**
 * Converts a request-body valibot schema to the document's JSON Schema. Shared sub-schemas given in
 * `definitions` become references to the component of that name.
 */
export function fromValibot(schema: AnySchema, patch: SchemaPatch = {}, definitions: Record<string, AnySchema> = {}): Schema {
  const converted = forDocument(toJsonSchema(schema, { ...CONFIG, definitions }) as Schema);
  if (patch.description) converted['description'] = patch.description;
  if (patch.properties) converted['properties'] = { ...(converted['properties'] as Schema | undefined), ...patch.properties };
  if (patch.required) converted['required'] = [...new Set([...((converted['required'] as string[] | undefined) ?? []), ...patch.required])];
  if (patch.additionalProperties === false) converted['additionalProperties'] = false;
  return converted;
}

/** Converts shared sub-schemas (each becomes a component of its name). */
export function definitionsFromValibot(definitions: Record<string, AnySchema>): Record<string, Schema> {
  const converted = toJsonSchemaDefs(definitions, CONFIG) as Record<string, Schema>;
  return Object.fromEntries(Object.entries(converted).map(([name, schema]) => [name, forDocument(schema)]));
}

/**
 * Adapts a converted schema to the document: `$defs` references point at components; `$schema` and
 * `$defs` go (the document's dialect applies); a `default` moves into the description, because
 * generators (openapi-typescript) make a property with a default required, and a client need not
 * send what has a default.
 */
function forDocument(schema: Schema): Schema {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object') return node;
    const out: Schema = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$schema' || key === '$defs' || key === 'default') continue;
      if (key === '$ref' && typeof value === 'string') out[key] = value.replace('#/$defs/', '#/components/schemas/');
      else out[key] = walk(value);
    }
    if ('default' in node) {
      const note = `Default: ${JSON.stringify((node as Schema)['default'])}.`;
      out['description'] = typeof out['description'] === 'string' ? `${out['description']} ${note}` : note;
    }
    return out;
  };
  return walk(schema) as Schema;
}
