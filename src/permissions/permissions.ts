/** Permissions and the application types that may hold them (ARCHITECTURE.md, Reference facts). */
export const PERMISSIONS = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:search',
  'token:use',
  'token-intent:create',
  'token-intent:read',
  'token-intent:delete',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
  'application:create',
  'application:read',
  'application:update',
  'application:delete',
  'log:read',
  'webhook:create',
  'webhook:read',
  'webhook:update',
  'webhook:delete',
  'proxy:invoke',
  'proxy:create',
  'proxy:read',
  'proxy:update',
  'proxy:delete',
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const APPLICATION_TYPES = ['public', 'private', 'management'] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];

export const PERMISSIONS_BY_TYPE: Readonly<Record<ApplicationType, readonly Permission[]>> = Object.freeze({
  // Token intents (docs/token-intents.md): a public application (a browser form) creates them, a
  // private one (the backend) reads, converts or deletes them.
  public: ['token:create', 'token:update', 'token-intent:create'],
  private: [
    'token:create',
    'token:read',
    'token:update',
    'token:delete',
    'token:search',
    'token:use',
    'token-intent:create',
    'token-intent:read',
    'token-intent:delete',
    'reactor:create',
    'reactor:read',
    'reactor:update',
    'reactor:delete',
    'proxy:invoke',
    'proxy:create',
    'proxy:read',
    'proxy:update',
    'proxy:delete',
  ],
  management: [
    'application:create',
    'application:read',
    'application:update',
    'application:delete',
    'reactor:create',
    'reactor:read',
    'reactor:update',
    'reactor:delete',
    'proxy:create',
    'proxy:read',
    'proxy:update',
    'proxy:delete',
    'log:read',
    'webhook:create',
    'webhook:read',
    'webhook:update',
    'webhook:delete',
  ],
});

export const TRANSFORMS = ['reveal', 'mask', 'redact'] as const;
export type Transform = (typeof TRANSFORMS)[number];

/** An access rule: the first (lowest priority number) rule whose container is the token's container or an ancestor, and which lists the permission, decides. */
export interface AccessRule {
  description?: string;
  priority: number;
  container: string;
  transform: Transform;
  permissions: Permission[];
}
