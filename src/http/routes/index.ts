import { applicationKeyRoutes } from './application-keys.js';
import { applicationRoutes } from './applications.js';
import { logRoutes } from './logs.js';
import { formulaRoutes } from './formulas.js';
import { reactorRoutes } from './reactors.js';
import { proxyRoutes } from './proxies.js';
import { sessionRoutes } from './sessions.js';
import type { RouteDefinition } from './route.js';
import { systemRoutes } from './system.js';
import { tenantRoutes } from './tenants.js';
import { tokenIntentRoutes } from './token-intents.js';
import { tokenRoutes } from './tokens.js';
import { webhookRoutes } from './webhooks.js';

export type { AuthenticatedRoute, PublicRoute, RouteContext, RouteDefinition, RouteDocs, HttpMethod } from './route.js';

/** Every route of the HTTP API, in document order. */
export const ROUTES: readonly RouteDefinition[] = Object.freeze([
  ...tokenRoutes,
  ...tokenIntentRoutes,
  ...reactorRoutes,
  ...formulaRoutes,
  ...proxyRoutes,
  ...applicationRoutes,
  ...applicationKeyRoutes,
  ...sessionRoutes,
  ...logRoutes,
  ...tenantRoutes,
  ...webhookRoutes,
  ...systemRoutes,
]);
