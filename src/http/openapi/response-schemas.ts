import { APPLICATION_TYPES, PERMISSIONS } from '../../permissions/permissions.js';
import { WEBHOOK_SCHEMAS } from './webhook-schemas.js';
import { type Schema, anyJson, dateTime, list, openObject, ref, str, stringMap, uuid } from './schema-helpers.js';

/**
 * The response component schemas, written from the views the services return (token-view.ts,
 * reactor-views.ts, application-service.ts). `required` lists only what every response carries;
 * test/http/openapi.test.ts checks real responses against them.
 */
export const RESPONSE_SCHEMAS: Readonly<Record<string, Schema>> = {
  Token: {
    type: 'object',
    description:
      'A token. data follows the caller’s access-control transform and is absent when redacted. mask, search_indexes and fingerprint_expression are echoed by create and update only; a duplicate the caller may not read shows its identity only.',
    required: ['id', 'type', 'tenant_id'],
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
      _extras: {
        type: 'object',
        required: ['deduplicated'],
        properties: { deduplicated: { type: 'boolean' } },
        description: 'Present when an existing token was returned instead of a new one.',
      },
    },
  },
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
    description: 'A reactor: it runs its formula’s code (`formula`) or its own inline `code`.',
    required: ['id', 'tenant_id', 'name', 'configuration', 'created_at'],
    properties: {
      id: uuid(),
      tenant_id: uuid(),
      name: str(undefined, { maxLength: 200 }),
      formula: ref('Formula'),
      code: str('Inline code (a reactor created with code instead of a formula).'),
      configuration: openObject('Configuration names and values.'),
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
  ReactorResponse: {
    type: 'object',
    description: 'Reactor Response.',
    properties: { tokens: openObject('Tokens created by the reactor, in the shape it returned.'), raw: anyJson('Raw output of the reactor.') },
  },
  ReactorRunAccepted: {
    type: 'object',
    required: ['id', 'status', 'reactor_id', 'created_at'],
    properties: { id: uuid('The request id: read the result at /reactors/{id}/results/{request_id}.'), status: { const: 'pending' }, reactor_id: uuid(), created_at: dateTime() },
  },
  ReactorRunResult: {
    type: 'object',
    required: ['id', 'reactor_id', 'status', 'created_at'],
    properties: {
      id: uuid(),
      reactor_id: uuid(),
      status: { enum: ['pending', 'running', 'completed', 'failed'] },
      created_at: dateTime(),
      completed_at: dateTime(),
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
  FormulaList: list('Formula'),
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
  ApplicationList: list('Application'),
  ApplicationKey: {
    type: 'object',
    required: ['id', 'created_at'],
    properties: { id: uuid(), key: str('The API key: in the response that created it only.'), created_by: uuid(), created_at: dateTime() },
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
  DetokenizeResponse: anyJson('The request with every expression replaced by the token data under the caller’s token:use transform.'),
  Tenant: { type: 'object', required: ['id', 'name', 'created_at'], properties: { id: uuid(), name: str(), created_at: dateTime() } },
  Permission: {
    type: 'object',
    required: ['type', 'description', 'application_types'],
    properties: { type: str('e.g. token:create'), description: str(), application_types: { type: 'array', items: { enum: [...APPLICATION_TYPES] } } },
  },
  PermissionList: { type: 'array', items: ref('Permission') },
  ...WEBHOOK_SCHEMAS,
  Health: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } },
  OpenApiDocument: openObject('This document.'),
};
