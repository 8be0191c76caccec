import type { Caller } from '../caller.js';
import type { ListTokensQuery, TokenService } from '../tokens/token-service.js';
import type { HostApiTree } from '../sandbox/sandbox.js';

/** Runs a nested reactor as `caller` (ReactorService binds its nesting depth). */
export type NestedReact = (caller: Caller, id: string, body: unknown) => Promise<unknown>;

/**
 * The `req.bt` tree of a reactor run: the vault's own services called in-process as the reactor's
 * application, so bt can do exactly what that application's permissions and access rules allow and
 * nothing more. Every result is copied as JSON, so reactor code never holds a host object.
 */
export function createBtTree(tokens: TokenService, react: NestedReact, caller: Caller): HostApiTree {
  const call =
    <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
    async (...args: unknown[]): Promise<unknown> =>
      toJson(await fn(...(args as A)));
  return {
    tokens: {
      create: call((body: unknown) => tokens.create(caller, body)),
      retrieve: call((id: unknown) => tokens.get(caller, id as string)),
      update: call((id: unknown, body: unknown) => tokens.update(caller, id as string, body)),
      delete: call((id: unknown) => tokens.delete(caller, id as string)),
      list: call((query: unknown) => tokens.list(caller, (query ?? {}) as ListTokensQuery)),
    },
    tokenize: call((body: unknown) => tokens.tokenize(caller, body)),
    reactors: {
      react: call((id: unknown, body: unknown) => react(caller, id as string, body)),
    },
  };
}

function toJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}
