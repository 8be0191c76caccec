import { beforeEach, expect, it } from 'vitest';
import { AuthorizationError, NotFoundError, ValidationError } from '../../src/errors/errors.js';
import type { TestVault } from '../../src/testing/index.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL, snapshot } from '../support/tokens.js';
import { describeEachStore } from '../support/stores.js';

/*
 * A token the caller holds no grant on is answered exactly as a missing id, on
 * every operation that takes a token id, so guessable ids (`cust-10042-ssn`) are no existence
 * oracle. A caller holding some other grant on the token (it can list or read it) still gets 403,
 * and a caller lacking the permission altogether gets 403 before any lookup (docs/security.md, "Security model").
 */

type Caller = Awaited<ReturnType<TestVault['caller']>>;

/** The error a call fails with (it must fail). */
async function failure(call: () => Promise<unknown>): Promise<Error> {
  return call().then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error as Error,
  );
}

/** An error as a caller sees it: its class, message and field errors, with `id` written as `<id>`. */
function seen(error: Error, id: string): unknown {
  const errors = error instanceof ValidationError ? error.errors : undefined;
  return JSON.parse(JSON.stringify({ name: error.name, message: error.message, errors }).replaceAll(id, '<id>'));
}

describeEachStore('no existence oracle on token ids', (store) => {
  let vault: TestVault;
  let owner: Caller;
  /** Every token permission, granted on /general/ only. */
  let stranger: Caller;
  /** Reads everywhere (masked); updates, deletes and uses on /general/ only. */
  let reader: Caller;
  const HIDDEN = 'cust-10042-ssn';
  const MISSING = 'cust-10043-ssn';

  beforeEach(async () => {
    vault = await store.vault();
    owner = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL, name: 'owner' });
    stranger = await vault.caller({
      permissions: ALL_TOKEN_PERMISSIONS,
      rules: [{ priority: 0, container: '/general/', transform: 'reveal', permissions: ALL_TOKEN_PERMISSIONS }],
      name: 'stranger',
    });
    reader = await vault.caller({
      permissions: ALL_TOKEN_PERMISSIONS,
      rules: [
        { priority: 0, container: '/general/', transform: 'reveal', permissions: ['token:update', 'token:delete', 'token:use'] },
        { priority: 1, container: '/', transform: 'mask', permissions: ['token:read'] },
      ],
      name: 'reader',
    });
    await vault.tokens.create(owner, { type: 'social_security_number', data: '123-45-6789', id: HIDDEN });
  });

  /** Each operation that takes a token id, as `caller` calls it on `id`. */
  const operations = (caller: () => Caller): [string, (id: string) => Promise<unknown>][] => [
    ['get', (id) => vault.tokens.get(caller(), id)],
    ['update', (id) => vault.tokens.update(caller(), id, { metadata: { k: 'v' } })],
    ['delete', (id) => vault.tokens.delete(caller(), id)],
    ['use', (id) => vault.tokens.use(caller(), [id])],
    ['detokenize', (id) => vault.detokenize.detokenize(caller(), { ssn: `{{ ${id} }}` })],
  ];

  it('a token the caller holds no grant on is answered exactly as a missing id, and left unchanged', async () => {
    const before = await snapshot(vault, owner);
    for (const [name, call] of operations(() => stranger)) {
      const hidden = await failure(() => call(HIDDEN));
      const missing = await failure(() => call(MISSING));
      expect(hidden, name).toBeInstanceOf(name === 'detokenize' ? ValidationError : NotFoundError);
      expect(seen(hidden, HIDDEN), name).toEqual(seen(missing, MISSING));
    }
    expect(await snapshot(vault, owner)).toEqual(before);
  });

  it('a caller with some other grant on the token is refused with 403: it can see the token exists', async () => {
    expect((await vault.tokens.get(reader, HIDDEN)).id).toBe(HIDDEN);
    for (const [name, call] of operations(() => reader).filter(([n]) => n !== 'get')) {
      const error = await failure(() => call(HIDDEN));
      expect(error, name).toBeInstanceOf(AuthorizationError);
      expect(error.message, name).not.toContain('/pii/');
    }
    // A missing id stays a missing id for it.
    await expect(vault.tokens.delete(reader, MISSING)).rejects.toThrow(new NotFoundError('Token', MISSING));
  });

  it('a caller lacking the permission altogether is refused with 403 before any lookup, whether the id exists or not', async () => {
    const creator = await vault.caller({ permissions: ['token:create'], name: 'creator' });
    for (const id of [HIDDEN, MISSING]) {
      await expect(vault.tokens.get(creator, id)).rejects.toThrow(AuthorizationError);
      await expect(vault.tokens.delete(creator, id)).rejects.toThrow(AuthorizationError);
      await expect(vault.tokens.use(creator, [id])).rejects.toThrow(AuthorizationError);
    }
  });

  it("a grant on one of the token's containers is no grant on the token", async () => {
    await vault.tokens.create(owner, { type: 'token', data: 'two homes', id: 'split', containers: ['/general/', '/pii/'] });
    const error = await failure(() => vault.tokens.get(stranger, 'split'));
    expect(seen(error, 'split')).toEqual(seen(await failure(() => vault.tokens.get(stranger, MISSING)), MISSING));
  });
});
