/** A body attribute named __proto__ is an unknown attribute like any other: a 400 naming it, never a 500 (found by the HTTP property test). */
import { expect, it } from 'vitest';
import { createFetchHandler } from '../../src/http/index.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('__proto__ in a request body', (store) => {
  it('POST /tokens with {"__proto__": …} is a 400 naming it, and creates nothing', async () => {
    const vault = await store.vault();
    const user = await vault.caller({ permissions: ['token:create', 'token:read'] });
    const handler = createFetchHandler(vault);
    const response = await handler(
      new Request('http://vault.test/tokens', { method: 'POST', headers: { 'content-type': 'application/json', 'SVC-API-KEY': user.key }, body: '{"__proto__":{"x":1}}' }),
    );
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { errors: Record<string, string[]> };
    expect(Object.hasOwn(problem.errors, '__proto__')).toBe(true);
    expect(problem.errors['__proto__']![0]).toMatch(/is not a recognized attribute/);
    expect((await vault.tokens.list(user)).data).toEqual([]);
  });
});
