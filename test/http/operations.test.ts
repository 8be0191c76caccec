import { Writable } from 'node:stream';
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { accessLog, createFetchHandler, observeAll, type ExchangeEvent } from '../../src/http/index.js';
import { createMetrics } from '../../src/observability/index.js';
import { describeEachStore } from '../support/stores.js';
import { VISA } from './helpers.js';

function request(path: string, init: { method?: string; key?: string; body?: unknown } = {}): Request {
  const headers = new Headers();
  if (init.key !== undefined) headers.set('SVC-API-KEY', init.key);
  if (init.body !== undefined) headers.set('content-type', 'application/json');
  return new Request(`http://vault.test${path}`, { method: init.method ?? 'GET', headers, ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }) });
}

describeEachStore('operations: readiness, access log, metrics, PUT /applications', (store) => {
  it('GET /readyz answers 200 while the store answers and 503 (nothing about the cause) once it does not', async () => {
    const vault = await store.vault();
    const handler = createFetchHandler(vault);
    const ready = await handler(request('/readyz'));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok' });
    // The store fails from now on (as a lost database connection would).
    const original = vault.store.getTenant.bind(vault.store);
    vault.store.getTenant = async () => {
      throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:5432'), { code: 'ECONNREFUSED' });
    };
    try {
      const down = await handler(request('/readyz'));
      expect(down.status).toBe(503);
      const text = await down.text();
      expect(JSON.parse(text)).toMatchObject({ status: 503, type: 'urn:tokenvault:problem:service-unavailable' });
      expect(text).not.toContain('10.0.0.7');
      // Liveness does not depend on the store.
      expect((await handler(request('/healthz'))).status).toBe(200);
    } finally {
      vault.store.getTenant = original;
    }
  });

  it('onExchange: one event per request with the route template and application id; the access log holds no ids, keys, bodies or query values', async () => {
    const vault = await store.vault();
    const events: ExchangeEvent[] = [];
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const log = pino({ base: null }, sink);
    const handler = createFetchHandler(vault, { onExchange: observeAll((e) => events.push(e), accessLog(log)) });
    const app = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const started = performance.now();
    const created = await handler(request('/tokens', { method: 'POST', key: app.key, body: { type: 'card', data: VISA, metadata: { customer: 'cus_secret' } } }));
    const id = ((await created.json()) as { id: string }).id;
    await handler(request(`/tokens/${id}`, { key: app.key }));
    await handler(request('/tokens?metadata.customer=cus_secret', { key: app.key }));
    await handler(request('/tokens', { key: 'not-a-key' }));
    await handler(request('/nowhere'));
    const elapsed = performance.now() - started;
    expect(events.map(({ method, route, status, applicationId }) => ({ method, route, status, applicationId }))).toEqual([
      { method: 'POST', route: '/tokens', status: 201, applicationId: app.applicationId },
      { method: 'GET', route: '/tokens/{id}', status: 200, applicationId: app.applicationId },
      { method: 'GET', route: '/tokens', status: 200, applicationId: app.applicationId },
      { method: 'GET', route: '/tokens', status: 401, applicationId: null },
      { method: 'GET', route: null, status: 404, applicationId: null },
    ]);
    // Each duration is its own request's: within the time all five took, and not all of it.
    for (const event of events) expect(event.durationMs).toBeGreaterThan(0);
    expect(events.reduce((sum, event) => sum + event.durationMs, 0)).toBeLessThanOrEqual(elapsed);
    expect(lines).toHaveLength(5);
    const first = JSON.parse(lines[0]!);
    expect(first).toMatchObject({ msg: 'request', method: 'POST', route: '/tokens', status: 201, application_id: app.applicationId });
    expect(typeof first.duration_ms).toBe('number');
    const all = lines.join('');
    for (const secret of [id, app.key, 'cus_secret', '4242', 'not-a-key']) expect(all).not.toContain(secret);
    // An observer that throws changes no response.
    const throwing = createFetchHandler(vault, {
      onExchange: () => {
        throw new Error('observer failed');
      },
    });
    expect((await throwing(request(`/tokens/${id}`, { key: app.key }))).status).toBe(200);
    expect((await throwing(request('/nowhere'))).status).toBe(404);
  });

  it('metrics: requests by route and status, a latency histogram, reactor runs and the job queue depth', async () => {
    const vault = await store.vault();
    const metrics = createMetrics();
    const handler = createFetchHandler(vault, { onExchange: metrics.observe });
    const app = await vault.caller({ permissions: ['token:create', 'token:read', 'token:use'] });
    const admin = vault.adminKey;
    const formula = await handler(request('/reactor-formulas', { method: 'POST', key: admin, body: { name: 'f', code: 'module.exports = async () => ({ raw: 1 })' } }));
    const formulaId = ((await formula.json()) as { id: string }).id;
    const reactor = await handler(request('/reactors', { method: 'POST', key: admin, body: { name: 'r', formula: { id: formulaId }, configuration: {} } }));
    const reactorId = ((await reactor.json()) as { id: string }).id;
    expect((await handler(request(`/reactors/${reactorId}/react`, { method: 'POST', key: app.key, body: { args: {} } }))).status).toBe(200);
    await handler(request('/tokens', { key: app.key }));
    await handler(request('/tokens', { key: app.key }));
    await handler(request('/tokens/nope', { key: app.key }));
    metrics.setJobQueueDepth(() => 7);
    metrics.setAuditStats(() => ({ queued: 3, flushFailures: 2, droppedEntries: 0 }));
    const text = await metrics.render();
    expect(text).toContain('tokenvault_audit_queued 3');
    expect(text).toContain('tokenvault_audit_flush_failures_total 2');
    expect(text).toContain('tokenvault_audit_dropped_entries_total 0');
    expect(text).toContain('tokenvault_http_requests_total{method="GET",route="/tokens",status="200"} 2');
    expect(text).toContain('tokenvault_http_requests_total{method="GET",route="/tokens/{id}",status="404"} 1');
    expect(text).toContain('tokenvault_http_request_duration_seconds_count{method="GET",route="/tokens"} 2');
    expect(text).toContain('tokenvault_reactor_runs_total{status="200"} 1');
    expect(text).toContain('tokenvault_job_queue_depth 7');
    expect(text).not.toContain(reactorId);
  });

  it('metrics: an asynchronous run counts in reactor runs once, when it ends, with its outcome', async () => {
    const metrics = createMetrics();
    const vault = await store.vault({ reactors: { onAsyncRun: metrics.observeAsyncRun } });
    const handler = createFetchHandler(vault, { onExchange: metrics.observe });
    const app = await vault.caller({ permissions: ['token:use'] });
    const admin = vault.adminKey;
    const reactorOf = async (code: string) => {
      const created = await handler(request('/reactors', { method: 'POST', key: admin, body: { name: 'r', code } }));
      expect(created.status).toBe(201);
      return ((await created.json()) as { id: string }).id;
    };
    const ok = await reactorOf('module.exports = async () => ({ raw: 1 })');
    const fails = await reactorOf("module.exports = async () => { throw new BadRequestError('no') }");
    expect((await handler(request(`/reactors/${ok}/react-async`, { method: 'POST', key: app.key, body: { args: {} } }))).status).toBe(202);
    // The asynchronous form of /react (callback_url) is accepted with a 202, not counted as a run yet.
    const body = { args: {}, callback_url: 'https://hooks.example.com/done' };
    expect((await handler(request(`/reactors/${fails}/react`, { method: 'POST', key: app.key, body }))).status).toBe(202);
    expect(await metrics.render()).not.toContain('tokenvault_reactor_runs_total{');
    await vault.worker.runDue();
    const text = await metrics.render();
    expect(text).toContain('tokenvault_reactor_runs_total{status="200"} 1');
    expect(text).toContain('tokenvault_reactor_runs_total{status="400"} 1');
    expect(text).not.toContain('tokenvault_reactor_runs_total{status="202"}');
  });

  it('metrics: each reactor run reports its wait for a worker apart from its run time', async () => {
    const metrics = createMetrics();
    const vault = await store.vault({ reactors: { onRunTimes: metrics.observeReactorRunTimes } });
    const handler = createFetchHandler(vault, { onExchange: metrics.observe });
    const app = await vault.caller({ permissions: ['token:use'] });
    const created = await handler(request('/reactors', { method: 'POST', key: vault.adminKey, body: { name: 'r', code: 'module.exports = async () => ({ raw: 1 })' } }));
    const id = ((await created.json()) as { id: string }).id;
    expect((await handler(request(`/reactors/${id}/react`, { method: 'POST', key: app.key, body: { args: {} } }))).status).toBe(200);
    const text = await metrics.render();
    // Saving the code ran it once to check that it loads; the invocation is the second run.
    expect(text).toContain('tokenvault_reactor_queue_wait_seconds_count 2');
    expect(text).toContain('tokenvault_reactor_run_seconds_count 2');
  });

  it('PUT /applications/{id} keeps permissions and rules it leaves out, replaces those it gives, [] clears', async () => {
    const vault = await store.vault();
    const handler = createFetchHandler(vault);
    const admin = vault.adminKey;
    const rules = [{ priority: 0, container: '/pci/', transform: 'reveal', permissions: ['token:read'] }];
    const created = await handler(
      request('/applications', { method: 'POST', key: admin, body: { name: 'a', type: 'private', permissions: ['token:read', 'token:create'], rules } }),
    );
    const id = ((await created.json()) as { id: string }).id;
    const renamed = await handler(request(`/applications/${id}`, { method: 'PUT', key: admin, body: { name: 'renamed' } }));
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ name: 'renamed', permissions: ['token:read', 'token:create'], rules });
    const got = await handler(request(`/applications/${id}`, { key: admin }));
    expect(await got.json()).toMatchObject({ name: 'renamed', permissions: ['token:read', 'token:create'], rules });
    const replaced = await handler(request(`/applications/${id}`, { method: 'PUT', key: admin, body: { name: 'r', permissions: ['token:read'], rules: [] } }));
    expect(await replaced.json()).toMatchObject({ permissions: ['token:read'], rules: [] });
  });
});
