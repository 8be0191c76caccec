import { expect } from 'vitest';
import { ReactorError } from '../../src/errors/errors.js';

/** The ReactorError a run rejects with (the test fails if it resolves or fails otherwise). */
export async function reactorFailure(promise: Promise<unknown>): Promise<ReactorError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the run to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ReactorError);
  return error as ReactorError;
}

/** A promise and the function that resolves it, for a test to hold a run at a point and release it. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
