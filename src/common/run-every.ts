/** One named step of runEvery: its name is what the error reports when it fails. */
export type NamedStep<T> = readonly [name: string, run: () => T | Promise<T>];

/**
 * Runs every step in order, each even when an earlier one failed, and answers their results; when
 * any failed, rejects instead with one AggregateError whose `errors` are the steps' errors in order
 * and whose message is `failure` followed by the failed steps' names. For work where one part's
 * fault must not leave the others undone (closing a vault, the sweep's concerns).
 */
export async function runEvery<T>(steps: readonly NamedStep<T>[], failure: string): Promise<T[]> {
  const results: T[] = [];
  const failed: { name: string; error: unknown }[] = [];
  for (const [name, run] of steps) {
    try {
      results.push(await run());
    } catch (error) {
      failed.push({ name, error });
    }
  }
  if (failed.length > 0)
    throw new AggregateError(
      failed.map((f) => f.error),
      `${failure}: ${failed.map((f) => f.name).join(', ')}`,
    );
  return results;
}
