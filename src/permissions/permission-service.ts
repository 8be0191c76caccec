import type { Caller } from '../auth/caller.js';
import { ValidationError } from '../errors/errors.js';
import { APPLICATION_TYPES, type ApplicationType, PERMISSIONS, PERMISSIONS_BY_TYPE, type Permission } from './permissions.js';

/** A permission as `GET /permissions` lists it (the shape the Basis Theory SDK reads). */
export interface PermissionView {
  type: Permission;
  description: string;
  /** The application types that may hold it. */
  application_types: ApplicationType[];
}

const DESCRIPTIONS: Readonly<Record<Permission, string>> = Object.freeze({
  'token:create': 'Create tokens (and tokenize in bulk) in the containers the access rules grant.',
  'token:read': 'Get and list tokens; data as the access rules’ transform shows it.',
  'token:update': 'Update tokens (JSON merge patch).',
  'token:delete': 'Delete tokens; set or advance a token’s expiry.',
  'token:search': 'Search tokens.',
  'token:use': 'Detokenize: invoke reactors and POST /detokenize with {{ token_id }} expressions.',
  'token-intent:create': 'Create token intents: short-lived data held until a token is made of it (docs/token-intents.md).',
  'token-intent:read': 'Get token intents of the tenant (card summary, never the data).',
  'token-intent:delete': 'Delete token intents of the tenant.',
  'reactor:create': 'Create reactors and reactor formulas.',
  'reactor:read': 'Get and list reactors and reactor formulas.',
  'reactor:update': 'Update reactors and reactor formulas.',
  'reactor:delete': 'Delete reactors and reactor formulas.',
  'application:create': 'Create applications.',
  'application:read': 'Get and list applications.',
  'application:update': 'Update applications and regenerate their keys.',
  'application:delete': 'Delete applications.',
  'log:read': 'Read the audit log.',
  'webhook:create': 'Create event webhooks.',
  'webhook:read': 'Get and list webhooks and their deliveries (callbacks included).',
  'webhook:update': 'Update webhooks and retry failed deliveries.',
  'webhook:delete': 'Delete webhooks.',
  'proxy:invoke': 'Call the ephemeral proxy (/proxy with a destination URL); detokenizing a token through it also needs token:use on it (docs/proxies.md).',
  'proxy:create': 'Create pre-configured proxies (their key is shown once); binding one to an application needs every grant of it (docs/authority.md).',
  'proxy:read': 'Get and list pre-configured proxies (never their key or configuration values).',
  'proxy:update': 'Update pre-configured proxies; destination, transforms, configuration and key are for their author or an administrator.',
  'proxy:delete': 'Delete pre-configured proxies.',
});

/**
 * The permission catalog (`GET /permissions`): each permission with the application types that may
 * hold it. Public knowledge (the table of docs/security.md), so any authenticated application may read it.
 *
 * @example await vault.permissions.list(caller, { application_type: 'public' }) // token:create, token:update, token-intent:create
 */
export class PermissionService {
  /** Every permission, or those an application of `application_type` may hold (400 for an unknown type). */
  async list(caller: Caller, query: { application_type?: string | null } = {}): Promise<PermissionView[]> {
    void caller; // authenticated is enough: the catalog is the same for every tenant
    const type = query?.application_type;
    if (type !== undefined && type !== null && !(APPLICATION_TYPES as readonly string[]).includes(type)) {
      throw ValidationError.field('application_type', `must be one of ${APPLICATION_TYPES.join(', ')}`);
    }
    return PERMISSIONS.map((permission) => ({
      type: permission,
      description: DESCRIPTIONS[permission],
      application_types: APPLICATION_TYPES.filter((t) => PERMISSIONS_BY_TYPE[t].includes(permission)),
    })).filter((p) => type === undefined || type === null || p.application_types.includes(type as ApplicationType));
  }
}
