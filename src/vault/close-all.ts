import { type NamedStep, runEvery } from '../common/run-every.js';

/** One part of a vault that `close()` closes, named for the error that reports it. */
export type Closer = NamedStep<unknown>;

/**
 * Runs every closer in order, each even when an earlier one failed (a store refusing the last job
 * write must not leave the audit queue unflushed or the store open); then, when any failed, rejects
 * with one AggregateError: its `errors` are the closers' errors in order, its message names the
 * parts (docs/operations.md, "Background work"). Not a VaultError: nothing here answers a request.
 */
export async function closeAll(closers: readonly Closer[]): Promise<void> {
  await runEvery(closers, 'closing the vault failed');
}
