import type { TokenFilter } from '../store.js';
import { hashBytes } from '../token-bytes.js';
import { containersSql } from '../token-columns.js';
import { scopesParam } from '../token-values.js';
import { SqlParams, type ListQuery } from './paging.js';
import { LOOKUP_KEY_BYTES, MUTABLE_TOKEN_COLUMNS, distinct, lookupKeys } from './token-rows.js';
import { TOKEN_COLUMNS } from '../areas/token-rows.js';

/** "Live": not deleted (a reference record), not expired at `now` (the placeholder given). */
const live = (now: string) => `t.deleted_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > ${now})`;

/** The token's containers as jsonb, its type's default filled in (NULL in the row: token-columns.ts). */
const CONTAINERS = `(${containersSql('t.containers', 't.type')})::jsonb`;

const AUDIT_INSERT = 'audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at)';

/** What a deletion leaves of a row: its reference record (migration-lean-tokens.ts). `$at` and `$by` are placeholders. */
const emptied = (at: string, by: string) =>
  'ciphertext = NULL, fingerprint = NULL, fingerprint_expression = NULL, mask = NULL, containers = NULL, metadata = NULL, ' +
  `search_indexes = NULL, search_hashes = NULL, lookup = NULL, expires_at = NULL, cvc_purge_at = NULL, deleted_at = ${at}, deleted_by = ${by}`;

/**
 * The token statements of a schema (`s`: the quoted schema name), built once per store. Each
 * comment lists its parameters. Statements take the tenant's id and find its integer key in
 * tenant_keys (a primary-key probe of a small table whose pages stay cached), so callers and
 * other instances need no map of their own; a tenant without a key has no tokens.
 */
export function tokenStatements(s: string) {
  const tenantKey = (param: string) => `(SELECT k.key FROM ${s}.tenant_keys k WHERE k.tenant_id = ${param})`;
  const mutable = MUTABLE_TOKEN_COLUMNS.map(([column]) => column);
  // $1 tenant, $2 id, $3..$18 the mutable values, $19 created_by, $20 created_at.
  const insertColumns = ['tenant', 'id', ...mutable, 'created_by', 'created_at'];
  const insertValues = ['k.key', '$2::text', ...MUTABLE_TOKEN_COLUMNS.map(([, type], i) => `$${i + 3}::${type}`), '$19::text', '$20::int8'];
  const audit = (first: number, from: string) =>
    `audit_row AS (INSERT INTO ${s}.${AUDIT_INSERT} ` +
    `SELECT $${first}, $${first + 1}, $${first + 2}, $${first + 3}, $${first + 4}, $${first + 5}, $${first + 6}::int8 FROM ${from})`;
  // createMany: the same columns, one array each ($1-$20), unnested into one row per token. The
  // tokens of a batch have distinct (tenant, id) (the caller sends only the first of several).
  const arrayTypes = ['text', 'text', ...MUTABLE_TOKEN_COLUMNS.map(([, type]) => type), 'text', 'int8'];
  const inputColumns = ['tenant_id', ...insertColumns.slice(1)];
  return Object.freeze({
    /** tenant. Its integer key (no row: it has none, and so no tokens). */
    tenantKey: `SELECT k.key FROM ${s}.tenant_keys k WHERE k.tenant_id = $1`,
    /** tenant. Gives the tenant its key when it has none (before its first token is written). */
    ensureTenantKey: `INSERT INTO ${s}.tenant_keys (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING`,
    /** tenant, id, now. */
    getLive: `SELECT ${TOKEN_COLUMNS} FROM ${s}.tokens t WHERE t.tenant = ${tenantKey('$1')} AND t.id = $2 AND ${live('$3')}`,
    /**
     * getLive for several lookups at once (turn-batch.ts): $1 tenants, $2 ids, $3 nows, one of
     * each per lookup; each row carries the position (from 1) of the lookup it answers.
     */
    getLiveMany:
      `SELECT q.n AS lookup, ${TOKEN_COLUMNS} FROM unnest($1::text[], $2::text[], $3::int8[]) WITH ORDINALITY AS q(tenant_id, id, now, n) ` +
      `JOIN ${s}.tenant_keys k ON k.tenant_id = q.tenant_id JOIN ${s}.tokens t ON t.tenant = k.key AND t.id = q.id WHERE ${live('q.now')}`,
    /** tenant, id, now. Locks the live token's row until the transaction ends. */
    lockLive: `SELECT t.seq, t.tenant, t.fingerprint, t.flags FROM ${s}.tokens t WHERE t.tenant = ${tenantKey('$1')} AND t.id = $2 AND ${live('$3')} FOR UPDATE OF t`,
    /**
     * The oldest live token of a tenant, type and fingerprint (its stored bytes), other than the id
     * given (null for none), within the scopes (scopesParam; null: any). tenant, fingerprint, type,
     * now, id, scopes.
     */
    findLiveDuplicate:
      `SELECT ${TOKEN_COLUMNS} FROM ${s}.tokens t WHERE t.tenant = ${tenantKey('$1')} AND t.fingerprint = $2::bytea AND t.type = $3 AND ${live('$4')} ` +
      `AND ($5::text IS NULL OR t.id <> $5) AND ($6::jsonb IS NULL OR ${within('$6::jsonb')}) ORDER BY t.seq LIMIT 1`,
    /**
     * $1-$20 the token (see above). One row: `tenant`, the tenant's key (null when it has none yet:
     * nothing was written), and `seq`, null when the id is taken in the tenant (by a token or a
     * deleted token's reference: the primary key decides, whatever the concurrent transactions).
     */
    create:
      `WITH k AS (SELECT k.key FROM ${s}.tenant_keys k WHERE k.tenant_id = $1::text), ` +
      `inserted AS (INSERT INTO ${s}.tokens (${insertColumns.join(', ')}) SELECT ${insertValues.join(', ')} FROM k ON CONFLICT (tenant, id) DO NOTHING RETURNING seq) ` +
      'SELECT (SELECT key FROM k) AS tenant, (SELECT seq FROM inserted) AS seq',
    /**
     * `create` for several tokens of distinct (tenant, id) in one statement (turn-batch.ts): $1-$20
     * one array per column of `create`, an element per token, whose tenants have keys. One row
     * (tenant_id, id) per token created; a token whose id was taken has none.
     */
    createMany:
      `WITH i AS (SELECT * FROM unnest(${arrayTypes.map((type, n) => `$${n + 1}::${type}[]`).join(', ')}) AS i(${inputColumns.join(', ')})), ` +
      `keys AS (SELECT k.tenant_id, k.key FROM ${s}.tenant_keys k WHERE k.tenant_id IN (SELECT tenant_id FROM i)), ` +
      `inserted AS (INSERT INTO ${s}.tokens (${insertColumns.join(', ')}) SELECT keys.key, ${inputColumns
        .slice(1)
        .map((column) => `i.${column}`)
        .join(', ')} ` +
      'FROM i JOIN keys ON keys.tenant_id = i.tenant_id ON CONFLICT (tenant, id) DO NOTHING RETURNING tenant, id) ' +
      'SELECT keys.tenant_id, inserted.id FROM inserted JOIN keys ON keys.key = inserted.tenant',
    /**
     * Replaces a locked token's mutable columns (its lookup keys with them: the GIN index follows)
     * and appends the audit entry. $1 seq, $2-$17 the mutable values, $18-$24 audit, $25 the tenant's key.
     */
    replace:
      `WITH updated AS (UPDATE ${s}.tokens t SET ${MUTABLE_TOKEN_COLUMNS.map(([column, type], i) => `${column} = $${i + 2}::${type}`).join(', ')} ` +
      `WHERE t.tenant = $25::int4 AND t.seq = $1::int8 RETURNING t.seq), ${audit(18, 'updated')} SELECT seq FROM updated`,
    /**
     * Empties a live token's row into its reference record and appends the audit entry.
     * $1 tenant, $2 id, $3 now, $4 deleted_by, $5-$11 audit.
     */
    delete:
      `WITH gone AS (UPDATE ${s}.tokens t SET ${emptied('$3::int8', '$4::text')} WHERE t.tenant = ${tenantKey('$1')} AND t.id = $2 AND ${live('$3::int8')} RETURNING t.id), ` +
      `${audit(5, 'gone')} SELECT count(*) AS removed FROM gone`,
    /** tenant, id. */
    /**
     * Removes up to $2 tokens expired at $1, oldest expiry first, as `delete` does (actor $3,
     * operation $4). SKIP LOCKED: concurrent sweeps (other instances) take disjoint rows instead of
     * waiting on each other, and a token being changed right now is left for the next sweep.
     */
    purgeExpired:
      `WITH doomed AS (SELECT t.tenant, t.id, t.seq, t.expires_at FROM ${s}.tokens t WHERE t.expires_at <= $1::int8 ORDER BY t.expires_at, t.seq LIMIT $2::int8 FOR UPDATE SKIP LOCKED), ` +
      `gone AS (UPDATE ${s}.tokens t SET ${emptied('$1::int8', '$3::text')} FROM doomed WHERE t.tenant = doomed.tenant AND t.id = doomed.id ` +
      'RETURNING doomed.seq, doomed.expires_at, t.tenant, t.id, t.type), ' +
      `named AS (SELECT k.tenant_id, gone.* FROM gone JOIN ${s}.tenant_keys k ON k.key = gone.tenant), ` +
      `audit_rows AS (INSERT INTO ${s}.${AUDIT_INSERT} SELECT named.tenant_id, $3::text, $4::text, named.id, 'success', NULL, $1::int8 ` +
      'FROM named ORDER BY named.expires_at, named.seq) ' +
      'SELECT named.tenant_id, named.id, named.type, named.expires_at FROM named ORDER BY named.expires_at, named.seq',
  });
}

export type TokenStatements = ReturnType<typeof tokenStatements>;

/**
 * Every container of the token lies in some scope: under its prefix, under none of its exceptions.
 * The scopes bind as one jsonb array of [prefix, [except, …]] (scopesParam); prefixes compare with
 * left() (not LIKE, whose wildcard `_` a container may hold). An empty array matches nothing.
 */
function within(scopes: string): string {
  return (
    `NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(${CONTAINERS}) c(v) WHERE NOT EXISTS (` +
    `SELECT 1 FROM jsonb_array_elements(${scopes}) g(s) WHERE left(c.v, length(g.s ->> 0)) = g.s ->> 0 ` +
    `AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(g.s -> 1) x(v) WHERE left(c.v, length(x.v)) = x.v)))`
  );
}

/** A filter's lookup keys as the GIN index holds them (token_lookup_keys): each behind the tenant key's 4 bytes. */
export function filterLookupKeys(tenantKey: number, keys: Buffer): Buffer[] {
  const prefix = Buffer.alloc(4);
  prefix.writeInt32BE(tenantKey);
  const out: Buffer[] = [];
  for (let at = 0; at < keys.length; at += LOOKUP_KEY_BYTES) out.push(Buffer.concat([prefix, keys.subarray(at, at + LOOKUP_KEY_BYTES)]));
  return out;
}

/**
 * The list query for a filter; every term is ANDed, always within the tenant and among live
 * tokens. ids, types and fingerprints bind as arrays (`= ANY`), so the SQL does not depend on how
 * many are given. Metadata pairs and search values are one term: the row's lookup keys contain
 * all of the filter's (`@>`), which the GIN index answers; the planner walks (tenant, seq) instead
 * when its statistics say much of the tenant matches. The keys bind as values (`tenantKey`, the
 * tenant's integer key, goes in front of each), so the planner weighs them; with none (a tenant
 * without a key has no tokens) the term matches nothing. An empty list matches nothing (the token
 * service uses that for contradictory search terms); an empty metadata map or hash list
 * constrains nothing.
 */
export function tokenListQuery(s: string, tenantId: string, filter: TokenFilter, now: number, tenantKey: number | null = null): ListQuery {
  const params = new SqlParams();
  const tenant = params.add(tenantId, 'text');
  const where = [`t.tenant = (SELECT k.key FROM ${s}.tenant_keys k WHERE k.tenant_id = ${tenant})`, live(params.add(now, 'int8'))];
  const lists = { ids: filter.ids, types: filter.types, fingerprints: filter.fingerprints, containers: filter.containers };
  if (Object.values(lists).some((list) => list !== undefined && list !== null && list.length === 0)) where.push('false');
  const anyOf = (column: string, values: readonly unknown[], type: string) => {
    where.push(values.length === 1 ? `${column} = ${params.add(values[0], type)}` : `${column} = ANY(${params.add(values, `${type}[]`)})`);
  };
  if (filter.ids != null && filter.ids.length > 0) anyOf('t.id', distinct(filter.ids), 'text');
  if (filter.types != null && filter.types.length > 0) anyOf('t.type', distinct(filter.types), 'text');
  if (filter.fingerprints != null && filter.fingerprints.length > 0) anyOf('t.fingerprint', distinct(filter.fingerprints).map(hashBytes), 'bytea');
  if (filter.containers != null && filter.containers.length > 0) where.push(`${CONTAINERS} ?& ${params.add(distinct(filter.containers), 'text[]')}`);
  if (filter.within != null) where.push(within(params.add(scopesParam(filter.within), 'jsonb')));
  const keys = lookupKeys(filter.metadata, filter.searchHashes);
  if (keys !== null && tenantKey === null) where.push('false');
  if (keys !== null && tenantKey !== null) {
    where.push(`${s}.token_lookup_keys(t.tenant, t.lookup) @> ${params.add(filterLookupKeys(tenantKey, keys), 'bytea[]')}`);
  }
  return { columns: TOKEN_COLUMNS, from: `FROM ${s}.tokens t`, where, params };
}
