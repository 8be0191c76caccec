/**
 * JSON Merge Patch (RFC 7386): `null` in the patch deletes a key, an object patch merges recursively,
 * anything else (arrays included) replaces. Neither input is mutated and the result shares no
 * objects or arrays with them, so callers may change it freely.
 * @example mergePatch({ a: 1, b: 2 }, { b: null, c: 3 }) // { a: 1, c: 3 }
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return cloneJson(patch);
  const base = isJsonObject(target) ? target : {};
  const result = new Map<string, unknown>();
  for (const [key, value] of Object.entries(base)) result.set(key, value);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) result.delete(key);
    else result.set(key, mergePatch(result.get(key), value));
  }
  // Untouched target values still need copying; patched ones were built fresh by mergePatch.
  // Object.fromEntries defines own properties, so a "__proto__" key stays data, never a prototype.
  return Object.fromEntries([...result].map(([key, value]) => [key, Object.hasOwn(patch, key) ? value : cloneJson(value)]));
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function cloneJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(cloneJson);
  if (isJsonObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cloneJson(v)]));
  return value;
}
