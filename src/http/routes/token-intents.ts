import type { CreateTokenIntentInput } from '../../token-intents/token-intent-input.js';
import type { AuthenticatedRoute } from './route.js';

/** Token intents (docs/token-intents.md); converting one is `POST /tokens` with `token_intent_id`. Each route is one TokenIntentService call. */
export const tokenIntentRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/token-intents',
    operationId: 'createTokenIntent',
    auth: true,
    permission: 'token-intent:create',
    status: 201,
    body: 'json',
    docs: {
      summary: 'Create a token intent: short-lived data, shown only as a summary, until a token is made of it',
      tag: 'Token intents',
      requestSchema: 'CreateTokenIntentRequest',
      responseSchema: 'TokenIntent',
    },
    // The service validates the body.
    handle: ({ vault, caller, body }) => vault.tokenIntents.create(caller, body as CreateTokenIntentInput),
  },
  {
    method: 'GET',
    path: '/token-intents/{id}',
    operationId: 'getTokenIntent',
    auth: true,
    permission: 'token-intent:read',
    status: 200,
    docs: { summary: 'Get a token intent (its summary, never its data)', tag: 'Token intents', responseSchema: 'TokenIntent' },
    handle: ({ vault, caller, params }) => vault.tokenIntents.get(caller, params['id']!),
  },
  {
    method: 'DELETE',
    path: '/token-intents/{id}',
    operationId: 'deleteTokenIntent',
    auth: true,
    permission: 'token-intent:delete',
    status: 204,
    docs: { summary: 'Delete a token intent', tag: 'Token intents' },
    handle: ({ vault, caller, params }) => vault.tokenIntents.delete(caller, params['id']!),
  },
];
