import type { Caller } from '../auth/caller.js';
import type { CreateTokenInput, UpdateTokenInput } from '../tokens/token-input.js';
import type { ListTokensQuery, TokenService } from '../tokens/token-service.js';
import type { HostApiTree } from '../sandbox/sandbox.js';

/** Sees every value a bt call hands to reactor code, by method (`tokens.retrieve`, `reactors.react`…). */
export type BtResultObserver = (method: string, result: unknown) => void;

/** Runs a nested reactor as `caller` (ReactorService binds its nesting depth). */
export type NestedReact = (caller: Caller, id: string, body: unknown) => Promise<unknown>;

/**
 * The `req.bt` tree of a reactor run: the vault's own services called in-process as the reactor's
 * application, so bt can do exactly what that application's permissions and access rules allow and
 * nothing more. Every result is copied as JSON, so reactor code never holds a host object.
 */
export function createBtTree(tokens: TokenService, react: NestedReact, caller: Caller, observe?: BtResultObserver): HostApiTree {
  const call =
    <A extends unknown[]>(fn: (...args: A) => Promise<unknown>, method: string) =>
    async (...args: unknown[]): Promise<unknown> => {
      const result = toJson(await fn(...(args as A)));
      observe?.(method, result);
      return result;
    };
  return {
    tokens: {
      // Reactor code passes anything: the service validates it.
      create: call((body: unknown) => tokens.create(caller, body as CreateTokenInput), 'tokens.create'),
      retrieve: call((id: unknown) => tokens.get(caller, id as string), 'tokens.retrieve'),
      update: call((id: unknown, body: unknown) => tokens.update(caller, id as string, body as UpdateTokenInput), 'tokens.update'),
      delete: call((id: unknown) => tokens.delete(caller, id as string), 'tokens.delete'),
      list: call((query: unknown) => tokens.list(caller, (query ?? {}) as ListTokensQuery), 'tokens.list'),
    },
    tokenize: call((body: unknown) => tokens.tokenize(caller, body), 'tokenize'),
    reactors: {
      react: call((id: unknown, body: unknown) => react(caller, id as string, body), 'reactors.react'),
    },
  };
}

function toJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

/**
 * The tokens a bt result shows the run: the token of `tokens.retrieve`, `create` and `update`, the
 * page of `tokens.list`, the tokens of `tokenize`. Found by shape (token views: `id`, `type` and
 * `tenant_id` strings), never inside a token view, so an id written into a token's data or
 * metadata does not count. `tokens.delete` shows none, and a nested `reactors.react` reports its
 * own reads.
 */
export function btTokenIds(method: string, result: unknown): string[] {
  if (method === 'reactors.react' || method === 'tokens.delete') return [];
  return tokenViewIds(result);
}

/** The ids of the token views in a value (a tokenize response, a list page, one token). */
export function tokenViewIds(value: unknown, ids: string[] = [], depth = 0): string[] {
  if (depth > 64 || typeof value !== 'object' || value === null) return ids;
  if (Array.isArray(value)) {
    for (const item of value) tokenViewIds(item, ids, depth + 1);
    return ids;
  }
  const record = value as Record<string, unknown>;
  if (typeof record['id'] === 'string' && typeof record['type'] === 'string' && typeof record['tenant_id'] === 'string') {
    ids.push(record['id']);
    return ids;
  }
  for (const item of Object.values(record)) tokenViewIds(item, ids, depth + 1);
  return ids;
}
