import type { TokenFilter } from '../store.js';
import { hashBytes } from '../token-bytes.js';
import { containersSql } from '../token-columns.js';
import { scopesParam } from '../token-values.js';
import type { ListQuery } from './paging.js';
import { MUTABLE_TOKEN_COLUMNS, TOKEN_BODY_VALUES, TOKEN_ROW_VALUES } from './token-rows.js';
import { metadataPairs } from '../areas/token-rows.js';

/** "Live": not expired at `now` (bound as the parameter that follows). */
const LIVE = '(t.expires_at IS NULL OR t.expires_at > ?)';

/** The token's containers as JSON text (NULL is its type's default container, token-columns.ts). */
const CONTAINERS = containersSql('t.containers', 't.type');

/**
 * Every container of the token lies in some scope: under its prefix and under none of its
 * exceptions. The scopes bind as one JSON array of `[prefix, [except, …]]`, so the SQL is fixed;
 * prefixes compare with substr (not LIKE, whose wildcards `_` a container may hold). An empty
 * array matches nothing (a token always has a container).
 */
const WITHIN =
  `NOT EXISTS (SELECT 1 FROM json_each(${CONTAINERS}) c WHERE NOT EXISTS (` +
  "SELECT 1 FROM json_each(?) g WHERE substr(c.value, 1, length(g.value ->> '$[0]')) = g.value ->> '$[0]' " +
  "AND NOT EXISTS (SELECT 1 FROM json_each(g.value, '$[1]') x WHERE substr(c.value, 1, length(x.value)) = x.value)))";

/** The tenant's integer key. params: tenantId. */
export const TENANT_KEY_OF = 'SELECT key FROM tenant_keys WHERE tenant_id = ?';
/** Gives a tenant its key (on its first token). params: tenantId. */
export const INSERT_TENANT_KEY = 'INSERT INTO tenant_keys (tenant_id) VALUES (?)';

/** params: tenant key, id, now. Uses the UNIQUE (tenant, id) index. Reads TOKEN_BODY_VALUES. */
export const GET_LIVE_TOKEN = `SELECT ${TOKEN_BODY_VALUES} FROM tokens t WHERE t.tenant = ? AND t.id = ? AND ${LIVE}`;

/** What an update or deletion needs of the current token: its index rows are removed by their keys. params: tenant key, id, now. */
export const GET_LIVE_TOKEN_REF = `SELECT t.seq, t.type, t.fingerprint, t.flags, t.metadata, t.search_hashes FROM tokens t WHERE t.tenant = ? AND t.id = ? AND ${LIVE}`;

/**
 * The oldest live token of a tenant, type and fingerprint other than `seq`, within the scopes (see
 * WITHIN; null: any). params: tenant key, fingerprint (bytes), type, now, seq (0 for none), scopes, scopes.
 */
export const FIND_LIVE_DUPLICATE =
  `SELECT ${TOKEN_ROW_VALUES} FROM tokens t WHERE t.tenant = ? AND t.fingerprint = ? AND t.type = ? AND ${LIVE} AND t.seq <> ? ` +
  `AND (? IS NULL OR ${WITHIN}) ORDER BY t.seq LIMIT 1`;

const INSERT_COLUMNS = ['tenant', 'id', ...MUTABLE_TOKEN_COLUMNS, 'created_by', 'created_at'];

/**
 * Inserts unless the id is taken in the tenant by a token (any expiry: the UNIQUE conflict does
 * nothing); `changes` 0 means id conflict. params: tenant key, id, the mutable values, createdBy,
 * createdAt. A deleted token's reference is checked first by DELETED_ID_TAKEN, in the same
 * transaction: folded into this statement as `INSERT ... SELECT ... WHERE NOT EXISTS`, the insert
 * could write several rows as far as SQLite knows, so it kept a statement journal (a copy of every
 * page it changed), a large share of a creation's cost.
 */
export const INSERT_TOKEN = `INSERT INTO tokens (${INSERT_COLUMNS.join(', ')}) VALUES (${INSERT_COLUMNS.map(() => '?').join(', ')}) ` + 'ON CONFLICT (tenant, id) DO NOTHING';

/** params: tenant key, id. A row when a deleted token's reference holds the id. */
export const DELETED_ID_TAKEN = 'SELECT 1 FROM deleted_tokens WHERE tenant = ? AND id = ?';

/** params: the mutable values, seq. */
export const UPDATE_TOKEN = `UPDATE tokens SET ${MUTABLE_TOKEN_COLUMNS.map((c) => `${c} = ?`).join(', ')} WHERE seq = ?`;

/** Index rows are written and removed by their whole key (tenant, value, token seq): they are stored once, clustered on it. */
export const INSERT_METADATA = 'INSERT INTO token_metadata (tenant, key_lower, value_lower, token_seq) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING';
export const INSERT_SEARCH = 'INSERT INTO token_search (tenant, hash, token_seq) VALUES (?, ?, ?) ON CONFLICT DO NOTHING';
export const DELETE_METADATA = 'DELETE FROM token_metadata WHERE tenant = ? AND key_lower = ? AND value_lower = ? AND token_seq = ?';
export const DELETE_SEARCH = 'DELETE FROM token_search WHERE tenant = ? AND hash = ? AND token_seq = ?';
export const DELETE_TOKEN = 'DELETE FROM tokens WHERE seq = ?';
export const INSERT_DELETED = 'INSERT INTO deleted_tokens (tenant, id, type, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)';
/** params: now, limit. Across tenants: each row names its tenant by id. */
export const LIST_EXPIRED =
  'SELECT t.seq, t.tenant, n.tenant_id, t.id, t.type, t.expires_at, t.metadata, t.search_hashes FROM tokens t CROSS JOIN tenant_keys n ON n.key = t.tenant ' +
  'WHERE t.expires_at <= ? ORDER BY t.expires_at, t.seq LIMIT ?';
const unique = (values: readonly string[]) => [...new Set(values.map(String))];

const METADATA_PROBE = 'EXISTS (SELECT 1 FROM token_metadata m WHERE m.tenant = t.tenant AND m.key_lower = ? AND m.value_lower = ? AND m.token_seq = t.seq)';
const SEARCH_PROBE = 'EXISTS (SELECT 1 FROM token_search s WHERE s.tenant = t.tenant AND s.hash = ? AND s.token_seq = t.seq)';

/**
 * Builds the list query for a filter within a tenant (its integer key); every term is ANDed. The
 * query is driven by the most selective index the filter allows, so a page costs O(log n + page)
 * rather than a walk or a materialized match list:
 * 1. ids or fingerprints (few rows each): a `seq IN (...)` subquery over their index (one id uses
 *    the UNIQUE index directly); lists bind as one JSON array read with json_each, so the SQL does
 *    not depend on how many values are given (fingerprints as hex, their stored bytes);
 * 2. else a metadata pair, or a search hash: the join walks that pair's rows, clustered on
 *    (tenant, value, token seq) and so in seq order, from the cursor on (CROSS JOIN fixes the
 *    join order);
 * 3. else the table in seq order, testing the tenant (and the types) per row (`+t.tenant` keeps
 *    the planner off the tenant-prefixed indexes, which would need a sort of the whole tenant).
 *    There is no (tenant) nor (tenant, type) index (migration-lean-tokens.ts): every creation
 *    would write it, and this walk reads one page per page when the tenant and the type own most
 *    tokens, more when they share the database with larger ones.
 * Every other metadata pair and search hash is an EXISTS probe on its table's primary key; types,
 * containers and access scopes (`within`) are tested per row. An empty list matches nothing (the
 * token service uses that for contradictory search terms); an empty metadata map or hash list
 * constrains nothing.
 */
export function tokenListQuery(tenant: number, filter: TokenFilter, now: number): ListQuery {
  const ids = filter.ids === undefined ? undefined : unique(filter.ids);
  const types = filter.types === undefined ? undefined : unique(filter.types);
  const fingerprints = filter.fingerprints === undefined ? undefined : unique(filter.fingerprints);
  const containers = filter.containers === undefined ? undefined : unique(filter.containers);
  const pairs = metadataPairs(filter.metadata ?? {});
  const hashes = unique(filter.searchHashes ?? []).map(hashBytes);

  let from = 'FROM tokens t';
  let seq = 't.seq';
  const where: string[] = [];
  const params: unknown[] = [];
  const byIdOrFingerprint = ids !== undefined || fingerprints !== undefined;
  if (!byIdOrFingerprint && pairs.length > 0) {
    const [key, value] = pairs.shift()!;
    from = 'FROM token_metadata d CROSS JOIN tokens t ON t.seq = d.token_seq';
    seq = 'd.token_seq';
    where.push('d.tenant = ? AND d.key_lower = ? AND d.value_lower = ?');
    params.push(tenant, key, value);
  } else if (!byIdOrFingerprint && hashes.length > 0) {
    from = 'FROM token_search d CROSS JOIN tokens t ON t.seq = d.token_seq';
    seq = 'd.token_seq';
    where.push('d.tenant = ? AND d.hash = ?');
    params.push(tenant, hashes.shift());
  }
  where.push(ids?.length === 1 ? 't.tenant = ?' : '+t.tenant = ?', LIVE);
  params.push(tenant, now);

  const matchNothing = [ids, types, fingerprints, containers].some((list) => list !== undefined && list.length === 0);
  if (matchNothing) where.push('0');
  if (ids !== undefined && ids.length === 1) {
    where.push('t.id = ?');
    params.push(ids[0]);
  } else if (ids !== undefined && ids.length > 1) {
    where.push('t.seq IN (SELECT i.seq FROM tokens i WHERE i.tenant = ? AND i.id IN (SELECT value FROM json_each(?)))');
    params.push(tenant, JSON.stringify(ids));
  }
  if (fingerprints !== undefined && fingerprints.length > 0) {
    where.push('t.seq IN (SELECT i.seq FROM tokens i WHERE i.tenant = ? AND i.fingerprint IN (SELECT unhex(value) FROM json_each(?)))');
    params.push(tenant, JSON.stringify(fingerprints.map((fingerprint) => hashBytes(fingerprint).toString('hex'))));
  }
  if (types !== undefined && types.length === 1) {
    where.push('t.type = ?');
    params.push(types[0]);
  } else if (types !== undefined && types.length > 1) {
    where.push('t.type IN (SELECT value FROM json_each(?))');
    params.push(JSON.stringify(types));
  }
  if (containers !== undefined && containers.length > 0) {
    where.push(`NOT EXISTS (SELECT 1 FROM json_each(?) w WHERE w.value NOT IN (SELECT c.value FROM json_each(${CONTAINERS}) c))`);
    params.push(JSON.stringify(containers));
  }
  if (filter.within !== undefined) {
    where.push(WITHIN);
    params.push(scopesParam(filter.within));
  }
  for (const [key, value] of pairs) {
    where.push(METADATA_PROBE);
    params.push(key, value);
  }
  for (const hash of hashes) {
    where.push(SEARCH_PROBE);
    params.push(hash);
  }
  // The SQL varies with the number of metadata pairs and hashes: those go to the bounded cache.
  const generated = pairs.length > 0 || hashes.length > 0;
  return { columns: TOKEN_ROW_VALUES, from: `${from} WHERE ${where.join(' AND ')}`, params, seq, generated };
}
