import { APPLICATION_TYPES, PERMISSIONS, TRANSFORMS } from '../permissions.js';
import type { RouteDefinition } from './routes/route.js';
import { WEBHOOK_SCHEMAS } from './routes/webhook-schemas.js';

type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str = (description?: string, extra: Schema = {}): Schema => ({ type: 'string', ...(description ? { description } : {}), ...extra });
const uuid = (description?: string): Schema => str(description, { format: 'uuid' });
const dateTime = (description?: string): Schema => str(description, { format: 'date-time' });
const stringMap = (description: string): Schema => ({ type: 'object', description, additionalProperties: { type: 'string' } });
const anyJson = (description: string): Schema => ({ description });
const list = (item: string): Schema => ({
  type: 'object',
  required: ['pagination', 'data'],
  properties: { pagination: ref('Pagination'), data: { type: 'array', items: ref(item) } },
});

/**
 * The component schemas, written from the services' validation rules (src/tokens/token-input.ts,
 * src/applications/application-input.ts, spec 4). A test keeps the routes and the document in
 * step, and checks responses against the declared properties.
 */
const SCHEMAS: Record<string, Schema> = {
  Token: {
    type: 'object',
    description: 'A token (spec 2.1). data follows the caller’s access-control transform and is absent when redacted. mask, search_indexes and fingerprint_expression are echoed by create and update only.',
    required: ['id', 'type', 'tenant_id', 'containers'],
    properties: {
      id: str('Token id; never contains the data.'),
      type: str('Token type, e.g. card, bank, token.'),
      tenant_id: uuid(),
      data: anyJson('Token data after the caller’s transform (reveal, mask or redact).'),
      mask: anyJson('Mask expression tree.'),
      fingerprint: str('Keyed fingerprint of the fingerprint expression’s output.'),
      fingerprint_expression: str(),
      containers: { type: 'array', items: str() },
      metadata: stringMap('Non-sensitive metadata.'),
      search_indexes: { type: 'array', items: str() },
      created_by: uuid(),
      created_at: dateTime(),
      modified_by: uuid(),
      modified_at: dateTime(),
      expires_at: dateTime(),
      _extras: { type: 'object', properties: { deduplicated: { type: 'boolean' } }, description: 'Present when an existing token was returned instead of a new one.' },
    },
  },
  CreateTokenRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['type', 'data'],
    properties: {
      id: str('A literal id or an expression over data; a UUID when absent.', { maxLength: 250 }),
      type: str('Token type.', { maxLength: 64 }),
      data: anyJson('Token data: object, array or primitive (not null).'),
      mask: anyJson('Mask expression tree; defaults per type.'),
      containers: { type: 'array', items: str('Container path like /pci/high/.') },
      metadata: stringMap('At most 100 keys; values are strings of at most 1024 characters.'),
      search_indexes: { type: 'array', items: str(), maxItems: 100 },
      fingerprint_expression: str('Default per type, e.g. {{ data | stringify }}.'),
      deduplicate_token: { type: 'boolean' },
      expires_at: str('ISO 8601, M/D/YYYY h:mm:ss AM|PM ±hh:mm, or M/D/YYYY (UTC).'),
    },
  },
  UpdateTokenRequest: {
    type: 'object',
    additionalProperties: false,
    description: 'A JSON merge patch (RFC 7386): data, mask and metadata are merged; the other attributes are replaced; null resets an attribute to its default.',
    properties: {
      data: anyJson('Merge patch of the data.'),
      mask: anyJson('Merge patch of the mask.'),
      metadata: { type: ['object', 'null'], additionalProperties: { type: ['string', 'null'] } },
      containers: { type: ['array', 'null'], items: str() },
      search_indexes: { type: ['array', 'null'], items: str() },
      fingerprint_expression: { type: ['string', 'null'] },
      deduplicate_token: { type: ['boolean', 'null'] },
      expires_at: { type: ['string', 'null'] },
    },
  },
  SearchTokensRequest: {
    type: 'object',
    required: ['query'],
    properties: {
      query: str('Terms field:value joined by AND: data, type, container, fingerprint, id, metadata.<key>.'),
      page: { type: 'integer', minimum: 1 },
      size: { type: 'integer', minimum: 1, maximum: 100 },
      start: str('Cursor from a previous page.'),
    },
  },
  TokenizeRequest: anyJson('Any JSON; every object with a string type and a data key is a Create Token body and becomes a token (at most 100).'),
  TokenizeResponse: anyJson('The request’s shape, with each token body replaced by the created token.'),
  TokenList: list('Token'),
  Pagination: {
    oneOf: [
      {
        type: 'object',
        description: 'Cursor paging (default).',
        required: ['page_size', 'next'],
        properties: {
          page_size: { type: 'integer' },
          next: { type: ['string', 'null'], description: 'Pass as start for the next page.' },
          after: { type: 'string', description: 'The same cursor as next, when there is a next page (the name the Basis Theory SDK reads).' },
        },
      },
      {
        type: 'object',
        description: 'Offset paging (when page is given).',
        required: ['total_items', 'page_number', 'page_size', 'total_pages'],
        properties: {
          total_items: { type: 'integer' },
          page_number: { type: 'integer' },
          page_size: { type: 'integer' },
          total_pages: { type: 'integer' },
        },
      },
    ],
  },
  Reactor: {
    type: 'object',
    description: 'A reactor (spec 2.3): it runs its formula’s code (`formula`) or its own inline `code`.',
    required: ['id', 'tenant_id', 'name', 'configuration', 'created_at'],
    properties: {
      id: uuid(),
      tenant_id: uuid(),
      name: str(undefined, { maxLength: 200 }),
      formula: ref('Formula'),
      code: str('Inline code (a reactor created with code instead of a formula).'),
      configuration: { type: 'object' },
      application: {
        oneOf: [
          { type: 'object', required: ['id', 'name', 'type'], properties: { id: uuid(), name: str(), type: { enum: [...APPLICATION_TYPES] } } },
          {
            type: 'object',
            description: 'Shown instead to a caller that lacks some grant of the application: one is bound, which is withheld.',
            required: ['redacted'],
            properties: { redacted: { enum: [true] } },
          },
        ],
      },
      created_by: uuid(),
      created_at: dateTime(),
      modified_by: uuid(),
      modified_at: dateTime(),
    },
  },
  CreateReactorRequest: {
    type: 'object',
    description: 'Either formula (spec 4.2; configuration then required) or code (inline code; configuration optional), not both.',
    additionalProperties: false,
    required: ['name'],
    properties: {
      name: str(undefined, { maxLength: 200 }),
      configuration: { type: 'object', description: 'Names and values satisfying the formula’s configuration declaration; for inline code, any names with string, number or boolean values.' },
      formula: { type: 'object', required: ['id'], properties: { id: uuid() } },
      code: str('JavaScript: module.exports = async function (req) { … }. Checked when saved.'),
      application: { type: 'object', required: ['id'], properties: { id: uuid('A public or private application.') } },
    },
  },
  UpdateReactorRequest: {
    type: 'object',
    description: 'PUT replaces: configuration is required for a formula’s reactor, code for an inline-code reactor (and refused for a formula’s).',
    additionalProperties: false,
    required: ['name'],
    properties: {
      name: str(undefined, { maxLength: 200 }),
      configuration: { type: 'object' },
      code: str('Inline-code reactors only.'),
      application: { type: 'object', required: ['id'], properties: { id: uuid('A public or private application.') } },
    },
  },
  PatchReactorRequest: {
    type: 'object',
    description: 'JSON merge patch (RFC 7386): absent attributes keep their value.',
    additionalProperties: false,
    properties: {
      name: str(undefined, { maxLength: 200 }),
      configuration: { type: ['object', 'null'], description: 'Merged into the configuration; null empties it.' },
      code: str('Inline-code reactors only.'),
      application: { type: ['object', 'null'], required: ['id'], properties: { id: uuid('A public or private application.') }, description: 'null removes it.' },
    },
  },
  ReactRequest: {
    type: 'object',
    additionalProperties: false,
    properties: {
      args: { type: 'object', description: 'Arguments; string values may hold {{<token id>}} expressions, replaced by the token data.' },
      callback_url: str('Asks for an asynchronous run (202): the result is delivered to this URL as a signed webhook.', { format: 'uri' }),
      timeout_ms: { type: 'integer', minimum: 10000, maximum: 210000, default: 10000 },
    },
  },
  ReactorResponse: {
    type: 'object',
    description: 'Reactor Response (spec 2.5).',
    properties: { tokens: { type: 'object' }, raw: anyJson('Raw output of the reactor.') },
  },
  ReactAsyncRequest: {
    type: 'object',
    additionalProperties: false,
    properties: {
      args: { type: 'object', description: 'Arguments; string values may hold {{<token id>}} expressions, replaced by the token data when the run starts.' },
      timeout_ms: { type: 'integer', minimum: 10000, maximum: 210000, default: 10000, description: 'Wall-time limit of the run.' },
    },
  },
  ReactorRunAccepted: {
    type: 'object',
    required: ['id', 'status', 'reactor_id', 'created_at'],
    properties: { id: uuid('The request id: read the result at /reactors/{id}/results/{request_id}.'), status: { const: 'pending' }, reactor_id: uuid(), created_at: { type: 'string', format: 'date-time' } },
  },
  ReactorRunResult: {
    type: 'object',
    required: ['id', 'reactor_id', 'status', 'created_at'],
    properties: {
      id: uuid(),
      reactor_id: uuid(),
      status: { enum: ['pending', 'running', 'completed', 'failed'] },
      created_at: { type: 'string', format: 'date-time' },
      completed_at: { type: 'string', format: 'date-time' },
      result: ref('ReactorResponse'),
      error: ref('Problem'),
    },
  },
  ReactorList: list('Reactor'),
  Formula: {
    type: 'object',
    required: ['id', 'tenant_id', 'name', 'type', 'description', 'code', 'configuration', 'request_parameters', 'created_at'],
    properties: {
      id: uuid(),
      tenant_id: uuid(),
      name: str(),
      type: { enum: ['private'], description: 'Always private: the tenant’s own formula.' },
      description: { type: ['string', 'null'] },
      code: str('JavaScript run in the sandbox.'),
      configuration: { type: 'array', items: ref('FormulaConfigurationEntry') },
      request_parameters: { type: 'array', items: ref('FormulaRequestParameter') },
      created_by: uuid(),
      created_at: dateTime(),
      modified_by: uuid(),
      modified_at: dateTime(),
    },
  },
  FormulaConfigurationEntry: {
    type: 'object',
    required: ['name', 'type'],
    additionalProperties: false,
    properties: { name: str(), description: { type: ['string', 'null'] }, type: { enum: ['string', 'number', 'boolean'] } },
  },
  FormulaRequestParameter: {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'type'],
    properties: {
      name: str('Dot-separated for nested objects.'),
      description: { type: ['string', 'null'] },
      type: { enum: ['string', 'number', 'boolean', 'object', 'array'] },
      optional: { type: 'boolean', default: false },
    },
  },
  CreateFormulaRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'code'],
    properties: {
      type: { enum: ['private'], description: 'Optional; only private formulas exist here.' },
      name: str(),
      description: { type: ['string', 'null'] },
      code: str('JavaScript: module.exports = async function (req) { … }.'),
      configuration: { type: 'array', items: ref('FormulaConfigurationEntry') },
      request_parameters: { type: 'array', items: ref('FormulaRequestParameter') },
    },
  },
  UpdateFormulaRequest: { $ref: '#/components/schemas/CreateFormulaRequest' },
  FormulaList: list('Formula'),
  AccessRule: {
    type: 'object',
    additionalProperties: false,
    required: ['priority', 'container', 'transform', 'permissions'],
    properties: {
      description: str(undefined, { maxLength: 500 }),
      priority: { type: 'integer', minimum: 0, description: 'Lower is evaluated first.' },
      container: str('Container path; the rule covers it and its descendants.'),
      transform: { enum: [...TRANSFORMS] },
      permissions: { type: 'array', minItems: 1, items: { enum: [...PERMISSIONS] } },
    },
  },
  Application: {
    type: 'object',
    required: ['id', 'tenant_id', 'name', 'type', 'permissions', 'rules', 'created_at'],
    properties: {
      id: uuid(),
      tenant_id: uuid(),
      name: str(),
      type: { enum: [...APPLICATION_TYPES] },
      permissions: { type: 'array', items: { enum: [...PERMISSIONS] } },
      rules: { type: 'array', items: ref('AccessRule') },
      key: str('The API key: present on create and regenerate only.'),
      created_by: uuid(),
      created_at: dateTime(),
      modified_by: uuid(),
      modified_at: dateTime(),
    },
  },
  CreateApplicationRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'type'],
    properties: {
      name: str(undefined, { maxLength: 200 }),
      type: { enum: [...APPLICATION_TYPES] },
      permissions: { type: 'array', items: { enum: [...PERMISSIONS] }, description: 'Limited by the type (public, private, management).' },
      rules: { type: 'array', maxItems: 100, items: ref('AccessRule') },
    },
  },
  UpdateApplicationRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: {
      name: str(undefined, { maxLength: 200 }),
      permissions: { type: 'array', items: { enum: [...PERMISSIONS] } },
      rules: { type: 'array', maxItems: 100, items: ref('AccessRule') },
    },
  },
  ApplicationList: list('Application'),
  ApplicationKey: {
    type: 'object',
    required: ['id', 'created_at'],
    properties: {
      id: uuid(),
      key: str('The API key: in the response that created it only.'),
      created_by: uuid(),
      created_at: dateTime(),
    },
  },
  ApplicationKeyList: { type: 'array', description: 'Every key of the application, oldest first (not paginated: at most 20).', items: ref('ApplicationKey') },
  Session: {
    type: 'object',
    required: ['session_key', 'nonce', 'expires_at'],
    properties: {
      session_key: str('The session key, shown once; it authenticates once the nonce is authorized.'),
      nonce: str('Hand it to a private application to authorize the session; works once.'),
      expires_at: dateTime('3 minutes after creation.'),
    },
  },
  AuthorizeSessionRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['nonce'],
    description: 'Exactly one of permissions (held on every container) or rules. Token permissions only, within the authorizing application’s own grants.',
    properties: {
      nonce: str(undefined, { maxLength: 200 }),
      permissions: { type: 'array', minItems: 1, items: { enum: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'] } },
      rules: { type: 'array', minItems: 1, maxItems: 100, items: ref('AccessRule') },
      expires_at: dateTime('An earlier expiry (it cannot be extended).'),
    },
  },
  AuditEntry: {
    type: 'object',
    required: ['seq', 'tenant_id', 'actor', 'operation', 'resource_id', 'outcome', 'detail', 'at'],
    properties: {
      seq: { type: 'integer' },
      tenant_id: uuid(),
      actor: str('Application id, or system:….'),
      operation: str(),
      resource_id: { type: ['string', 'null'] },
      outcome: { enum: ['success', 'failure'] },
      detail: { type: ['string', 'null'], description: 'Error code on failure; never data.' },
      at: dateTime(),
    },
  },
  AuditEntryList: list('AuditEntry'),
  Problem: {
    type: 'object',
    description: 'RFC 9457 problem details.',
    required: ['type', 'title', 'status', 'detail'],
    properties: {
      type: str('A URN naming the problem.'),
      title: str(),
      status: { type: 'integer' },
      detail: str(),
      errors: { type: 'object', additionalProperties: { type: 'array', items: str() }, description: 'Validation messages by field path.' },
    },
  },
  DetokenizeRequest: { description: 'Any JSON value; each string may hold {{ <token id> }} expressions (optionally with filters), as reactor args.' },
  DetokenizeResponse: { description: 'The request with every expression replaced by the token data under the caller’s token:use transform.' },
  Tenant: {
    type: 'object',
    required: ['id', 'name', 'created_at'],
    properties: { id: uuid(), name: str(), created_at: dateTime() },
  },
  Permission: {
    type: 'object',
    required: ['type', 'description', 'application_types'],
    properties: { type: str('e.g. token:create'), description: str(), application_types: { type: 'array', items: { enum: [...APPLICATION_TYPES] } } },
  },
  PermissionList: { type: 'array', items: ref('Permission') },
  Health: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } },
  OpenApiDocument: { type: 'object', description: 'This document.' },
};

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the run is stored and done in the background',
  204: 'No Content',
  400: 'Validation failed or malformed request',
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
  503: 'Service unavailable: the store does not answer, or a reactor said so',
};

/** The statuses a route may answer, derived from how it is handled. */
export function statusesOf(route: RouteDefinition): number[] {
  const statuses = new Set<number>([route.status, 500]);
  if (route.auth) [401, 403].forEach((s) => statuses.add(s));
  if (route.path.includes('{')) statuses.add(404);
  if (route.body) [400, 413, 415].forEach((s) => statuses.add(s));
  if (route.auth && (route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH')) [400, 409, 422].forEach((s) => statuses.add(s));
  if (route.docs.query) statuses.add(400);
  route.docs.extraStatuses?.forEach((s) => statuses.add(s));
  return [...statuses].sort((a, b) => a - b);
}

/**
 * Builds the OpenAPI 3.1 document of a route table: every route with its parameters, request body,
 * success and error responses, and the API key security scheme named after the header prefix.
 */
export function buildOpenApiDocument(routes: readonly RouteDefinition[], options: { headerPrefix: string; maxBodyBytes: number }): Record<string, unknown> {
  const apiKeyHeader = `${options.headerPrefix}-API-KEY`;
  const idempotencyHeader = `${options.headerPrefix}-IDEMPOTENCY-KEY`;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const parameters: Schema[] = [];
    for (const match of route.path.matchAll(/\{([^}]+)\}/g)) {
      parameters.push({ name: match[1], in: 'path', required: true, description: 'Percent-encoded in the path.', schema: { type: 'string' } });
    }
    for (const q of route.docs.query ?? []) {
      parameters.push({
        name: q.name,
        in: 'query',
        required: false,
        description: q.description,
        ...(q.array ? { schema: { type: 'array', items: { type: 'string' } }, style: 'form', explode: true } : { schema: { type: q.type ?? 'string' } }),
      });
    }
    const mutating = route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH';
    if (route.auth && mutating) {
      parameters.push({
        name: idempotencyHeader,
        in: 'header',
        required: false,
        description: 'Makes the request idempotent for 24 hours: the first successful response is stored and replayed.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      });
    }
    const responses: Record<string, unknown> = {};
    const alternate = route.docs.alternateSuccess;
    if (alternate) responses[String(alternate.status)] = { description: STATUS_TEXT[alternate.status], content: { 'application/json': { schema: ref(alternate.responseSchema) } } };
    for (const status of statusesOf(route)) {
      if (status === route.status) {
        responses[String(status)] =
          status === 204 || !route.docs.responseSchema
            ? { description: STATUS_TEXT[status] }
            : { description: STATUS_TEXT[status], content: { 'application/json': { schema: ref(route.docs.responseSchema) } } };
      } else {
        responses[String(status)] = { description: STATUS_TEXT[status] ?? 'Error', content: { 'application/problem+json': { schema: ref('Problem') } } };
      }
    }
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.docs.summary,
      tags: [route.docs.tag],
      ...(route.auth ? { 'x-permission': route.permission } : { security: [] }),
      ...(parameters.length > 0 ? { parameters } : {}),
      responses,
    };
    if (route.body) {
      const mediaType = route.body === 'merge-patch' ? 'application/merge-patch+json' : 'application/json';
      operation['requestBody'] = {
        required: route.body !== 'optional-json',
        description: `At most ${options.maxBodyBytes} bytes.`,
        content: { [mediaType]: { schema: route.docs.requestSchema ? ref(route.docs.requestSchema) : {} } },
      };
    }
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'tokenvault',
      version: '0.1.0',
      description: 'Tokenization vault and reactor platform. Errors are RFC 9457 problem documents.',
    },
    paths,
    components: {
      schemas: { ...SCHEMAS, ...WEBHOOK_SCHEMAS },
      securitySchemes: { [apiKeyHeader]: { type: 'apiKey', in: 'header', name: apiKeyHeader } },
    },
    security: [{ [apiKeyHeader]: [] }],
  };
}
