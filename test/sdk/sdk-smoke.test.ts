import { expect, it } from 'vitest';
import { describeEachStore } from '../support/stores.js';
import { startSdkServer } from './harness.js';

describeEachStore('Basis Theory SDK harness', (store) => {
  it('creates and retrieves a token through the SDK against the real server', async () => {
    const server = await startSdkServer(store);
    const key = await server.key({
      permissions: ['token:create', 'token:read'],
      rules: [{ description: 'all', priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    });
    const bt = await server.sdk(key);
    const token = await bt.tokens.create({ type: 'token', data: 'secret' });
    expect((await bt.tokens.retrieve(token.id)).data).toBe('secret');
  });
});
