// Bodies are typed as a valid one is; the services validate them.
import type { CreateApplicationRequest, UpdateApplicationRequest } from '../../applications/application-input.js';
import { pageQuery } from '../query.js';
import { ANY_APPLICATION, type AuthenticatedRoute, PAGING } from './route.js';

/** Applications and their API keys (management applications). Each route is one ApplicationService call. */
export const applicationRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/applications',
    operationId: 'createApplication',
    auth: true,
    permission: 'application:create',
    status: 201,
    body: 'json',
    docs: { summary: 'Create an application (its key is in this response only)', tag: 'Applications', requestSchema: 'CreateApplicationRequest', responseSchema: 'Application' },
    handle: ({ vault, caller, body }) => vault.applications.create(caller, body as CreateApplicationRequest),
  },
  {
    method: 'GET',
    path: '/applications',
    operationId: 'listApplications',
    auth: true,
    permission: 'application:read',
    status: 200,
    docs: { summary: 'List applications', tag: 'Applications', responseSchema: 'ApplicationList', query: [...PAGING] },
    handle: ({ vault, caller, query }) => vault.applications.list(caller, pageQuery(query)),
  },
  {
    // Before /applications/{id}, so "key" is not read as an id.
    method: 'GET',
    path: '/applications/key',
    operationId: 'getApplicationByKey',
    auth: true,
    permission: ANY_APPLICATION,
    status: 200,
    docs: { summary: "The calling key's own application (404 for a session key)", tag: 'Applications', responseSchema: 'Application' },
    handle: ({ vault, caller }) => vault.applications.getByKey(caller),
  },
  {
    method: 'GET',
    path: '/applications/{id}',
    operationId: 'getApplication',
    auth: true,
    permission: 'application:read',
    status: 200,
    docs: { summary: 'Get an application', tag: 'Applications', responseSchema: 'Application' },
    handle: ({ vault, caller, params }) => vault.applications.get(caller, params['id']!),
  },
  {
    method: 'PUT',
    path: '/applications/{id}',
    operationId: 'updateApplication',
    auth: true,
    permission: 'application:update',
    status: 200,
    body: 'json',
    docs: { summary: 'Replace an application’s name, permissions and rules', tag: 'Applications', requestSchema: 'UpdateApplicationRequest', responseSchema: 'Application' },
    handle: ({ vault, caller, params, body }) => vault.applications.update(caller, params['id']!, body as UpdateApplicationRequest),
  },
  {
    method: 'DELETE',
    path: '/applications/{id}',
    operationId: 'deleteApplication',
    auth: true,
    permission: 'application:delete',
    status: 204,
    docs: { summary: 'Delete an application (its key stops working)', tag: 'Applications' },
    handle: ({ vault, caller, params }) => vault.applications.delete(caller, params['id']!),
  },
  {
    method: 'POST',
    path: '/applications/{id}/regenerate',
    operationId: 'regenerateApplicationKey',
    auth: true,
    permission: 'application:update',
    status: 200,
    body: 'optional-json',
    docs: { summary: 'Issue a new API key (the old one stops working)', tag: 'Applications', responseSchema: 'Application' },
    handle: ({ vault, caller, params }) => vault.applications.regenerateKey(caller, params['id']!),
  },
];
