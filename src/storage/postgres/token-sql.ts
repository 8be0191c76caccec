import type { TokenFilter } from '../store.js';
import { scopesParam } from '../token-values.js';
import { SqlParams, type ListQuery } from './paging.js';
import { MUTABLE_TOKEN_COLUMNS, TOKEN_COLUMNS, distinct, metadataDigests } from './token-rows.js';

/** "Live": not expired at `now` (the placeholder given). */
const live = (now: string) => `(t.expires_at IS NULL OR t.expires_at > ${now})`;

const AUDIT_INSERT = 'audit_log (tenant_id, actor, operation, resource_id, outcome, detail, at)';

/**
 * The token statements of a schema (`s`: the quoted schema name), built once per store. Each
 * comment lists its parameters.
 */
export function tokenStatements(s: string) {
  const mutable = MUTABLE_TOKEN_COLUMNS.map(([column]) => column);
  // $1 tenant, $2 id, $3..$17 the mutable values, $18 created_by, $19 created_at.
  const insertColumns = ['tenant_id', 'id', ...mutable, 'created_by', 'created_at'];
  const insertValues = ['$1::text', '$2::text', ...MUTABLE_TOKEN_COLUMNS.map(([, type], i) => `$${i + 3}::${type}`), '$18::text', '$19::int8'];
  const indexRows = (seq: string, tenant: string, digests: string, hashes: string, from: string) =>
    `metadata_rows AS (INSERT INTO ${s}.token_metadata (token_seq, tenant_id, pair) ` +
    `SELECT ${seq}, ${tenant}, d FROM ${from}, unnest(${digests}::bytea[]) AS d ON CONFLICT DO NOTHING), ` +
    `search_rows AS (INSERT INTO ${s}.token_search (token_seq, tenant_id, hash) ` +
    `SELECT ${seq}, ${tenant}, h FROM ${from}, unnest(${hashes}::text[]) AS h ON CONFLICT DO NOTHING)`;
  const audit = (first: number, from: string) =>
    `audit_row AS (INSERT INTO ${s}.${AUDIT_INSERT} ` +
    `SELECT $${first}, $${first + 1}, $${first + 2}, $${first + 3}, $${first + 4}, $${first + 5}, $${first + 6}::int8 FROM ${from})`;
  // The id is claimed in token_ids first: its primary key conflicts with any committed or
  // in-flight use of the id, including deleted tokens' (migrations.ts). Everything after it
  // selects FROM the claim, so a conflict writes nothing.
  const createHead =
    `WITH claimed AS (INSERT INTO ${s}.token_ids (tenant_id, id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING id), ` +
    `inserted AS (INSERT INTO ${s}.tokens (${insertColumns.join(', ')}) SELECT ${insertValues.join(', ')} FROM claimed RETURNING seq)`;
  const create = `${createHead}, ${indexRows('inserted.seq', '$1', '$20', '$21', 'inserted')} SELECT seq FROM inserted`;
  // A token without metadata or search hashes (a card as usually created) has no index rows: the
  // statement leaves their parts out, which the server would otherwise parse, plan and run for nothing.
  const createBare = `${createHead} SELECT seq FROM inserted`;
  // createMany: the same columns, one array each ($1-$19), unnested into one row per token. The
  // tokens of a batch have distinct (tenant, id) (the caller sends only the first of several), so
  // (tenant_id, id) names a token throughout: no row numbers, sorts or joins back to the input.
  const arrayColumns = ['tenant_id text', 'id text', ...MUTABLE_TOKEN_COLUMNS.map(([column, type]) => `${column} ${type}`), 'created_by text', 'created_at int8'];
  const unnestArrays = arrayColumns.map((column, i) => `$${i + 1}::${column.split(' ')[1]}[]`).join(', ');
  const manyIndexRows = (table: string, column: string, first: number, type: string) =>
    `INSERT INTO ${s}.${table} (token_seq, tenant_id, ${column}) SELECT ins.seq, ins.tenant_id, v.value ` +
    `FROM unnest($${first}::text[], $${first + 1}::text[], $${first + 2}::${type}[]) AS v(tenant_id, id, value) ` +
    'JOIN inserted ins ON ins.tenant_id = v.tenant_id AND ins.id = v.id ON CONFLICT DO NOTHING';
  const createManyHead =
    `WITH claimed AS (INSERT INTO ${s}.token_ids (tenant_id, id) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING RETURNING tenant_id, id), ` +
    `inserted AS (INSERT INTO ${s}.tokens (${insertColumns.join(', ')}) SELECT * FROM unnest(${unnestArrays}) AS i(${insertColumns.join(', ')}) ` +
    'WHERE (i.tenant_id, i.id) IN (SELECT tenant_id, id FROM claimed) RETURNING seq, tenant_id, id)';
  const createManyTail = ' SELECT tenant_id, id FROM inserted';
  const createMany =
    `${createManyHead}, metadata_rows AS (${manyIndexRows('token_metadata', 'pair', 20, 'bytea')}), ` +
    `search_rows AS (${manyIndexRows('token_search', 'hash', 23, 'text')})${createManyTail}`;
  const createManyBare = createManyHead + createManyTail;
  return Object.freeze({
    /** tenant, id, now. */
    getLive: `SELECT ${TOKEN_COLUMNS} FROM ${s}.tokens t WHERE t.tenant_id = $1 AND t.id = $2 AND ${live('$3')}`,
    /**
     * getLive for several lookups at once (turn-batch.ts): $1 tenants, $2 ids, $3 nows, one of
     * each per lookup; each row carries the position (from 1) of the lookup it answers.
     */
    getLiveMany:
      `SELECT q.n AS lookup, ${TOKEN_COLUMNS} FROM unnest($1::text[], $2::text[], $3::int8[]) WITH ORDINALITY AS q(tenant_id, id, now, n) ` +
      `JOIN ${s}.tokens t ON t.tenant_id = q.tenant_id AND t.id = q.id WHERE ${live('q.now')}`,
    /** tenant, id, now. Locks the live token's row until the transaction ends. */
    lockLive: `SELECT t.seq, t.fingerprint, t.deduplicate FROM ${s}.tokens t WHERE t.tenant_id = $1 AND t.id = $2 AND ${live('$3')} FOR UPDATE`,
    /**
     * The oldest live token of a tenant, type and fingerprint, other than the id given (null for
     * none), within the scopes (scopesParam; null: any). tenant, fingerprint, type, now, id, scopes.
     */
    findLiveDuplicate:
      `SELECT ${TOKEN_COLUMNS} FROM ${s}.tokens t WHERE t.tenant_id = $1 AND t.fingerprint = $2 AND t.type = $3 AND ${live('$4')} ` +
      `AND ($5::text IS NULL OR t.id <> $5) AND ($6::jsonb IS NULL OR ${within('$6::jsonb')}) ORDER BY t.seq LIMIT 1`,
    /** $1-$19 the token (see above), $20 metadata digests, $21 search hashes; one row (seq) when created. */
    create,
    /** `create` for a token with neither metadata digests nor search hashes: $1-$19 only. */
    createBare,
    /**
     * `create` for several tokens of distinct (tenant, id) in one statement (turn-batch.ts): $1-$19
     * one array per column of `create`, an element per token; the index rows as triples of arrays,
     * the token's tenant and id and the value: $20-$22 metadata digests, $23-$25 search hashes. One
     * row (tenant_id, id) per token created; a token whose id was taken has none.
     */
    createMany,
    /** `createMany` for tokens none of which has metadata digests or search hashes: $1-$19 only. */
    createManyBare,
    /**
     * Replaces a locked token's mutable columns and its index rows, and appends the audit entry.
     * $1 seq, $2-$16 the mutable values, $17 metadata digests, $18 search hashes, $19-$25 audit, $26 tenant.
     * Index rows no longer wanted are deleted and new ones inserted; the two sets are disjoint, so
     * the statement never inserts a key it also deletes.
     */
    replace:
      `WITH updated AS (UPDATE ${s}.tokens t SET ${MUTABLE_TOKEN_COLUMNS.map(([column, type], i) => `${column} = $${i + 2}::${type}`).join(', ')} ` +
      'WHERE t.tenant_id = $26::text AND t.seq = $1::int8 RETURNING t.seq, t.tenant_id), ' +
      `metadata_gone AS (DELETE FROM ${s}.token_metadata m WHERE m.tenant_id = $26::text AND m.token_seq = $1::int8 AND m.pair <> ALL($17::bytea[])), ` +
      `search_gone AS (DELETE FROM ${s}.token_search x WHERE x.tenant_id = $26::text AND x.token_seq = $1::int8 AND x.hash <> ALL($18::text[])), ` +
      indexRows('updated.seq', 'updated.tenant_id', '$17', '$18', 'updated') +
      `, ${audit(19, 'updated')} SELECT seq FROM updated`,
    /**
     * Removes a live token (its index rows go by ON DELETE CASCADE), marks its id deleted, and
     * appends the audit entry. $1 tenant, $2 id, $3 now, $4 deleted_by, $5-$11 audit.
     */
    delete:
      `WITH gone AS (DELETE FROM ${s}.tokens t WHERE t.tenant_id = $1 AND t.id = $2 AND ${live('$3::int8')} RETURNING t.tenant_id, t.id, t.type), ` +
      `reference AS (UPDATE ${s}.token_ids r SET type = gone.type, deleted_at = $3::int8, deleted_by = $4::text FROM gone ` +
      'WHERE r.tenant_id = gone.tenant_id AND r.id = gone.id), ' +
      `${audit(5, 'gone')} SELECT count(*) AS removed FROM gone`,
    /** tenant, id. */
    getDeleted: `SELECT r.tenant_id, r.id, r.type, r.deleted_at, r.deleted_by FROM ${s}.token_ids r ` + 'WHERE r.tenant_id = $1 AND r.id = $2 AND r.deleted_at IS NOT NULL',
    /**
     * Removes up to $2 tokens expired at $1, oldest expiry first, as `delete` does (actor $3,
     * operation $4). SKIP LOCKED: concurrent sweeps (other instances) take disjoint rows instead of
     * waiting on each other, and a token being changed right now is left for the next sweep.
     */
    purgeExpired:
      `WITH doomed AS (SELECT t.tenant_id, t.seq FROM ${s}.tokens t WHERE t.expires_at <= $1::int8 ORDER BY t.expires_at, t.seq LIMIT $2::int8 FOR UPDATE SKIP LOCKED), ` +
      `gone AS (DELETE FROM ${s}.tokens t USING doomed WHERE t.tenant_id = doomed.tenant_id AND t.seq = doomed.seq RETURNING t.seq, t.tenant_id, t.id, t.type, t.expires_at), ` +
      `reference AS (UPDATE ${s}.token_ids r SET type = gone.type, deleted_at = $1::int8, deleted_by = $3::text FROM gone ` +
      'WHERE r.tenant_id = gone.tenant_id AND r.id = gone.id), ' +
      `audit_rows AS (INSERT INTO ${s}.${AUDIT_INSERT} SELECT gone.tenant_id, $3::text, $4::text, gone.id, 'success', NULL, $1::int8 ` +
      'FROM gone ORDER BY gone.expires_at, gone.seq) ' +
      'SELECT gone.tenant_id, gone.id, gone.type, gone.expires_at FROM gone ORDER BY gone.expires_at, gone.seq',
    /** now, limit. Ordered by (cvc_purge_at, tenant, id): the cursor of listCvcDueAfter. */
    listCvcDue: `SELECT ${TOKEN_COLUMNS} FROM ${s}.tokens t WHERE t.cvc_purge_at <= $1::int8 ORDER BY t.cvc_purge_at, t.tenant_id, t.id LIMIT $2::int8`,
    /** now, limit, then the cursor: cvcPurgeAt, tenant, id (the last row of the previous page). */
    listCvcDueAfter:
      `SELECT ${TOKEN_COLUMNS} FROM ${s}.tokens t WHERE t.cvc_purge_at <= $1::int8 AND t.cvc_purge_at >= $3::int8 ` +
      `AND (t.cvc_purge_at, t.tenant_id, t.id) > ($3::int8, $4::text, $5::text) ORDER BY t.cvc_purge_at, t.tenant_id, t.id LIMIT $2::int8`,
    /** ciphertext, keyVersion, cvcPurgeAt, tenant, id, expected ciphertext. A concurrent writer's row fails the last test. */
    replaceCiphertext: `UPDATE ${s}.tokens SET ciphertext = $1, key_version = $2, cvc_purge_at = $3 WHERE tenant_id = $4 AND id = $5 AND ciphertext = $6`,
    /** tenant, version, fromSeq, limit: a walk of the tenant's (tenant_id, seq) index from a resume point. */
    listBelowKeyVersion: `SELECT ${TOKEN_COLUMNS} FROM ${s}.tokens t WHERE t.tenant_id = $1 AND t.key_version < $2 AND t.seq >= $3::int8 ORDER BY t.seq LIMIT $4::int8`,
    /** tenant, version. */
    countBelowKeyVersion: `SELECT count(*) AS n FROM ${s}.tokens t WHERE t.tenant_id = $1 AND t.key_version < $2`,
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
    `NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(t.containers) c(v) WHERE NOT EXISTS (` +
    `SELECT 1 FROM jsonb_array_elements(${scopes}) g(s) WHERE left(c.v, length(g.s ->> 0)) = g.s ->> 0 ` +
    `AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(g.s -> 1) x(v) WHERE left(c.v, length(x.v)) = x.v)))`
  );
}

/**
 * The list query for a filter; every term is ANDed, always within the tenant and among live
 * tokens. ids, types and fingerprints bind as arrays (`= ANY`), so the SQL does not depend on how
 * many are given; each metadata pair and search hash is an EXISTS probe that names the tenant, so
 * the planner may drive the query from its lookup index or probe the primary key per token. An
 * empty list matches nothing (the token service uses that for contradictory search terms); an
 * empty metadata map or hash list constrains nothing.
 */
export function tokenListQuery(s: string, tenantId: string, filter: TokenFilter, now: number): ListQuery {
  const params = new SqlParams();
  const tenant = params.add(tenantId, 'text');
  const where = [`t.tenant_id = ${tenant}`, live(params.add(now, 'int8'))];
  const lists = { ids: filter.ids, types: filter.types, fingerprints: filter.fingerprints, containers: filter.containers };
  if (Object.values(lists).some((list) => list !== undefined && list !== null && list.length === 0)) where.push('false');
  const anyOf = (column: string, values: readonly string[] | undefined) => {
    if (values === undefined || values === null || values.length === 0) return;
    const unique = distinct(values);
    where.push(unique.length === 1 ? `${column} = ${params.add(unique[0], 'text')}` : `${column} = ANY(${params.add(unique, 'text[]')})`);
  };
  anyOf('t.id', filter.ids);
  anyOf('t.type', filter.types);
  anyOf('t.fingerprint', filter.fingerprints);
  if (filter.containers != null && filter.containers.length > 0) where.push(`t.containers ?& ${params.add(distinct(filter.containers), 'text[]')}`);
  if (filter.within != null) {
    where.push(within(params.add(scopesParam(filter.within), 'jsonb')));
  }
  for (const digest of metadataDigests(filter.metadata)) {
    where.push(`EXISTS (SELECT 1 FROM ${s}.token_metadata m WHERE m.token_seq = t.seq AND m.tenant_id = ${tenant} AND m.pair = ${params.add(digest, 'bytea')})`);
  }
  for (const hash of distinct(filter.searchHashes)) {
    where.push(`EXISTS (SELECT 1 FROM ${s}.token_search x WHERE x.token_seq = t.seq AND x.tenant_id = ${tenant} AND x.hash = ${params.add(hash, 'text')})`);
  }
  return { columns: TOKEN_COLUMNS, from: `FROM ${s}.tokens t`, where, params };
}
