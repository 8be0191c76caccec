import { logListQuery } from '../query.js';
import { type AuthenticatedRoute, PAGING } from './route.js';

/** The audit trail (log:read). */
export const logRoutes: AuthenticatedRoute[] = [
  {
    method: 'GET',
    path: '/logs',
    operationId: 'listLogs',
    auth: true,
    permission: 'log:read',
    status: 200,
    docs: {
      summary: 'List audit entries, oldest first',
      tag: 'Logs',
      responseSchema: 'AuditEntryList',
      query: [
        { name: 'resource_id', description: 'Entries about this token, reactor, formula or application id.' },
        { name: 'actor', description: 'Entries by this application id (or system:…).' },
        { name: 'operation', description: 'Entries of this operation, e.g. token:create.' },
        ...PAGING,
      ],
    },
    handle: ({ vault, caller, query }) => vault.logs.list(caller, logListQuery(query)),
  },
];
