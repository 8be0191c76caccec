import type { Caller } from '../auth/caller.js';
import type { DetokenizeSource } from '../tokens/detokenize-service.js';
import type { TokenService } from '../tokens/token-service.js';
import type { TokenIntentService } from './token-intent-service.js';

/**
 * What `{{ <id> }}` expressions resolve against (reactor args, `POST /detokenize`, proxy
 * expressions): tokens first, then token intents, each under the caller's token:use transform
 * (an intent as a token of its type in the type's default container would be). An id that is
 * neither throws NotFoundError naming it. Token ids are looked up first so that adding intents
 * changes nothing for an id that names a token.
 *
 * @example const data = await new TokenSources(vault.tokens, vault.tokenIntents).use(caller, [token.id, intent.id]);
 */
export class TokenSources implements DetokenizeSource {
  readonly #tokens: TokenService;
  readonly #intents: TokenIntentService;

  constructor(tokens: TokenService, intents: TokenIntentService) {
    this.#tokens = tokens;
    this.#intents = intents;
  }

  async use(caller: Caller, ids: readonly string[]): Promise<Map<string, unknown>> {
    const missing: string[] = [];
    const data = await this.#tokens.use(caller, ids, { missing });
    if (missing.length === 0) return data;
    for (const [id, value] of await this.#intents.use(caller, missing)) data.set(id, value);
    return data;
  }
}
