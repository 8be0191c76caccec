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
