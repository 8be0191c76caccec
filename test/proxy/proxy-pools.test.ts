// The proxy's connection pools (src/proxy/tenant-agents.ts, docs/proxies.md, Connection pools):
// evicting a tenant's pool lets its requests in flight finish, and a connection
// carries one tenant's requests only. A real local destination, both stores.
import type { ServerResponse } from 'node:http';
import { expect, it } from 'vitest';
import type { Caller } from '../../src/auth/caller.js';
import type { TestVault } from '../../src/testing/index.js';
import { describeEachStore } from '../support/stores.js';
import { startReceiver } from './receiver.js';

/** Pools kept at once (tenant-agents.ts): one more tenant than this evicts the oldest. */
const MAX_TENANTS = 128;

async function tenantCaller(vault: TestVault, name: string): Promise<Caller> {
  const { application } = await vault.createTenant({ name });
  const admin = await vault.authenticate(application.key);
  const app = await vault.applications.create(admin, { name: 'caller', type: 'private', permissions: ['proxy:invoke'] });
  return vault.authenticate(app.key!);
}

describeEachStore('proxy connection pools', (store) => {
  it("an eviction waits for the evicted pool's request in flight: the held call gets its answer", { timeout: 120_000 }, async () => {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const receiver = await startReceiver();
    let held: ServerResponse | null = null;
    let arrived!: () => void;
    const heldArrived = new Promise<void>((resolve) => (arrived = resolve));
    receiver.answer = (request, res) => {
      if (request.url === '/charge') {
        held = res;
        arrived();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('other');
    };
    const payer = await vault.caller({ permissions: ['proxy:invoke'] });
    const charge = vault.proxy(payer, { method: 'POST', url: receiver.url, path: '/charge', headers: { 'content-type': 'application/json' }, body: '{"amount":100}' });
    // Awaited below; a cut connection must fail there, not as an unhandled rejection.
    charge.catch(() => undefined);
    await heldArrived;
    // Every other tenant opens its own pool: the payer's, least recently used, is evicted.
    const others: Caller[] = [];
    for (let i = 0; i < MAX_TENANTS; i++) others.push(await tenantCaller(vault, `other ${i}`));
    for (let i = 0; i < others.length; i += 16) {
      const answers = await Promise.all(others.slice(i, i + 16).map((caller) => vault.proxy(caller, { method: 'GET', url: receiver.url, path: '/ping' })));
      for (const answer of answers) expect(answer.status).toBe(200);
    }
    // The destination has acted on the charge; its answer must reach the caller.
    held!.writeHead(201, { 'content-type': 'application/json' });
    held!.end('{"charged":true}');
    const answer = await charge;
    expect(answer.status).toBe(201);
    expect(new TextDecoder().decode(answer.body)).toBe('{"charged":true}');
    expect(receiver.received.filter((r) => r.url === '/charge')).toHaveLength(1);
  });

  it('a connection is reused by its own tenant only', async () => {
    const vault = await store.vault({ reactors: { egress: { allowPrivateNetwork: true } } });
    const receiver = await startReceiver();
    const mine = await vault.caller({ permissions: ['proxy:invoke'] });
    const theirs = await tenantCaller(vault, 'theirs');
    for (const caller of [mine, mine, theirs, theirs, mine]) await vault.proxy(caller, { method: 'GET', url: receiver.url, path: '/p' });
    const ports = receiver.received.map((r) => r.remotePort);
    // Keep-alive within a tenant; the other tenant's requests never ride the first one's connection.
    expect(ports[1]).toBe(ports[0]);
    expect(ports[3]).toBe(ports[2]);
    expect(ports[4]).toBe(ports[0]);
    expect(ports[2]).not.toBe(ports[0]);
  });
});
