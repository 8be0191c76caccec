/**
 * The smaller items at the HTTP edge: the standard Idempotency-Key header, a management key
 * on token routes, the SDK's camelCase react fields, the callback refusal naming the CLI flag, and
 * the README's account of GET /applications/key. Each refusal changes nothing.
 */
import { expect, it } from 'vitest';
import { SERVE_HELP } from '../../src/cli/run.js';
import { describeEachStore } from '../support/stores.js';
import { harness } from './helpers.js';

describeEachStore('embedding edges over HTTP (headers, key kinds, SDK field names, refusals that change nothing)', (store) => {
  it('the standard Idempotency-Key header is refused, naming ours; nothing is created', async () => {
    const h = await harness({}, store);
    const sent = await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x' }, headers: { 'Idempotency-Key': 'retry-1' } });
    expect(sent.status).toBe(400);
    expect(sent.body.errors).toEqual({ 'Idempotency-Key': ['is not read by this vault: send the idempotency key in the SVC-IDEMPOTENCY-KEY header'] });
    expect((await h.call('GET', '/tokens', { key: h.userKey })).body.data).toEqual([]);
    expect((await h.call('POST', '/tokens', { key: h.userKey, body: { type: 'token', data: 'x' }, headers: { 'SVC-IDEMPOTENCY-KEY': 'retry-1' } })).status).toBe(201);
  });

  it('a management key on /tokens is told management applications never hold token permissions', async () => {
    const h = await harness({}, store);
    const sent = await h.call('GET', '/tokens', { key: h.adminKey });
    expect(sent.status).toBe(403);
    expect(sent.body.detail).toBe(
      "The application lacks the 'token:read' permission; management applications never hold token permissions: use a private or public application (docs/authority.md)",
    );
  });

  it("react takes the SDK's callbackUrl and timeoutMs; a private callback address names the CLI flag; both spellings are refused", async () => {
    const h = await harness({}, store);
    const reactor = await h.call('POST', '/reactors', { key: h.userKey, body: { name: 'r', code: 'module.exports = async () => ({ raw: 1 })' } });
    expect(reactor.status).toBe(201);
    const path = `/reactors/${reactor.body.id}/react`;
    const accepted = await h.call('POST', path, { key: h.userKey, body: { args: {}, callbackUrl: 'https://example.com/callback', timeoutMs: 45_000 } });
    expect(accepted.status).toBe(202);
    expect(accepted.body.status).toBe('pending');
    const tooShort = await h.call('POST', path, { key: h.userKey, body: { callbackUrl: 'https://example.com/callback', timeoutMs: 0 } });
    expect(tooShort.status).toBe(400);
    expect(Object.keys(tooShort.body.errors)).toEqual(['timeout_ms']);
    const both = await h.call('POST', path, { key: h.userKey, body: { callbackUrl: 'https://example.com/a', callback_url: 'https://example.com/b' } });
    expect(both.body.errors).toEqual({ callbackUrl: ['give callback_url or callbackUrl, not both'] });
    const local = await h.call('POST', path, { key: h.userKey, body: { callbackUrl: 'http://127.0.0.1:9/callback' } });
    expect(local.status).toBe(400);
    expect(local.body.errors.callback_url[0]).toMatch(/reactors\.egress\.allowPrivateNetwork \(tokenvault serve --allow-private-network\)$/);
    // Only the first was accepted as a run.
    expect(await h.vault.worker.depth()).toBe(1);
  });

  it("GET /applications/key (the SDK's getByKey / retrieveByKey): the calling key's own application, with no application:read needed", async () => {
    const h = await harness({}, store);
    const mine = await h.call('GET', '/applications/key', { key: h.userKey });
    const admin = await h.call('GET', '/applications/key', { key: h.adminKey });
    expect([mine.status, admin.status]).toEqual([200, 200]);
    expect(admin.body.type).toBe('management');
    expect(mine.body.type).not.toBe('management');
    expect(mine.body.id).not.toBe(admin.body.id);
  });
});

it("serve's --allow-private-network help names webhooks and callbacks too", () => {
  expect(SERVE_HELP).toMatch(/--allow-private-network\s+Let reactor fetch, webhooks, reactor callbacks and \/proxy reach\s+loopback and private addresses/);
});
