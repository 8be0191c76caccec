import { deepFreeze } from '../common/frozen.js';
import { TOKEN_TYPES } from '../tokens/token-types.js';
import type { DeletedTokenRecord, StoredToken } from './store.js';
import { hashListBytes, hashListText, nullableHashBytes, nullableHashText } from './token-bytes.js';
import { maskText } from './token-values.js';

/**
 * The lean form of a token's columns, shared by both stores (ARCHITECTURE.md, Storage). A column
 * that holds its type's default is NULL: most tokens carry their type's mask, fingerprint expression
 * and container, no metadata and no search indexes, and a copy of those in every row was most of its
 * bytes. The defaults are therefore part of the schema: changing a type's default in
 * tokens/token-types.ts needs a migration that writes the old default into the rows that held it.
 *
 * - fingerprint_expression: NULL is the type's default, or no expression when `flags` says so;
 * - mask: JSON; NULL is the type's default, the text `null` no mask;
 * - containers: JSON array; NULL is [the type's default container];
 * - metadata: JSON object as given; NULL is {};
 * - search_indexes: JSON array; NULL is [];
 * - fingerprint, search_hashes: binary (token-bytes.ts); NULL is none;
 * - flags: bit 0 deduplicate, bit 1 the fingerprint expression is null.
 */
export interface LeanTokenColumns {
  fingerprint: Buffer | null;
  fingerprintExpression: string | null;
  mask: string | null;
  containers: string | null;
  metadata: string | null;
  searchIndexes: string | null;
  searchHashes: Buffer | null;
  flags: number;
}

const DEDUPLICATE = 1;
const NO_FINGERPRINT_EXPRESSION = 2;

/** A type's defaults, parsed once per type (not once per row) and shared frozen by every token read. */
interface TypeDefaults {
  fingerprintExpression: string | null;
  mask: unknown;
  maskText: string | null;
  containers: readonly string[] | null;
  containersText: string | null;
}

const NONE: TypeDefaults = Object.freeze({ fingerprintExpression: null, mask: undefined, maskText: null, containers: null, containersText: null });
const defaultsByType = new Map<string, TypeDefaults>();
for (const [name, definition] of TOKEN_TYPES) {
  const containers = deepFreeze([definition.defaultContainer]);
  defaultsByType.set(
    name,
    Object.freeze({
      fingerprintExpression: definition.defaultFingerprintExpression,
      mask: deepFreeze(definition.defaultMask),
      maskText: JSON.stringify(definition.defaultMask),
      containers,
      containersText: JSON.stringify(containers),
    }),
  );
}

const EMPTY_METADATA: Record<string, string> = Object.freeze({}) as Record<string, string>;
const EMPTY_LIST: string[] = Object.freeze([]) as unknown as string[];

function defaultsOf(type: string): TypeDefaults {
  return defaultsByType.get(type) ?? NONE;
}

/** The lean columns of a token (see LeanTokenColumns). */
export function leanColumns(token: StoredToken): LeanTokenColumns {
  const defaults = defaultsOf(token.type);
  const expression = token.fingerprintExpression ?? null;
  const mask = maskText(token.mask) ?? 'null';
  const containers = JSON.stringify(token.containers ?? []);
  const metadata = token.metadata ?? {};
  const searchIndexes = token.searchIndexes ?? [];
  return {
    fingerprint: nullableHashBytes(token.fingerprint),
    fingerprintExpression: expression === null || expression === defaults.fingerprintExpression ? null : expression,
    mask: mask === defaults.maskText ? null : mask,
    containers: containers === defaults.containersText ? null : containers,
    metadata: Object.keys(metadata).length === 0 ? null : JSON.stringify(metadata),
    searchIndexes: searchIndexes.length === 0 ? null : JSON.stringify(searchIndexes),
    searchHashes: hashListBytes(token.searchHashes),
    flags: (token.deduplicate === true ? DEDUPLICATE : 0) | (expression === null ? NO_FINGERPRINT_EXPRESSION : 0),
  };
}

/** The values of `leanColumns` in the order of LEAN_COLUMN_NAMES. */
export function leanValues(token: StoredToken): unknown[] {
  const c = leanColumns(token);
  return [c.fingerprint, c.fingerprintExpression, c.mask, c.containers, c.metadata, c.searchIndexes, c.searchHashes, c.flags];
}

/** The lean columns in the order leanValues gives them and tokenFields reads them. */
export const LEAN_COLUMN_NAMES = ['fingerprint', 'fingerprint_expression', 'mask', 'containers', 'metadata', 'search_indexes', 'search_hashes', 'flags'] as const;

/** Parsed masks by their JSON text, shared and frozen (the expression engine keeps its render plan per mask object). */
const masks = new Map<string, unknown>();
const MAX_SHARED_MASKS = 256;
const MAX_SHARED_MASK_LENGTH = 4096;

function parseMask(text: string): unknown {
  let mask = masks.get(text);
  if (mask === undefined) {
    mask = deepFreeze(JSON.parse(text));
    if (text.length <= MAX_SHARED_MASK_LENGTH) {
      if (masks.size >= MAX_SHARED_MASKS) masks.clear();
      masks.set(text, mask);
    }
  }
  return mask;
}

/** The fields a token's lean columns stand for. */
export type LeanTokenFields = Pick<StoredToken, 'fingerprint' | 'fingerprintExpression' | 'mask' | 'containers' | 'metadata' | 'searchIndexes' | 'searchHashes' | 'deduplicate'>;

/**
 * The fields of the lean columns of a token of `type`, read back: a column left at its default
 * answers the type's parsed default, shared (frozen) by every token read.
 */
export function tokenFields(
  type: string,
  fingerprint: Uint8Array | null,
  fingerprintExpression: string | null,
  mask: string | null,
  containers: string | null,
  metadata: string | null,
  searchIndexes: string | null,
  searchHashes: Uint8Array | null,
  flags: number,
): LeanTokenFields {
  const defaults = defaultsOf(type);
  return {
    fingerprint: nullableHashText(fingerprint),
    fingerprintExpression: fingerprintExpression ?? ((flags & NO_FINGERPRINT_EXPRESSION) !== 0 ? null : defaults.fingerprintExpression),
    mask: mask === null ? (defaults.mask ?? null) : parseMask(mask),
    containers: containers === null ? ((defaults.containers as string[] | null) ?? EMPTY_LIST) : (JSON.parse(containers) as string[]),
    metadata: metadata === null ? EMPTY_METADATA : (JSON.parse(metadata) as Record<string, string>),
    searchIndexes: searchIndexes === null ? EMPTY_LIST : (JSON.parse(searchIndexes) as string[]),
    searchHashes: searchHashes === null ? EMPTY_LIST : hashListText(searchHashes),
    deduplicate: (flags & DEDUPLICATE) !== 0,
  };
}

const sqlText = (text: string) => `'${text.replaceAll("'", "''")}'`;

/**
 * SQL for a token's containers as JSON text, its default filled in: the column when set, else the
 * JSON array of its type's default container (`types` is the column of the type). Both dialects
 * read it (a CASE over the known types; an unknown type always has its containers written).
 */
export function containersSql(column: string, typeColumn: string): string {
  const cases = [...defaultsByType].map(([name, defaults]) => `WHEN ${sqlText(name)} THEN ${sqlText(defaults.containersText ?? '[]')}`).join(' ');
  return `coalesce(${column}, CASE ${typeColumn} ${cases} ELSE '[]' END)`;
}

/** A deleted token's reference from its row (id, type, deleted_at, deleted_by), in the tenant the query named. */
export const toDeletedToken = (tenantId: string, row: Readonly<Record<string, unknown>>): DeletedTokenRecord => ({
  tenantId,
  id: row['id'] as string,
  type: row['type'] as string,
  deletedAt: row['deleted_at'] as number,
  deletedBy: row['deleted_by'] as string,
});
