import { ANY_APPLICATION, type AuthenticatedRoute } from './route.js';

/** The caller's tenant and the permission catalog: what the Basis Theory SDK's tenants and permissions clients read. */
export const tenantRoutes: AuthenticatedRoute[] = [
  {
    method: 'GET',
    path: '/tenants/self',
    operationId: 'getSelfTenant',
    auth: true,
    permission: ANY_APPLICATION,
    status: 200,
    docs: { summary: 'The tenant of the calling application', tag: 'Tenants', responseSchema: 'Tenant' },
    handle: ({ vault, caller }) => vault.tenants.self(caller),
  },
  {
    method: 'GET',
    path: '/permissions',
    operationId: 'listPermissions',
    auth: true,
    permission: ANY_APPLICATION,
    status: 200,
    docs: {
      summary: 'Every permission, with the application types that may hold it',
      tag: 'Tenants',
      responseSchema: 'PermissionList',
      query: [{ name: 'application_type', description: 'Only the permissions an application of this type (public, private, management) may hold.' }],
    },
    handle: ({ vault, caller, query }) => {
      const type = query.get('application_type');
      return vault.permissions.list(caller, type === null ? {} : { application_type: type });
    },
  },
];
