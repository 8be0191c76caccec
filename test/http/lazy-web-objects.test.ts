/** The lazily built Request (Node adapter) and Response (fetch handler) behave as the web classes do. */
import { once } from 'node:events';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { textResponse } from '../../src/http/json-response.js';
import { toNodeListener } from '../../src/http/node.js';

describe('the fetch handler’s Response', () => {
  const make = () => textResponse('{"a":1}', 201, { 'content-type': 'application/json', 'cache-control': 'no-store' });

  it('is a Response with its status, headers and body', async () => {
    const response = make();
    expect(response).toBeInstanceOf(Response);
    expect([response.status, response.ok, response.headers.get('content-type')]).toEqual([201, true, 'application/json']);
    expect(await response.json()).toEqual({ a: 1 });
    expect(response.bodyUsed).toBe(true);
    await expect(response.text()).rejects.toBeInstanceOf(TypeError);
  });

  it('reads as bytes, as a stream, and clones, like a real Response', async () => {
    expect(new TextDecoder().decode(await make().arrayBuffer())).toBe('{"a":1}');
    expect(await new Response(make().body).text()).toBe('{"a":1}');
    const original = make();
    expect(await original.clone().text()).toBe('{"a":1}');
    expect(await original.text()).toBe('{"a":1}');
    expect(await textResponse(null, 204, {}).text()).toBe('');
  });

  it('has Headers that read as a Headers made from the same record, before and after a change', () => {
    const record = { 'x-b': '2', 'content-type': 'application/json', 'set-cookie': 'a=1', 'cache-control': 'no-store' };
    const lazy = textResponse(null, 200, record).headers;
    const real = new Headers(record);
    const read = (h: Headers) => {
      const each: string[][] = [];
      h.forEach((value, name, parent) => each.push([name, value, String(parent === h)]));
      return {
        each,
        entries: [...(h as unknown as Iterable<[string, string]>)],
        get: [h.get('Content-Type'), h.get('x-none')],
        has: [h.has('X-B'), h.has('x-none')],
        cookies: h.getSetCookie(),
      };
    };
    expect(lazy).toBeInstanceOf(Headers);
    expect(read(lazy)).toEqual(read(real));
    for (const h of [lazy, real]) {
      h.append('x-b', '3');
      h.delete('cache-control');
      h.set('x-a', '1');
    }
    expect(read(lazy)).toEqual(read(real));
    expect(record).toEqual({ 'x-b': '2', 'content-type': 'application/json', 'set-cookie': 'a=1', 'cache-control': 'no-store' });
  });
});

describe('the Node adapter’s Request', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  /** Serves one request, handing what the handler saw back to the test. */
  async function seen<T>(inspect: (request: Request) => Promise<T>, init: RequestInit & { path?: string } = {}): Promise<T> {
    let result!: T;
    server = createServer(
      toNodeListener(async (request) => {
        result = await inspect(request);
        return new Response(null, { status: 204 });
      }),
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}${init.path ?? '/'}`, init);
    return result;
  }

  it('is a Request whose method, URL and headers come from the message', async () => {
    const saw = await seen(async (r) => ({ isRequest: r instanceof Request, method: r.method, url: r.url, key: r.headers.get('X-Key'), has: r.headers.has('x-key') }), {
      path: '/tokens/a?b=1',
      headers: { 'x-key': 'k1' },
    });
    expect(saw).toEqual({ isRequest: true, method: 'GET', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/tokens\/a\?b=1$/), key: 'k1', has: true });
  });

  it('reads its body as text, as bytes, as a stream, and clones, like a real Request', async () => {
    const body = JSON.stringify({ n: 1 });
    expect(await seen((r) => r.text(), { method: 'POST', body })).toBe(body);
    expect(new TextDecoder().decode(await seen((r) => r.arrayBuffer(), { method: 'POST', body }))).toBe(body);
    expect(await seen((r) => new Response(r.body).text(), { method: 'POST', body })).toBe(body);
    expect(await seen((r) => r.clone().json(), { method: 'POST', body })).toEqual({ n: 1 });
    // A body that arrives in many chunks: the bytes exactly, in order, in an ArrayBuffer of their own.
    const large = JSON.stringify({ s: 'abcdefghij'.repeat(30_000) });
    const bytes = await seen((r) => r.arrayBuffer(), { method: 'POST', body: large });
    expect(bytes.byteLength).toBe(large.length);
    expect(new TextDecoder().decode(bytes)).toBe(large);
    expect(await seen((r) => r.text(), { method: 'POST', body: large })).toBe(large);
    const names = await seen(
      async (r) => {
        const found: string[] = [];
        r.headers.forEach((_value, name) => found.push(name));
        return found;
      },
      { method: 'POST', body },
    );
    expect(names).toContain('content-length');
  });

  it('a body is read once', async () => {
    const second = await seen(
      async (r) => {
        await r.text();
        return r.text().then(
          () => 'read twice',
          (error: unknown) => error,
        );
      },
      { method: 'POST', body: 'x' },
    );
    expect(second).toBeInstanceOf(TypeError);
    // Read straight from the message, it is used as a real Request would be: bodyUsed, and its body stream cannot be read.
    const after = await seen(
      async (r) => {
        await r.arrayBuffer();
        const used = r.bodyUsed;
        const read = await Promise.resolve()
          .then(() => new Response(r.body).text())
          .then(
            () => 'read again',
            (error: unknown) => error,
          );
        return { used, read };
      },
      { method: 'POST', body: 'x' },
    );
    expect(after).toEqual({ used: true, read: expect.any(TypeError) });
  });
});
