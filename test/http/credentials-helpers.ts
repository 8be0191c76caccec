import { createFetchHandler } from '../../src/http/index.js';
import type { TestVault } from '../../src/testing/index.js';
import { BASE, type Sent, read } from './helpers.js';

/** A fetch handler over a given (per-store) test vault, and a JSON caller for it. */
export function over(vault: TestVault) {
  const handler = createFetchHandler(vault);
  return async (method: string, path: string, key: string | null, body?: unknown, contentType = 'application/json'): Promise<Sent> => {
    const headers = new Headers();
    if (key !== null) headers.set('SVC-API-KEY', key);
    if (body !== undefined) headers.set('content-type', contentType);
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return read(await handler(new Request(BASE + path, { method, headers, ...(payload === undefined ? {} : { body: payload }) })));
  };
}
