/**
 * Reactor runs that await a slow upstream overlap, and waiting for a worker is not running
 * (worker-pool.ts, run-task.ts): a burst of one application's invocations whose code awaits a
 * `fetch` all succeed, several of them awaiting on one worker at once; the time each waited in the
 * queue is reported apart from its run time; a run that cannot start within `maxQueueWaitMs` gets
 * a 503 with Retry-After, never the time limit's error; runaway code is still stopped.
 *
 * The upstream is a local server that answers only when the test releases it: every wait is on an
 * event (requests reached it, a run settled). The one real-time bound is the queue-wait bound of
 * the 503 test, which only has to pass, not to take any given time.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServiceUnavailableError } from '../../src/errors/errors.js';
import { createFetchHandler } from '../../src/http/fetch-handler.js';
import type { RunTimes } from '../../src/sandbox/pool/worker-pool.js';
import { type Fixture, fixture, rejection } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

/** A local upstream holding every request until `release()`; `reached(n)` resolves once n have arrived in all. */
class HeldUpstream {
  readonly #server: Server;
  #held: ServerResponse[] = [];
  #arrived = 0;
  #waiters: { n: number; resolve: () => void }[] = [];
  constructor() {
    this.#server = createServer((_req: IncomingMessage, res: ServerResponse) => {
      this.#held.push(res);
      this.#arrived++;
      for (const w of this.#waiters.filter((x) => x.n <= this.#arrived)) w.resolve();
    });
  }
  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/slow`;
  }
  get waiting(): number {
    return this.#held.length;
  }
  reached(n: number): Promise<void> {
    if (this.#arrived >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ n, resolve }));
  }
  release(): void {
    for (const res of this.#held.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  }
  close(): Promise<void> {
    this.release();
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

const SLOW_FETCH = 'module.exports = async (req) => { const r = await fetch(req.args.url); return { raw: await r.json() }; }';

describeEachStore('reactor queue time', (store) => {
  let upstream: HeldUpstream;
  let url: string;
  beforeEach(async () => {
    upstream = new HeldUpstream();
    url = await upstream.listen();
  });
  afterEach(() => upstream.close());

  const egress = { allowHosts: ['127.0.0.1'], allowPrivateNetwork: true };

  it('8 concurrent invokes of one application awaiting a slow upstream all succeed, 4 at a time on one worker', async () => {
    const times: RunTimes[] = [];
    const f: Fixture = await fixture({ reactors: { egress, workers: { size: 1, runsPerWorker: 4 }, onRunTimes: (t) => times.push(t) } }, store);
    const id = await f.reactor(SLOW_FETCH);
    times.length = 0; // saving the formula loaded its code in a run of its own
    const invokes = Array.from({ length: 8 }, () => f.vault.reactors.react(f.user, id, { args: { url } }));
    // The first four overlap on the worker: each joined while the others awaited their fetch.
    await upstream.reached(4);
    expect(upstream.waiting).toBe(4);
    upstream.release();
    await upstream.reached(8);
    upstream.release();
    const results = await Promise.all(invokes);
    expect(results).toEqual(Array.from({ length: 8 }, () => ({ raw: { ok: true } })));
    // Each run's wait for the worker is reported apart from its run time.
    expect(times).toHaveLength(8);
    for (const t of times) {
      expect(t.runMs).not.toBeNull();
      expect(t.queuedMs).toBeGreaterThanOrEqual(0);
    }
  });

  it('a run still queued after maxQueueWaitMs answers 503 with Retry-After, not the time limit error, and changes nothing', async () => {
    const f: Fixture = await fixture({ reactors: { egress, workers: { size: 1, runsPerWorker: 1, maxQueueWaitMs: 50 } } }, store);
    const id = await f.reactor(SLOW_FETCH);
    const first = f.vault.reactors.react(f.user, id, { args: { url } });
    first.catch(() => undefined);
    await upstream.reached(1);
    const error = await rejection(() => f.vault.reactors.react(f.user, id, { args: { url } }));
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error).toMatchObject({ retryAfterSeconds: 1, message: 'No reactor worker was free within 50 ms; try again' });

    // Over HTTP: the status and the header.
    const handler = createFetchHandler(f.vault);
    const key = (await f.vault.caller({ name: 'http', permissions: ['token:use'] })).key;
    const response = await handler(
      new Request(`http://vault.test/reactors/${id}/react`, {
        method: 'POST',
        headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' },
        body: JSON.stringify({ args: { url } }),
      }),
    );
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.text()).not.toMatch(/time limit/);
    // The refused runs never reached the upstream.
    expect(upstream.waiting).toBe(1);
    upstream.release();
    await expect(first).resolves.toEqual({ raw: { ok: true } });
  });

  it('runaway code is still stopped at its time limit', async () => {
    const f: Fixture = await fixture({ reactors: { limits: { timeoutMs: 200 } } }, store);
    const id = await f.reactor('module.exports = () => { for (;;) {} }');
    const error = await rejection(() => f.vault.reactors.react(f.user, id, {}));
    expect(error.message).toBe('Reactor exceeded its time limit of 200 ms');
  });
});
