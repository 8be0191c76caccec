/** The answer of an insert: `'exists'` (nothing written) when the id (or another unique key) is taken. */
export type Inserted = 'created' | 'exists';

/**
 * The answer of a record update: the record as stored after it; `not_found`; `changed` when the
 * precondition no longer held (a concurrent update came first; nothing written); `last_holder`
 * (applications, see updateApplication).
 */
export type RecordUpdateResult<T> = { status: 'updated'; record: T } | { status: 'not_found' } | { status: 'changed' };
