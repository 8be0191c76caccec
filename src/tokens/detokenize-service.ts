import type { AuditLog } from '../audit/audit.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import { NotFoundError, ValidationError } from '../errors/errors.js';
import type { ExpressionEngine } from '../expressions/engine.js';
import { applyDetokenize, planDetokenize } from './detokenize.js';

/**
 * Where the data of the ids named by `{{ <id> }}` expressions comes from: `use` answers each id's
 * data under the caller's token:use transform, or throws (NotFoundError naming an unknown id,
 * AuthorizationError) before answering anything. TokenService is one (tokens only); the vault's
 * is TokenSources (src/token-intents/token-sources.ts: tokens, then token intents).
 */
export interface DetokenizeSource {
  use(caller: Caller, ids: readonly string[]): Promise<Map<string, unknown>>;
}

/** A detokenized value, and the data of each token it named (what a redacted reactor log must hide). */
export interface Detokenized {
  value: unknown;
  data: ReadonlyMap<string, unknown>;
}

/**
 * Replaces every `{{ token_id }}` expression in the strings of `value` (at any depth) by the token
 * data, as the caller's token:use transform shows it: the rules of reactor args (detokenize.ts),
 * at most 100 distinct tokens, every one of them allowed before anything is returned. An unknown id
 * is a 400 naming the field that holds it; `root` names `value` in field paths (`args`, `body`);
 * `maxTokens` lowers the limit of distinct tokens.
 */
export async function detokenizeValue(tokens: DetokenizeSource, engine: ExpressionEngine, caller: Caller, value: unknown, root: string, maxTokens?: number): Promise<Detokenized> {
  const plan = planDetokenize(value, root);
  // A lower limit of the caller's context (the proxy's, docs/proxies.md): refused before any token is read.
  if (maxTokens !== undefined && plan.ids.size > maxTokens) {
    throw ValidationError.field(root, `detokenizes ${plan.ids.size} distinct tokens; at most ${maxTokens} are allowed per request`);
  }
  if (plan.ids.size === 0) return { value: applyDetokenize(plan, new Map(), engine), data: new Map() };
  let data: Map<string, unknown>;
  try {
    data = await tokens.use(caller, [...plan.ids.keys()]);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    // Report the missing id on the field that holds it.
    const field = error.id === undefined ? undefined : plan.ids.get(error.id);
    if (field !== undefined) throw ValidationError.field(field, `names the token '${error.id}', which does not exist`);
    throw ValidationError.field(root, 'names a token that does not exist');
  }
  return { value: applyDetokenize(plan, data, engine), data };
}

/**
 * `POST /detokenize` (token:use): any JSON comes back with the `{{ token_id }}` expressions in its
 * strings replaced by the token data, exactly as a reactor invoked by the caller would receive its
 * args. It discloses what a reactor run discloses to its code, and no more: the token:use transform.
 *
 * @example await vault.detokenize.detokenize(caller, { card: `{{ ${token.id} }}`, last4: `{{ ${token.id} | json: '$.number' | last4 }}` })
 */
export class DetokenizeService {
  readonly #tokens: DetokenizeSource;
  readonly #engine: ExpressionEngine;
  readonly #audit: AuditLog;

  constructor(deps: { tokens: DetokenizeSource; expressions: ExpressionEngine; audit: AuditLog }) {
    this.#tokens = deps.tokens;
    this.#engine = deps.expressions;
    this.#audit = deps.audit;
  }

  /** Detokenizes `body` (any JSON value) for the caller; token:use is needed even when it names no token. */
  async detokenize(caller: Caller, body: unknown): Promise<unknown> {
    return this.#audit.guard(caller, 'token:detokenize', null, async () => {
      requirePermission(caller, 'token:use');
      if (body === undefined) throw ValidationError.field('body', 'is required (any JSON whose strings may hold {{ token_id }} expressions)');
      return (await detokenizeValue(this.#tokens, this.#engine, caller, body, 'body')).value;
    });
  }
}
