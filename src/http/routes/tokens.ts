import { tokenListQuery, tokenListV2Query } from '../query.js';
import { ValidationError } from '../../errors/errors.js';
import type { ConvertTokenIntentInput } from '../../token-intents/token-intent-input.js';
import type { CreateTokenInput, UpdateTokenInput } from '../../tokens/token-input.js';
import { tokensInResult, tokensNamedInBody } from './carried-tokens.js';
import { type AuthenticatedRoute, PAGING } from './route.js';

const CURSOR_PAGING = PAGING.filter((p) => p.name !== 'page');

/** Spec 4.1, plus search and bulk tokenize. Each route is one TokenService call. */
export const tokenRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/tokens',
    operationId: 'createToken',
    carries: tokensInResult,
    auth: true,
    permission: 'token:create',
    status: 201,
    body: 'json',
    docs: {
      summary: 'Create a token, or convert a token intent into one (token_intent_id instead of type and data)',
      tag: 'Tokens',
      requestSchema: 'CreateTokenOrConvertRequest',
      responseSchema: 'Token',
      extraStatuses: [404, 409],
    },
    // The service validates the body: its type is what a valid one holds.
    handle: ({ vault, caller, body }) => vault.tokens.create(caller, body as CreateTokenInput | ConvertTokenIntentInput),
  },
  {
    method: 'GET',
    path: '/tokens',
    operationId: 'listTokens',
    carries: tokensInResult,
    auth: true,
    permission: 'token:read',
    status: 200,
    docs: {
      summary: 'List tokens',
      tag: 'Tokens',
      responseSchema: 'TokenList',
      query: [
        { name: 'id', description: 'Token ids; repeatable.', array: true },
        { name: 'type', description: 'Token types; repeatable.', array: true },
        {
          name: 'metadata',
          map: true,
          description:
            'Metadata filters, case-insensitive exact match: `metadata[key]=value` (deepObject) or `metadata.key=value`; several are ANDed (at most 100); a repeated key uses its first value.',
        },
        ...PAGING,
      ],
    },
    handle: ({ vault, caller, query }) => vault.tokens.list(caller, tokenListQuery(query)),
  },
  {
    method: 'GET',
    path: '/tokens/{id}',
    operationId: 'getToken',
    carries: tokensInResult,
    auth: true,
    permission: 'token:read',
    status: 200,
    docs: { summary: 'Get a token', tag: 'Tokens', responseSchema: 'Token' },
    handle: ({ vault, caller, params }) => vault.tokens.get(caller, params['id']!),
  },
  {
    method: 'PATCH',
    path: '/tokens/{id}',
    operationId: 'updateToken',
    carries: tokensInResult,
    auth: true,
    permission: 'token:update',
    status: 200,
    body: 'merge-patch',
    docs: { summary: 'Update a token (JSON merge patch)', tag: 'Tokens', requestSchema: 'UpdateTokenRequest', responseSchema: 'Token' },
    handle: ({ vault, caller, params, body }) => vault.tokens.update(caller, params['id']!, body as UpdateTokenInput),
  },
  {
    method: 'DELETE',
    path: '/tokens/{id}',
    operationId: 'deleteToken',
    carries: tokensInResult,
    auth: true,
    permission: 'token:delete',
    status: 204,
    docs: { summary: 'Delete a token', tag: 'Tokens' },
    handle: ({ vault, caller, params }) => vault.tokens.delete(caller, params['id']!),
  },
  {
    method: 'POST',
    path: '/tokens/search',
    operationId: 'searchTokens',
    carries: tokensInResult,
    auth: true,
    permission: 'token:search',
    status: 200,
    body: 'json',
    docs: { summary: 'Search tokens', tag: 'Tokens', requestSchema: 'SearchTokensRequest', responseSchema: 'TokenList' },
    handle: ({ vault, caller, body }) => vault.tokens.search(caller, body as Parameters<typeof vault.tokens.search>[1]),
  },
  {
    method: 'GET',
    path: '/v2/tokens',
    operationId: 'listTokensV2',
    carries: tokensInResult,
    auth: true,
    permission: 'token:read',
    status: 200,
    docs: {
      summary: "List tokens, Basis Theory's v2 shape: cursor paging only (start, size; the answer's pagination.next)",
      tag: 'Tokens',
      responseSchema: 'TokenList',
      query: [
        { name: 'type', description: 'Token type.' },
        { name: 'container', description: 'Tokens in this container.' },
        { name: 'fingerprint', description: 'Tokens of this fingerprint (only tokens the caller may reveal match).' },
        { name: 'metadata', description: 'Metadata filters as a JSON object, case-insensitive exact match, ANDed: `metadata={"key":"value"}` (what the Basis Theory SDK sends).' },
        ...CURSOR_PAGING,
      ],
    },
    handle: ({ vault, caller, query }) => vault.tokens.list(caller, tokenListV2Query(query)),
  },
  {
    method: 'POST',
    path: '/v2/tokens/search',
    operationId: 'searchTokensV2',
    carries: tokensInResult,
    auth: true,
    permission: 'token:search',
    status: 200,
    body: 'json',
    docs: {
      summary: "Search tokens, Basis Theory's v2 shape: cursor paging only (start, size; no page)",
      tag: 'Tokens',
      requestSchema: 'SearchTokensRequest',
      responseSchema: 'TokenList',
    },
    handle: ({ vault, caller, body }) => vault.tokens.search(caller, cursorOnly(body) as Parameters<typeof vault.tokens.search>[1]),
  },
  {
    method: 'POST',
    path: '/tokenize',
    operationId: 'tokenize',
    carries: tokensInResult,
    auth: true,
    permission: 'token:create',
    status: 201,
    body: 'json',
    docs: {
      summary: 'Tokenize in bulk: every {type, data} object in the body becomes a token',
      tag: 'Tokens',
      requestSchema: 'TokenizeRequest',
      responseSchema: 'TokenizeResponse',
      extraStatuses: [409],
    },
    handle: ({ vault, caller, body }) => vault.tokens.tokenize(caller, body),
  },
  {
    method: 'POST',
    path: '/detokenize',
    operationId: 'detokenize',
    carries: tokensNamedInBody,
    auth: true,
    permission: 'token:use',
    status: 200,
    body: 'json',
    docs: {
      summary: 'Detokenize: any JSON comes back with the {{ token_id }} expressions in its strings replaced by the token data (token:use transform)',
      tag: 'Tokens',
      requestSchema: 'DetokenizeRequest',
      responseSchema: 'DetokenizeResponse',
    },
    handle: ({ vault, caller, body }) => vault.detokenize.detokenize(caller, body),
  },
];

/** A v2 search body: Basis Theory's v2 search pages by cursor only, so `page` is refused rather than honoured. */
function cursorOnly(body: unknown): unknown {
  if (typeof body === 'object' && body !== null && Object.hasOwn(body, 'page')) {
    throw ValidationError.field('page', 'is not accepted by /v2/tokens/search: it pages by cursor (start, and the answer’s pagination.next)');
  }
  return body;
}
