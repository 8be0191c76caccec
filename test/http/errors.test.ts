import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReactorError, ValidationError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/index.js';
import { INTERNAL_DETAIL, problemOf } from '../../src/http/problem.js';
import type { Vault } from '../../src/vault.js';
import { type Harness, expectProblem, harness, read } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('HTTP errors', (store) => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness({ maxBodyBytes: 1024 }, store);
  });
  afterAll(async () => {
    await h.vault.close();
  });

  describe('routing', () => {
    it('404 problem for an unknown route, with or without a key', async () => {
      for (const path of ['/nope', '/tokens/a/b', '/tokens//', '/Tokens', '/']) {
        const problem = expectProblem(await h.call('GET', path, { key: h.userKey }), 404);
        expect(problem.title).toBe('Not Found');
      }
      expectProblem(await h.call('GET', '/nope'), 404);
    });

    it('405 with an Allow header for a known path and a wrong method', async () => {
      const sent = await h.call('PUT', '/tokens', { key: h.userKey, body: {} });
      expectProblem(sent, 405);
      expect(sent.headers.get('allow')).toBe('GET, POST');
      const byId = await h.call('POST', '/tokens/abc', { key: h.userKey, body: {} });
      expectProblem(byId, 405);
      expect(byId.headers.get('allow')).toBe('DELETE, GET, PATCH');
      const react = await h.call('GET', '/reactors/abc/react', { key: h.userKey });
      expect(react.headers.get('allow')).toBe('POST');
      const health = await h.call('DELETE', '/healthz');
      expect(health.headers.get('allow')).toBe('GET');
    });
  });

  describe('bodies', () => {
    it('413 when Content-Length declares more than maxBodyBytes, before reading anything', async () => {
      let pulled = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          pulled++;
          controller.enqueue(new Uint8Array(10));
        },
      });
      const request = new Request('http://vault.test/tokens', {
        method: 'POST',
        headers: { 'svc-api-key': h.userKey, 'content-type': 'application/json', 'content-length': '5000' },
        body,
        duplex: 'half',
      } as RequestInit);
      expectProblem(await read(await h.handler(request)), 413);
      expect(pulled).toBeLessThanOrEqual(1);
    });

    it('413 while streaming a body with no Content-Length: it stops reading at the limit', async () => {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          sent += 256;
          controller.enqueue(new TextEncoder().encode(' '.repeat(256)));
        },
      });
      const request = new Request('http://vault.test/tokens', {
        method: 'POST',
        headers: { 'svc-api-key': h.userKey, 'content-type': 'application/json' },
        body,
        duplex: 'half',
      } as RequestInit);
      const problem = expectProblem(await read(await h.handler(request)), 413);
      expect(problem.title).toBe('Content Too Large');
      // An endless stream: the handler stopped pulling shortly after the 1024-byte limit.
      expect(sent).toBeLessThan(1024 + 4 * 256);
    });

    it('a body at the limit is read', async () => {
      const body = JSON.stringify({ type: 'token', data: 'x'.repeat(1024 - 30) });
      const padded = body + ' '.repeat(1024 - body.length);
      expect(padded.length).toBe(1024);
      expect((await h.call('POST', '/tokens', { key: h.userKey, body: padded })).status).toBe(201);
      expectProblem(await h.call('POST', '/tokens', { key: h.userKey, body: padded + ' ' }), 413);
    });

    it('400 for invalid UTF-8', async () => {
      const request = new Request('http://vault.test/tokens', {
        method: 'POST',
        headers: { 'svc-api-key': h.userKey, 'content-type': 'application/json' },
        body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
      });
      expectProblem(await read(await h.handler(request)), 400);
    });

    it('an optional body may be absent; present, it must be JSON', async () => {
      const app = (await h.call('POST', '/applications', { key: h.adminKey, body: { name: 'x', type: 'public', permissions: ['token:create'] } })).body;
      const none = await h.call('POST', `/applications/${app.id}/regenerate`, { key: h.adminKey });
      expect(none.status).toBe(200);
      // The Basis Theory SDK's regenerateKey: no body, labelled as a form.
      const emptyForm = await h.call('POST', `/applications/${app.id}/regenerate`, { key: h.adminKey, contentType: 'application/x-www-form-urlencoded' });
      expect(emptyForm.status).toBe(200);
      expectProblem(await h.call('POST', `/applications/${app.id}/regenerate`, { key: h.adminKey, body: 'a=1', contentType: 'application/x-www-form-urlencoded' }), 415);
      const text = await h.call('POST', `/applications/${app.id}/regenerate`, { key: h.adminKey, body: 'hello', contentType: 'text/plain' });
      expectProblem(text, 415);
      const untyped = await h.call('POST', `/applications/${app.id}/regenerate`, { key: h.adminKey, body: '{}', contentType: null });
      expectProblem(untyped, 415);
      const malformed = await h.call('POST', `/applications/${app.id}/regenerate`, { key: h.adminKey, body: '{', contentType: 'application/json' });
      expectProblem(malformed, 400);
    });

    it('DELETE ignores a body (no 415 for it)', async () => {
      const sent = await h.call('DELETE', '/tokens/nope', { key: h.userKey, body: 'not json', contentType: 'text/plain' });
      expectProblem(sent, 404);
    });
  });

  describe('problem documents', () => {
    it('maps every core error code through one table, with field errors for validation', () => {
      expect(problemOf(new ValidationError({ 'data.number': ['is not Luhn-valid'] }))).toEqual({
        type: 'urn:tokenvault:problem:validation-error',
        title: 'Bad Request',
        status: 400,
        detail: 'Validation failed: data.number: is not Luhn-valid',
        errors: { 'data.number': ['is not Luhn-valid'] },
      });
      expect(problemOf(new ReactorError('RateLimitError', 429, 'slow down'))).toMatchObject({ status: 429, title: 'RateLimitError', detail: 'slow down' });
    });

    it('a non-VaultError is a generic 500: fixed detail, logged with its message (data-like text cut) and stack frames', async () => {
      const secret = '4242424242424242';
      const broken = failingVault(h.vault, () => {
        const error = new TypeError(`cannot read ${secret}`);
        return error;
      });
      const logged: { message: string; fields: unknown }[] = [];
      const handler = createFetchHandler(broken, { logger: { info() {}, warn() {}, error: (message, fields) => logged.push({ message, fields }) } });
      const sent = await read(await handler(new Request('http://vault.test/tokens/abc', { headers: { 'svc-api-key': h.userKey } })));
      const problem = expectProblem(sent, 500);
      expect(problem.detail).toBe(INTERNAL_DETAIL);
      expect(sent.text).not.toContain(secret);
      expect(sent.text).not.toContain('TypeError');
      expect(logged).toHaveLength(1);
      expect(logged[0]!.fields).toEqual({ error: 'TypeError', error_message: 'cannot read …', stack: expect.stringMatching(/^\s+at /) });
      expect(JSON.stringify(logged)).not.toContain(secret);
    });

    it('a thrown non-Error value is a 500 too', async () => {
      const handler = createFetchHandler(failingVault(h.vault, () => 'a string'));
      expectProblem(await read(await handler(new Request('http://vault.test/tokens/abc', { headers: { 'svc-api-key': h.userKey } }))), 500);
    });

    it('a reactor CustomHttpResponseError is the reactor’s own response: status, headers, JSON body', async () => {
      const custom = new ReactorError('CustomHttpResponseError', 418, 'teapot', {
        body: { error: 'short and stout' },
        headers: { 'x-reactor': 'yes', 'content-length': '1', 'bad header': 'dropped' },
      });
      const handler = createFetchHandler(failingVault(h.vault, () => custom));
      const sent = await read(await handler(new Request('http://vault.test/tokens/abc', { headers: { 'svc-api-key': h.userKey } })));
      expect(sent.status).toBe(418);
      expect(sent.headers.get('content-type')).toBe('application/json');
      expect(sent.headers.get('x-reactor')).toBe('yes');
      expect(sent.body).toEqual({ error: 'short and stout' });
    });

    it('other reactor errors are problems with the reactor error class as the title', async () => {
      const handler = createFetchHandler(failingVault(h.vault, () => new ReactorError('InvalidPaymentMethodError', 402, 'card declined')));
      const problem = expectProblem(await read(await handler(new Request('http://vault.test/tokens/abc', { headers: { 'svc-api-key': h.userKey } }))), 402);
      expect(problem).toMatchObject({ title: 'InvalidPaymentMethodError', detail: 'card declined', type: 'urn:tokenvault:problem:reactor-error' });
    });
  });

  /** The vault, but GET /tokens/{id} throws what `make` returns. */
  function failingVault(vault: Vault, make: () => unknown): Vault {
    // defineProperty, not assignment: vault.tokens is the vault's guarded service, which takes no writes.
    const tokens = Object.create(vault.tokens, {
      get: {
        value: async () => {
          throw make();
        },
      },
    }) as Vault['tokens'];
    return { ...vault, tokens } as Vault;
  }
});
