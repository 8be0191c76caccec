/**
 * Whether a test changed a PostgreSQL schema's definition, cheaply enough to ask after every test
 * (the schema pool, pg-schema-pool.ts, hands a used schema to another test only when it did not).
 *
 * Every catalog row that defines something in the schema (the schema itself, its relations,
 * columns, defaults, constraints, indexes, triggers, functions, policies, rules, types, sequences,
 * default privileges, statistics objects) is checked two ways:
 * - `changed`: some row was written after the transaction `$2` (the xmin of the schema's row once
 *   the store had migrated: the migration, or the pool's claim), so a test altered, granted,
 *   disabled, renamed or added something. Data writes, `nextval` and (auto)vacuum never write
 *   these rows (vacuum updates pg_class in place, keeping its xmin).
 * - `shape`: how many rows of each kind there are, with the schema's owner and privileges, so a
 *   test that dropped something (which leaves no row to date) shows too. It is compared with the
 *   shape of a schema fresh from the migrations, taken once per run (pg-schema-pool-setup.ts).
 *
 * Comparing the whole definitions (pg_get_indexdef, format_type…) was measured at about as long
 * as migrating a schema; this query reads the rows' system columns only.
 */
const ROWS = `
  SELECT 'namespace' AS kind, xmin FROM n
  UNION ALL SELECT 'class', xmin FROM rel
  UNION ALL SELECT 'attribute', a.xmin FROM pg_attribute a WHERE a.attrelid = ANY ((SELECT oids FROM rels)::oid[]) AND a.attnum > 0
  UNION ALL SELECT 'attrdef', d.xmin FROM pg_attrdef d WHERE d.adrelid = ANY ((SELECT oids FROM rels)::oid[])
  UNION ALL SELECT 'constraint', c.xmin FROM pg_constraint c WHERE c.connamespace = (SELECT oid FROM n)
  UNION ALL SELECT 'index', i.xmin FROM pg_index i WHERE i.indrelid = ANY ((SELECT oids FROM rels)::oid[])
  UNION ALL SELECT 'trigger', t.xmin FROM pg_trigger t WHERE t.tgrelid = ANY ((SELECT oids FROM rels)::oid[])
  UNION ALL SELECT 'proc', p.xmin FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM n)
  UNION ALL SELECT 'policy', p.xmin FROM pg_policy p WHERE p.polrelid = ANY ((SELECT oids FROM rels)::oid[])
  UNION ALL SELECT 'rewrite', r.xmin FROM pg_rewrite r WHERE r.ev_class = ANY ((SELECT oids FROM rels)::oid[])
  UNION ALL SELECT 'type', t.xmin FROM pg_type t WHERE t.typnamespace = (SELECT oid FROM n)
  UNION ALL SELECT 'sequence', s.xmin FROM pg_sequence s WHERE s.seqrelid = ANY ((SELECT oids FROM rels)::oid[])
  UNION ALL SELECT 'default_acl', d.xmin FROM pg_default_acl d WHERE d.defaclnamespace = (SELECT oid FROM n)
  UNION ALL SELECT 'statistic_ext', e.xmin FROM pg_statistic_ext e WHERE e.stxnamespace = (SELECT oid FROM n)`;

/**
 * `$1` the schema's name, `$2` the transaction id (text) after which a write is a change. One row
 * (`shape`, `changed`) when the schema exists, none when it does not.
 */
export const SCHEMA_STATE_SQL = `
WITH n AS (SELECT oid, xmin, nspowner, nspacl FROM pg_namespace WHERE nspname = $1),
rel AS MATERIALIZED (SELECT c.oid, c.xmin FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM n)),
-- Looked up by oid (each catalog's index) rather than joined: the planner, misled by catalogs that
-- a suite's churn of schemas bloats, otherwise scans them whole.
rels AS (SELECT array_agg(oid) AS oids FROM rel),
defining AS (${ROWS})
SELECT
  (SELECT string_agg(kind || ' ' || rows, ',' ORDER BY kind) FROM (SELECT kind, count(*) AS rows FROM defining GROUP BY kind) k)
    || ';' || (SELECT concat_ws(' ', nspowner::regrole, nspacl) FROM n) AS shape,
  coalesce((SELECT bool_or(age(xmin) < age($2::text::xid)) FROM defining), false) AS changed
FROM n`;

/** `$1` the schema's name: the xmin of its row (text), from which `SCHEMA_STATE_SQL` dates changes. */
export const SCHEMA_BASE_SQL = `SELECT xmin::text AS base FROM pg_namespace WHERE nspname = $1`;
