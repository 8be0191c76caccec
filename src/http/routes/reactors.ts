// Bodies are typed as a valid one is; the service validates them.
import type { CreateReactorRequest, PatchReactorRequest, ReactRequest, UpdateReactorRequest } from '../../reactors/reactor-input.js';
import { reactorListQuery } from '../query.js';
import { tokensOfInvocation } from './carried-tokens.js';
import { type AuthenticatedRoute, PAGING } from './route.js';

/** Spec 4.2: reactors and their invocation. Each route is one ReactorService call. */
export const reactorRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/reactors',
    operationId: 'createReactor',
    auth: true,
    permission: 'reactor:create',
    status: 201,
    body: 'json',
    docs: { summary: 'Create a reactor (from a formula, or with inline code)', tag: 'Reactors', requestSchema: 'CreateReactorRequest', responseSchema: 'Reactor' },
    handle: ({ vault, caller, body }) => vault.reactors.create(caller, body as CreateReactorRequest),
  },
  {
    method: 'GET',
    path: '/reactors',
    operationId: 'listReactors',
    auth: true,
    permission: 'reactor:read',
    status: 200,
    docs: {
      summary: 'List reactors',
      tag: 'Reactors',
      responseSchema: 'ReactorList',
      query: [
        { name: 'id', description: 'Reactor ids; repeatable.', array: true },
        { name: 'name', description: 'Case-insensitive wildcard search on the name (`*` matches any run of characters).' },
        ...PAGING,
      ],
    },
    handle: ({ vault, caller, query }) => vault.reactors.list(caller, reactorListQuery(query)),
  },
  {
    method: 'GET',
    path: '/reactors/{id}',
    operationId: 'getReactor',
    auth: true,
    permission: 'reactor:read',
    status: 200,
    docs: { summary: 'Get a reactor', tag: 'Reactors', responseSchema: 'Reactor' },
    handle: ({ vault, caller, params }) => vault.reactors.get(caller, params['id']!),
  },
  {
    method: 'PUT',
    path: '/reactors/{id}',
    operationId: 'updateReactor',
    auth: true,
    permission: 'reactor:update',
    status: 200,
    body: 'json',
    docs: {
      summary: 'Replace a reactor (name, configuration, application; code of an inline-code reactor)',
      tag: 'Reactors',
      requestSchema: 'UpdateReactorRequest',
      responseSchema: 'Reactor',
    },
    handle: ({ vault, caller, params, body }) => vault.reactors.update(caller, params['id']!, body as UpdateReactorRequest),
  },
  {
    method: 'PATCH',
    path: '/reactors/{id}',
    operationId: 'patchReactor',
    auth: true,
    permission: 'reactor:update',
    status: 200,
    body: 'merge-patch',
    docs: { summary: 'Change what a JSON merge patch names of a reactor', tag: 'Reactors', requestSchema: 'PatchReactorRequest', responseSchema: 'Reactor' },
    handle: ({ vault, caller, params, body }) => vault.reactors.patch(caller, params['id']!, body as PatchReactorRequest),
  },
  {
    method: 'DELETE',
    path: '/reactors/{id}',
    operationId: 'deleteReactor',
    auth: true,
    permission: 'reactor:delete',
    status: 204,
    docs: { summary: 'Delete a reactor', tag: 'Reactors' },
    handle: ({ vault, caller, params }) => vault.reactors.delete(caller, params['id']!),
  },
  {
    method: 'POST',
    path: '/reactors/{id}/react',
    operationId: 'invokeReactor',
    carries: tokensOfInvocation,
    auth: true,
    permission: 'token:use',
    status: 200,
    statusFor: (result) => (isAccepted(result) ? 202 : 200),
    body: 'optional-json',
    docs: {
      summary: 'Invoke a reactor (synchronously, or asynchronously with callback_url: 202)',
      tag: 'Reactors',
      requestSchema: 'ReactRequest',
      responseSchema: 'ReactorResponse',
      alternateSuccess: { status: 202, responseSchema: 'ReactorRunAccepted' },
      extraStatuses: [402, 429, 503],
    },
    handle: ({ vault, caller, params, body }) => vault.reactors.invoke(caller, params['id']!, body as ReactRequest),
  },
  {
    method: 'POST',
    path: '/reactors/{id}/react-async',
    operationId: 'invokeReactorAsync',
    auth: true,
    permission: 'token:use',
    status: 202,
    body: 'optional-json',
    docs: {
      summary: 'Invoke a reactor asynchronously (the result is read at /results/{request_id} and announced by webhook)',
      tag: 'Reactors',
      requestSchema: 'ReactAsyncRequest',
      responseSchema: 'ReactorRunAccepted',
    },
    handle: ({ vault, caller, params, body }) => vault.reactors.reactAsync(caller, params['id']!, body as ReactRequest),
  },
  {
    method: 'GET',
    path: '/reactors/{id}/results/{request_id}',
    operationId: 'getReactorResult',
    auth: true,
    permission: 'token:use',
    status: 200,
    docs: { summary: "An asynchronous run's status and result (its requesting application only; kept 24 hours)", tag: 'Reactors', responseSchema: 'ReactorRunResult' },
    handle: ({ vault, caller, params }) => vault.reactors.result(caller, params['id']!, params['request_id']!),
  },
];

/** An accepted asynchronous invocation (rather than a Reactor Response, which has only raw and tokens). */
function isAccepted(result: unknown): boolean {
  return typeof result === 'object' && result !== null && (result as { status?: unknown }).status === 'pending';
}
