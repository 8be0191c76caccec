/**
 * A small structural check of a value against a component schema of the OpenAPI document: required
 * properties are present, no property is undeclared, and declared types hold (recursing through
 * $ref, arrays, oneOf). Enough to keep the hand-written schemas honest about real responses.
 */
export function checkShape(doc: any, name: string, value: unknown, path = name): void {
  check(doc, { $ref: `#/components/schemas/${name}` }, value, path);
}

function resolve(doc: any, schema: any): any {
  while (schema && schema.$ref) {
    const name = String(schema.$ref).replace('#/components/schemas/', '');
    schema = doc.components.schemas[name];
    if (!schema) throw new Error(`unresolved ${name}`);
  }
  return schema;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function check(doc: any, raw: any, value: unknown, path: string): void {
  const schema = resolve(doc, raw);
  if (schema.oneOf) {
    const fits = schema.oneOf.filter((option: any) => {
      try {
        check(doc, option, value, path);
        return true;
      } catch {
        return false;
      }
    });
    if (fits.length === 0) throw new Error(`${path}: matches no oneOf option`);
    return;
  }
  if (schema.enum && !schema.enum.includes(value)) throw new Error(`${path}: not in enum`);
  if (schema.const !== undefined && schema.const !== value) throw new Error(`${path}: not the const`);
  if (schema.type) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
    const actual = typeOf(value);
    const ok = types.includes(actual) || (actual === 'integer' && types.includes('number'));
    if (!ok) throw new Error(`${path}: is ${actual}, declared ${types.join('|')}`);
  }
  if (typeOf(value) === 'object' && schema.type === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of schema.required ?? []) if (!(key in record)) throw new Error(`${path}: missing required ${key}`);
    if (schema.properties) {
      for (const [key, item] of Object.entries(record)) {
        const declared = schema.properties[key];
        if (!declared) {
          if (schema.additionalProperties === undefined || schema.additionalProperties === false) throw new Error(`${path}: undeclared property ${key}`);
          continue;
        }
        check(doc, declared, item, `${path}.${key}`);
      }
    } else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
      for (const [key, item] of Object.entries(record)) check(doc, schema.additionalProperties, item, `${path}.${key}`);
    }
  }
  if (Array.isArray(value) && schema.items) value.forEach((item, i) => check(doc, schema.items, item, `${path}[${i}]`));
}
