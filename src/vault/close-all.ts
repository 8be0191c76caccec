/** One part of a vault that `close()` closes, named for the error that reports it. */
export type Closer = readonly [part: string, close: () => unknown];

/**
 * Runs every closer in order, each even when an earlier one failed (a store refusing the last job
 * write must not leave the audit queue unflushed or the store open); then, when any failed, rejects
 * with one AggregateError: its `errors` are the closers' errors in order, its message names the
 * parts (docs/operations.md, "Background work"). Not a VaultError: nothing here answers a request.
 */
export async function closeAll(closers: readonly Closer[]): Promise<void> {
  const failed: { part: string; error: unknown }[] = [];
  for (const [part, close] of closers) {
    try {
      await close();
    } catch (error) {
      failed.push({ part, error });
    }
  }
  if (failed.length > 0)
    throw new AggregateError(
      failed.map((f) => f.error),
      `closing the vault failed: ${failed.map((f) => f.part).join(', ')}`,
    );
}
