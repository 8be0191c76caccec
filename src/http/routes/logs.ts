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
        { name: 'entity_id', description: "Basis Theory's name for resource_id." },
        { name: 'entity_type', description: 'Entries about this entity type (GET /logs/entity-types), e.g. token; cursor paging only.' },
        ...PAGING,
      ],
    },
    handle: ({ vault, caller, query }) => vault.logs.list(caller, logListQuery(query)),
  },
  {
    method: 'GET',
    path: '/logs/entity-types',
    operationId: 'listLogEntityTypes',
    auth: true,
    permission: 'log:read',
    status: 200,
    docs: { summary: 'The entity types an audit entry may name (the entity_type filter of GET /logs)', tag: 'Logs', responseSchema: 'LogEntityTypeList' },
    handle: ({ vault, caller }) => vault.logs.entityTypes(caller),
  },
];
