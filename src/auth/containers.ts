import { ValidationError } from '../errors/errors.js';
import type { FieldErrors } from '../errors/errors.js';

/** Longest container path accepted, in characters (a guard against absurd input, not a documented limit). */
export const MAX_CONTAINER_LENGTH = 512;
/** Most containers one token may name. */
export const MAX_CONTAINERS = 100;

const CONTAINER_PATTERN = /^\/(?:[a-z0-9_-]+\/)*$/i;
const CONTAINER_RULE = "must be a path like '/pci/high/': starts and ends with '/', segments of letters, digits, '_' or '-'";

/**
 * Validates a container path and returns it lower-cased (containers are case-insensitive).
 * `/` alone is the root; empty segments (`//`) are rejected.
 * @example normalizeContainer('/PCI/High/', 'containers[0]') // '/pci/high/'
 */
export function normalizeContainer(path: unknown, field: string): string {
  const message = containerProblem(path);
  if (message !== null) throw ValidationError.field(field, message);
  return (path as string).toLowerCase();
}

/** Returns what is wrong with a container path, or null when it is valid. */
function containerProblem(path: unknown): string | null {
  if (typeof path !== 'string') return 'must be a string';
  if (path.length === 0) return 'must not be empty; ' + CONTAINER_RULE;
  if (path.length > MAX_CONTAINER_LENGTH) return `must be at most ${MAX_CONTAINER_LENGTH} characters`;
  if (!CONTAINER_PATTERN.test(path)) return CONTAINER_RULE;
  return null;
}

/**
 * Validates a list of containers (at least one), lower-cases and deduplicates it, keeping first-seen
 * order. Every bad element is reported at once, keyed `containers[i]`.
 * @example normalizeContainers(['/a/', '/A/', '/b/']) // ['/a/', '/b/']
 */
export function normalizeContainers(value: unknown, field = 'containers'): string[] {
  if (!Array.isArray(value)) throw ValidationError.field(field, 'must be an array of container paths');
  if (value.length === 0) throw ValidationError.field(field, 'must name at least one container');
  if (value.length > MAX_CONTAINERS) throw ValidationError.field(field, `must name at most ${MAX_CONTAINERS} containers`);
  const errors: FieldErrors = {};
  const seen = new Set<string>();
  value.forEach((item, index) => {
    const message = containerProblem(item);
    if (message !== null) errors[`${field}[${index}]`] = [message];
    else seen.add((item as string).toLowerCase());
  });
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return [...seen];
}

/**
 * True when `ancestor` is `path` itself or one of its ancestors (`/` is everyone's ancestor).
 * Both are expected normalized; they are lower-cased again so a caller's raw rule path cannot
 * silently fail to match.
 * @example isAncestorOrSelf('/pci/', '/pci/high/') // true
 */
export function isAncestorOrSelf(ancestor: string, path: string): boolean {
  // Paths end with '/', so a prefix match is a segment match: '/pci/' never matches '/pcie/'.
  return path.toLowerCase().startsWith(ancestor.toLowerCase());
}
