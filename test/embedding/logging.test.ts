/**
 * Unexpected errors are logged by default (docs/logging.md): a 500's "it has been logged" holds
 * without configuration, with the message and stack frames; a pino logger is taken as it is.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, expect, it, vi } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { unexpectedErrorFields } from '../../src/common/logger.js';
import { describeEachStore } from '../support/stores.js';

afterEach(() => vi.restoreAllMocks());

describeEachStore('unexpected errors are logged', (store) => {
  it('by default on stderr, with message and stack; with a pino logger, as pino entries with their fields', async () => {
    const vault = await store.vault();
    const key = (await vault.caller({ permissions: ['token:read'] })).key;
    // A fault no service expects: the store fails under a read.
    vi.spyOn(vault.store, 'getToken').mockRejectedValue(new TypeError('store exploded'));
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const response = await createFetchHandler(vault)(new Request('http://vault/tokens/00000000-0000-4000-8000-000000000000', { headers: { 'SVC-API-KEY': key } }));
    vi.mocked(process.stderr.write).mockRestore();
    expect(response.status).toBe(500);
    expect(((await response.json()) as { detail: string }).detail).toBe('An unexpected error occurred; it has been logged.');
    const entry = written.map((line) => JSON.parse(line) as Record<string, string>).find((l) => l.message === 'request failed with an unexpected error');
    expect(entry).toMatchObject({ level: 'error', error: 'TypeError', error_message: 'store exploded' });
    expect(entry!.stack).toMatch(/^\s+at /);

    const lines: string[] = [];
    const logger = pino({ base: null }, new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) }));
    const piped = await createFetchHandler(vault, { logger })(new Request('http://vault/tokens/00000000-0000-4000-8000-000000000000', { headers: { 'SVC-API-KEY': key } }));
    expect(piped.status).toBe(500);
    await new Promise((resolve) => setImmediate(resolve));
    const pinoEntry = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((l) => l.msg === 'request failed with an unexpected error');
    expect(pinoEntry).toMatchObject({ level: 50, error: 'TypeError', error_message: 'store exploded' });
  });
});

it('a JSON parse error is logged without the text it quoted (which may be data)', () => {
  let error: unknown;
  try {
    JSON.parse('{"card": 4242424242424242x}');
  } catch (e) {
    error = e;
  }
  const fields = unexpectedErrorFields(error);
  expect(fields.error).toBe('SyntaxError');
  expect(JSON.stringify(fields)).not.toContain('4242424242424242');
});
