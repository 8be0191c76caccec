// Bodies are typed as a valid one is; the service validates them.
import type { AuthorizeSessionRequest } from '../../sessions/session-input.js';
import type { AuthenticatedRoute } from './route.js';

/** Sessions. Each route is one SessionService call. */
export const sessionRoutes: AuthenticatedRoute[] = [
  {
    method: 'POST',
    path: '/sessions',
    operationId: 'createSession',
    auth: true,
    permission: 'none: a public application',
    status: 201,
    // No body: the SDK posts none, and nothing is read.
    docs: { summary: 'Create a session (public applications): a session key and the nonce that authorizes it', tag: 'Sessions', responseSchema: 'Session' },
    handle: ({ vault, caller }) => vault.sessions.create(caller),
  },
  {
    method: 'POST',
    path: '/sessions/authorize',
    operationId: 'authorizeSession',
    auth: true,
    permission: 'none: a private application, within its own grants',
    status: 204,
    body: 'json',
    docs: { summary: 'Authorize a session by its nonce (private applications) with some of your own grants', tag: 'Sessions', requestSchema: 'AuthorizeSessionRequest' },
    handle: ({ vault, caller, body }) => vault.sessions.authorize(caller, body as AuthorizeSessionRequest),
  },
];
