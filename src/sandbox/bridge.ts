/**
 * Host side of the sandbox bridge: the `req.bt` function table, host error descriptions and the
 * bounded console capture. Nothing here touches QuickJS handles; values cross as JSON strings.
 */
import { ReactorError, VaultError, ValidationError, statusOf } from '../errors/errors.js';
import type { HostApiTree } from './sandbox.js';

type HostFunction = (...args: unknown[]) => Promise<unknown>;

/** One callable `req.bt` entry, called with its parent object as `this`. */
export interface ApiEntry {
  fn: HostFunction;
  parent: object;
}

const SEGMENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const MAX_TREE_DEPTH = 8;

/**
 * Flattens a host API tree into dotted paths. The sandbox receives only the path list; calls come
 * back by path and are looked up in this map, so a name from the sandbox never walks a host object
 * (no `__proto__` or `constructor` lookups on host values).
 */
export function flattenApiTree(tree: HostApiTree): Map<string, ApiEntry> {
  const out = new Map<string, ApiEntry>();
  const walk = (node: HostApiTree, prefix: string, depth: number): void => {
    if (depth > MAX_TREE_DEPTH) return;
    for (const name of Object.keys(node)) {
      if (!SEGMENT.test(name) || name === '__proto__') continue;
      const value = node[name];
      const path = prefix === '' ? name : `${prefix}.${name}`;
      if (typeof value === 'function') out.set(path, { fn: value, parent: node });
      else if (value !== null && typeof value === 'object') walk(value, path, depth + 1);
    }
  };
  walk(tree, '', 0);
  return out;
}

/** What reaches the sandbox about a failed host call: never a stack, never an internal message. */
export interface HostErrorDescription {
  name: string;
  message: string;
  status: number;
  errors?: Record<string, string[]>;
}

/**
 * A host call that failed on another thread (the main thread, for a sandbox in a worker): it
 * carries the description made there, passed on unchanged.
 */
export class DescribedHostError extends Error {
  constructor(readonly description: HostErrorDescription) {
    super(description.message);
    this.name = 'DescribedHostError';
  }
}

export function describeHostError(error: unknown, what: string): HostErrorDescription {
  if (error instanceof DescribedHostError) return error.description;
  if (error instanceof VaultError) {
    const name = error instanceof ReactorError ? error.kind : error.name;
    const description: HostErrorDescription = { name, message: error.message, status: statusOf(error) };
    if (error instanceof ValidationError) description.errors = error.errors;
    return description;
  }
  return { name: 'Error', message: `Internal error in ${what}`, status: 500 };
}

/** Bounded console capture: what does not fit in `maxBytes` (UTF-8) is cut and the rest dropped. */
export class LogBuffer {
  readonly lines: string[] = [];
  #remaining: number;
  #truncated = false;

  constructor(maxBytes: number) {
    this.#remaining = maxBytes;
  }

  get truncated(): boolean {
    return this.#truncated;
  }

  /** Records one console call; returns false once the buffer is full. */
  add(level: string, text: string): boolean {
    if (this.#truncated) return false;
    const line = level === 'warn' || level === 'error' ? `[${level}] ${text}` : text;
    const bytes = Buffer.byteLength(line);
    if (bytes <= this.#remaining) {
      this.lines.push(line);
      this.#remaining -= bytes;
      return true;
    }
    const cut = cutUtf8(line, this.#remaining);
    if (cut !== '') this.lines.push(cut);
    this.#remaining = 0;
    this.#truncated = true;
    return false;
  }
}

/** The longest prefix of `text` whose UTF-8 encoding fits in `maxBytes`, without splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
