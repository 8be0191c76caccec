import type { AuthenticatedRoute } from './route.js';

/** The keys of an application (management applications). Each route is one ApplicationKeyService call. */
export const applicationKeyRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/applications/{id}/keys',
    operationId: 'createApplicationKey',
    auth: true,
    permission: 'application:update',
    status: 201,
    // No body: the SDK posts none (with a form content type), and nothing is read.
    docs: { summary: 'Add a key to an application (the key is in this response only)', tag: 'Applications', responseSchema: 'ApplicationKey' },
    handle: ({ vault, caller, params }) => vault.applicationKeys.create(caller, params['id']!),
  },
  {
    method: 'GET',
    path: '/applications/{id}/keys',
    operationId: 'listApplicationKeys',
    auth: true,
    permission: 'application:read',
    status: 200,
    docs: { summary: 'List the keys of an application (without their secrets)', tag: 'Applications', responseSchema: 'ApplicationKeyList' },
    handle: ({ vault, caller, params }) => vault.applicationKeys.list(caller, params['id']!),
  },
  {
    method: 'GET',
    path: '/applications/{id}/keys/{keyId}',
    operationId: 'getApplicationKey',
    auth: true,
    permission: 'application:read',
    status: 200,
    docs: { summary: 'Get one key of an application (without its secret)', tag: 'Applications', responseSchema: 'ApplicationKey' },
    handle: ({ vault, caller, params }) => vault.applicationKeys.get(caller, params['id']!, params['keyId']!),
  },
  {
    method: 'DELETE',
    path: '/applications/{id}/keys/{keyId}',
    operationId: 'deleteApplicationKey',
    auth: true,
    permission: 'application:update',
    status: 204,
    docs: { summary: 'Delete a key (it stops working; an application keeps at least one key)', tag: 'Applications' },
    handle: ({ vault, caller, params }) => vault.applicationKeys.delete(caller, params['id']!, params['keyId']!),
  },
];
