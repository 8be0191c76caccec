import { BasisTheoryClient } from '@basis-theory/node-sdk';

/** The Node SDK release these tests drive (package.json pins it; docs/basis-theory.md names it). */
export const NODE_SDK_VERSION = '5.7.0';

/** A Node SDK 5 client against `url` (the vault's HTTP API, `--header-prefix BT`), acting with `apiKey`. */
export function nodeSdk(url: string, apiKey: string): BasisTheoryClient {
  // No retries: a failure the test expects is answered once, never sent again.
  return new BasisTheoryClient({ apiKey, environment: url, maxRetries: 0 });
}

/** The status and body of a failed Node SDK call (BasisTheoryError and its subclasses). */
export async function nodeSdkFailure(promise: Promise<unknown>): Promise<{ status: number; body: any }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { statusCode?: number; body?: unknown };
    if (typeof e.statusCode === 'number') return { status: e.statusCode, body: e.body };
    throw error;
  }
  throw new Error('expected the Node SDK call to fail');
}
