import type { QueryParameterDoc, RouteDefinition } from '../routes/route.js';
import { type Schema, ref } from './schema-helpers.js';

/** What the operations need to know about the handler. */
export interface OperationOptions {
  headerPrefix: string;
  maxBodyBytes: number;
}

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the run is stored and done in the background',
  204: 'No Content',
  400: 'Validation failed or malformed request (including an unknown query parameter or body attribute, named in errors)',
  401: 'Missing or unknown API key',
  402: 'Reactor: invalid payment method',
  403: 'The application lacks the permission or container grant',
  404: 'Not found (including another tenant’s or an expired resource)',
  409: 'Conflict, or the idempotency key’s first request is in flight or its stored response was withdrawn',
  413: 'Body over the size limit',
  415: 'Unsupported Content-Type',
  422: 'Idempotency key reused with a different request',
  429: 'Reactor: rate limited',
  500: 'Internal error (nothing leaked)',
  503: 'Service unavailable: the store does not answer (Retry-After), or a reactor said so',
};

const mutating = (route: RouteDefinition): boolean => route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH';

/** The statuses a route may answer, derived from how it is handled. */
export function statusesOf(route: RouteDefinition): number[] {
  const statuses = new Set<number>([route.status, 500]);
  // An authenticated route reads the store, which may not answer (503 with Retry-After).
  if (route.auth) [401, 403, 503].forEach((s) => statuses.add(s));
  if (route.path.includes('{')) statuses.add(404);
  if (route.body) [400, 413, 415].forEach((s) => statuses.add(s));
  if (route.auth && mutating(route)) [400, 409, 422].forEach((s) => statuses.add(s));
  // Any query string is checked against the declared parameters (query-rule.ts).
  statuses.add(400);
  route.docs.extraStatuses?.forEach((s) => statuses.add(s));
  return [...statuses].sort((a, b) => a - b);
}

function queryParameter(q: QueryParameterDoc): Schema {
  const base = { name: q.name, in: 'query', required: false, description: q.description };
  if (q.map) return { ...base, style: 'deepObject', explode: true, schema: { type: 'object', additionalProperties: { type: 'string' } } };
  if (q.array) return { ...base, style: 'form', explode: true, schema: { type: 'array', items: { type: 'string' } } };
  return { ...base, schema: { type: q.type ?? 'string' } };
}

/** The OpenAPI operation of a route: parameters, request body, success and error responses. */
export function operationOf(route: RouteDefinition, options: OperationOptions): Schema {
  const parameters: Schema[] = [];
  for (const match of route.path.matchAll(/\{([^}]+)\}/g)) {
    parameters.push({ name: match[1], in: 'path', required: true, description: 'Percent-encoded in the path.', schema: { type: 'string' } });
  }
  for (const q of route.docs.query ?? []) parameters.push(queryParameter(q));
  const idempotent = route.auth && mutating(route);
  if (idempotent) {
    parameters.push({
      name: `${options.headerPrefix}-IDEMPOTENCY-KEY`,
      in: 'header',
      required: false,
      description: 'Makes the request idempotent for 24 hours: the first successful response is stored and replayed.',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  }
  const responses: Record<string, Schema> = {};
  const alternate = route.docs.alternateSuccess;
  if (alternate) responses[String(alternate.status)] = { description: STATUS_TEXT[alternate.status], content: { 'application/json': { schema: ref(alternate.responseSchema) } } };
  for (const status of statusesOf(route)) {
    if (status !== route.status) {
      responses[String(status)] = { description: STATUS_TEXT[status] ?? 'Error', content: { 'application/problem+json': { schema: ref('Problem') } } };
      continue;
    }
    const success: Schema = { description: STATUS_TEXT[status] ?? 'Success' };
    if (status !== 204 && route.docs.responseSchema) success['content'] = { 'application/json': { schema: ref(route.docs.responseSchema) } };
    if (idempotent) {
      success['headers'] = {
        [`${options.headerPrefix}-Idempotent-Replayed`]: {
          description: 'Present (true) when this is the stored response of an earlier request with the same idempotency key.',
          schema: { type: 'string', enum: ['true'] },
        },
        [`${options.headerPrefix}-Idempotent-Stored`]: {
          description: 'Present (false) when the request ran but its response could not be stored: a retry with this idempotency key answers 409 instead of a replay.',
          schema: { type: 'string', enum: ['false'] },
        },
      };
    }
    responses[String(status)] = success;
  }
  const operation: Schema = {
    operationId: route.operationId,
    summary: route.docs.summary,
    tags: [route.docs.tag],
    ...(route.auth ? { 'x-permission': route.permission } : { security: [] }),
    ...(parameters.length > 0 ? { parameters } : {}),
    responses,
  };
  if (route.body) {
    // The media type a generated client sends: merge patches are application/merge-patch+json.
    const mediaType = route.body === 'merge-patch' ? 'application/merge-patch+json' : 'application/json';
    operation['requestBody'] = {
      required: route.body !== 'optional-json',
      description: `At most ${options.maxBodyBytes} bytes.`,
      content: { [mediaType]: { schema: route.docs.requestSchema ? ref(route.docs.requestSchema) : {} } },
    };
  }
  return operation;
}
