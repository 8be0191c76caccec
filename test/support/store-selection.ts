/**
 * Which stores the behavioural tests run on: TOKENVAULT_TEST_STORES, a comma-separated list of
 * `sqlite` and `postgres` (default: both). Naming `postgres` there without TOKENVAULT_TEST_PG_URL is
 * an error, not a skip: the run was asked for PostgreSQL and would silently test less.
 */
export type StoreName = 'sqlite' | 'postgres';

const NAMES: readonly StoreName[] = ['sqlite', 'postgres'];

function parse(raw: string | undefined): readonly StoreName[] {
  if (raw === undefined || raw.trim() === '') return NAMES;
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  for (const name of names) {
    if (!(NAMES as readonly string[]).includes(name)) {
      throw new Error(`TOKENVAULT_TEST_STORES names "${name}"; the stores are ${NAMES.join(', ')}`);
    }
  }
  if (names.includes('postgres') && !process.env.TOKENVAULT_TEST_PG_URL) {
    throw new Error('TOKENVAULT_TEST_STORES names postgres, but TOKENVAULT_TEST_PG_URL is not set');
  }
  return names as StoreName[];
}

export const SELECTED_STORES = parse(process.env.TOKENVAULT_TEST_STORES);

export const selected = (name: StoreName): boolean => SELECTED_STORES.includes(name);

export const DESELECTED_REASON = 'skipped: not in TOKENVAULT_TEST_STORES';
