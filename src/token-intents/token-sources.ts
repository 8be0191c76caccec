import type { Caller } from '../auth/caller.js';
import type { DetokenizeSource } from '../tokens/detokenize-service.js';
import type { TokenService } from '../tokens/token-service.js';
import { isTokenIntentId } from './token-intent-id.js';
import type { TokenIntentService } from './token-intent-service.js';

/**
 * What `{{ <id> }}` expressions resolve against (reactor args, `POST /detokenize`, proxy
 * expressions): an id of an intent's form (`intent_…`, src/token-intents/token-intent-id.ts) is
 * looked up among token intents only, any other id among tokens only; each under the caller's
 * token:use transform (an intent as a token of its type in the type's default container would be).
 * One place per id, by its form: no token can stand in for an intent (no token may take an id of
 * that form). An id found nowhere throws NotFoundError naming it.
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
    const intentIds = ids.filter(isTokenIntentId);
    const tokenIds = ids.filter((id) => !isTokenIntentId(id));
    // Both lookups finish (every refusal thrown) before anything is returned: all ids or none.
    const data = tokenIds.length > 0 || intentIds.length === 0 ? await this.#tokens.use(caller, tokenIds) : new Map<string, unknown>();
    if (intentIds.length === 0) return data;
    for (const [id, value] of await this.#intents.use(caller, intentIds)) data.set(id, value);
    return data;
  }
}
