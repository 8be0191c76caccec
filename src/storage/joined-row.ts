// Two records in one row: a LEFT JOIN names the joined table's columns with a prefix, so that both
// records read back with their own row mappers (Store.getReactorAndFormula in both stores).

/**
 * `t.a, t.b` (a column list over alias `t`, as the row modules of areas/ declare them) as the same columns of
 * alias `alias`, each renamed `<alias>_<column>`.
 * @example aliasedColumns('t.seq, t.id', 'f') // 'f.seq AS f_seq, f.id AS f_id'
 */
export function aliasedColumns(columns: string, alias: string): string {
  return columns
    .split(',')
    .map((column) => column.trim().replace(/^t\./, ''))
    .map((column) => `${alias}.${column} AS ${alias}_${column}`)
    .join(', ');
}

/**
 * The columns aliasedColumns named, under their own names again; null when the LEFT JOIN found no
 * row (its `seq`, never null in a stored record, is null).
 */
export function joinedRow<R>(row: Record<string, unknown>, alias: string): R | null {
  const prefix = `${alias}_`;
  if (row[`${prefix}seq`] === null || row[`${prefix}seq`] === undefined) return null;
  const joined: Record<string, unknown> = {};
  for (const key of Object.keys(row)) if (key.startsWith(prefix)) joined[key.slice(prefix.length)] = row[key];
  return joined as R;
}
