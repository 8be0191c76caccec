import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { describeEachStore } from '../support/stores.js';
import { expectProblem, read, type Sent } from './helpers.js';

const FULL = ['application:create', 'application:read', 'application:update', 'application:delete', 'log:read'];

describeEachStore("a tenant's last administrator application", (store) => {
  async function setup() {
    const vault = await store.vault();
    const handler = createFetchHandler(vault);
    const call = async (method: string, path: string, body?: unknown, key = vault.adminKey): Promise<Sent> => {
      const headers: Record<string, string> = { 'svc-api-key': key };
      if (body !== undefined) headers['content-type'] = 'application/json';
      return read(await handler(new Request(`http://vault.test${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })));
    };
    const apps = (await call('GET', '/applications')).body.data as { id: string; permissions: string[] }[];
    expect(apps).toHaveLength(1);
    return { vault, call, adminId: apps[0]!.id };
  }

  const refused = (sent: Sent) => {
    const problem = expectProblem(sent, 409);
    expect(problem.detail).toMatch(/last application holding application:create and application:update/);
  };

  it('cannot delete itself, and still works afterwards', async () => {
    const { call, adminId } = await setup();
    refused(await call('DELETE', `/applications/${adminId}`));
    expect((await call('GET', `/applications/${adminId}`)).status).toBe(200);
  });

  it('cannot drop application:create or application:update from itself; other updates pass', async () => {
    const { call, adminId } = await setup();
    refused(await call('PUT', `/applications/${adminId}`, { name: 'admin', permissions: FULL.filter((p) => p !== 'application:update') }));
    refused(await call('PUT', `/applications/${adminId}`, { name: 'admin', permissions: FULL.filter((p) => p !== 'application:create') }));
    expect((await call('GET', `/applications/${adminId}`)).body.permissions).toContain('application:update');
    expect((await call('PUT', `/applications/${adminId}`, { name: 'renamed', permissions: FULL })).status).toBe(200);
  });

  it('another management application may delete it once that one holds both; then that one is the last', async () => {
    const { call, adminId } = await setup();
    const created = await call('POST', '/applications', { name: 'second', type: 'management', permissions: FULL });
    expect(created.status).toBe(201);
    const second = created.body as { id: string; key: string };
    expect((await call('DELETE', `/applications/${adminId}`, undefined, second.key)).status).toBe(204);
    refused(await call('DELETE', `/applications/${second.id}`, undefined, second.key));
    refused(await call('PUT', `/applications/${second.id}`, { name: 'second', permissions: ['log:read'] }, second.key));
  });

  it('a second management application without application:update does not count', async () => {
    const { call, adminId } = await setup();
    const partial = await call('POST', '/applications', { name: 'partial', type: 'management', permissions: ['application:create', 'application:delete'] });
    expect(partial.status).toBe(201);
    // Not an administrator, and it does not hold the administrator's grants: it may not delete it.
    const problem = expectProblem(await call('DELETE', `/applications/${adminId}`, undefined, partial.body.key), 403);
    expect(problem.detail).toMatch(/tenant administrator/);
    expect((await call('GET', `/applications/${adminId}`)).status).toBe(200);
  });
});
