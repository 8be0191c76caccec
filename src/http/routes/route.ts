import type { Caller } from '../../auth/caller.js';
import type { Vault } from '../../vault.js';
import type { BodyKind } from '../body.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a route handler receives: the request already parsed and authenticated. */
export interface RouteContext {
  vault: Vault;
  caller: Caller;
  /** Percent-decoded path parameters. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** The parsed JSON body; undefined when the route takes none or an optional body was absent. */
  body: unknown;
}

/** What a route that needs no API key receives. */
export interface PublicContext {
  vault: Vault;
  /** The OpenAPI document of this handler (built once). */
  openapi(): unknown;
}

/**
 * A query parameter a route accepts: the OpenAPI document describes it, and the handler refuses any
 * parameter a route does not declare (query-rule.ts). A route that reads a parameter must list it.
 */
export interface QueryParameterDoc {
  name: string;
  description: string;
  /** Repeatable (`?id=a&id=b`). */
  array?: boolean;
  type?: 'string' | 'integer';
  /**
   * A map of string values sent as `name[key]=value` (OpenAPI deepObject style); the dotted form
   * `name.key=value` is accepted too.
   */
  map?: boolean;
}

/** The paging parameters every list endpoint takes. */
export const PAGING: readonly QueryParameterDoc[] = Object.freeze([
  { name: 'page', description: '1-based page number; selects offset paging (with total counts).', type: 'integer' },
  { name: 'size', description: 'Items per page, 1 to 100 (default 20).', type: 'integer' },
  { name: 'start', description: "Cursor: a previous page's pagination.next (cursor paging, the default)." },
]);

/** How a route is described in the OpenAPI document (names refer to components.schemas). */
export interface RouteDocs {
  summary: string;
  tag: string;
  requestSchema?: string;
  /** Absent for 204 responses. */
  responseSchema?: string;
  query?: QueryParameterDoc[];
  /** Statuses this route may answer besides the common ones the document derives. */
  extraStatuses?: number[];
  /** A second success this route may answer (see `statusFor`), with its schema. */
  alternateSuccess?: { status: 200 | 201 | 202; responseSchema: string };
}

interface RouteBase {
  method: HttpMethod;
  /** A path pattern: literals and `{param}` segments. */
  path: string;
  operationId: string;
  /** The status of a success. */
  status: 200 | 201 | 202 | 204;
  /** The status of a success that depends on the result (an invocation accepted to run later: 202). */
  statusFor?: (result: unknown) => 200 | 201 | 202 | 204;
  body?: BodyKind;
  docs: RouteDocs;
}

/** The `permission` of a route any authenticated application may call (no permission is checked). */
export const ANY_APPLICATION = 'none (any application)';

/** What a route's `carries` reads: the request's path parameters and parsed body, and the handler's result. */
export interface CarriedExchange {
  params: Record<string, string>;
  body: unknown;
  result: unknown;
}

/** A route behind the API key. `permission` is what the service checks (for the document only). */
export interface AuthenticatedRoute extends RouteBase {
  auth: true;
  permission: string;
  /**
   * The ids of the tokens whose data the response may carry (carried-tokens.ts), so a stored
   * idempotent response is withdrawn when one of them is deleted, expires or loses its cvc.
   * Absent: the route carries no token data.
   */
  carries?: (exchange: CarriedExchange) => Iterable<string>;
  handle(context: RouteContext): Promise<unknown>;
}

export interface PublicRoute extends RouteBase {
  auth: false;
  handle(context: PublicContext): unknown;
}

export type RouteDefinition = AuthenticatedRoute | PublicRoute;
