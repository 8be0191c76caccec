import { CreateSchema as CreateApplicationSchema, RuleSchema, UpdateSchema as UpdateApplicationSchema } from '../../applications/application-input.js';
import { ConfigurationEntry, FormulaSchema, RequestParameter } from '../../reactors/formula-input.js';
import { CreateProxySchema, PatchProxySchema, UpdateProxySchema } from '../../proxy/proxies-input.js';
import {
  CreateSchema as CreateReactorSchema,
  InvokeSchema,
  PatchSchema as PatchReactorSchema,
  TIMEOUT_MS,
  UpdateSchema as UpdateReactorSchema,
} from '../../reactors/reactor-input.js';
import { AuthorizeSchema } from '../../sessions/session-input.js';
import { WebhookSchema } from '../../webhooks/webhook-input.js';
import { SearchTokensSchema } from '../../tokens/search-input.js';
import { CreateTokenIntentSchema } from '../../token-intents/token-intent-input.js';
import { TOKEN_INPUT_LIMITS as L, createSchema as CreateTokenSchema, updateSchema as UpdateTokenSchema } from '../../tokens/token-input-schemas.js';
import { definitionsFromValibot, fromValibot } from './from-valibot.js';
import { type Schema, anyJson, dateTime, openObject, ref, str } from './schema-helpers.js';

/** Sub-schemas shared by several bodies (and by responses): each is a component of its own. */
const SHARED = { AccessRule: RuleSchema, FormulaConfigurationEntry: ConfigurationEntry, FormulaRequestParameter: RequestParameter };

// Token data, mask, containers and metadata are checked by hand in token-input.ts and
// token-input-checks.ts (JSON checks, normalization, per-key reports): their JSON Schema is given
// here, from the same limits.
const metadata = (values: Schema): Schema => ({
  type: 'object',
  maxProperties: L.metadataKeys,
  propertyNames: { minLength: 1, maxLength: L.metadataKeyLength },
  additionalProperties: values,
});
const metadataValue: Schema = { type: 'string', maxLength: L.metadataValueLength };
const containers: Schema = { type: 'array', minItems: 1, items: str('Container path like /pci/high/.') };

/**
 * The request-body component schemas, generated from the valibot schemas the services validate
 * with, so the document cannot drift from what the server accepts.
 */
export function requestSchemas(): Record<string, Schema> {
  const shared = SHARED;
  return {
    ...definitionsFromValibot(shared),
    CreateTokenRequest: fromValibot(CreateTokenSchema, {
      description: 'Create Token. Unknown attributes are refused by name.',
      additionalProperties: false,
      required: ['data'],
      properties: {
        data: anyJson(`Token data: object, array or primitive (not null), at most ${L.jsonDepth} levels deep.`),
        mask: anyJson('Mask expression tree; defaults per type.'),
        containers: { anyOf: [containers, { type: 'null' }] },
        metadata: { anyOf: [{ ...metadata(metadataValue), description: 'Non-sensitive metadata.' }, { type: 'null' }] },
      },
    }),
    CreateTokenOrConvertRequest: { oneOf: [ref('CreateTokenRequest'), ref('ConvertTokenIntentRequest')] },
    ConvertTokenIntentRequest: {
      type: 'object',
      additionalProperties: false,
      required: ['token_intent_id'],
      description:
        'Converts a token intent into a token (docs/token-intents.md): the attributes of Create Token except type and data, which the intent gives. The intent is removed; converting it twice finds no intent (404).',
      properties: {
        token_intent_id: str('The id of a live token intent of the tenant.', { maxLength: L.idLength }),
        id: str('Token id or id expression.', { maxLength: L.idLength }),
        mask: anyJson('Mask expression tree; defaults per type.'),
        containers: { anyOf: [containers, { type: 'null' }] },
        metadata: { anyOf: [{ ...metadata(metadataValue), description: 'Non-sensitive metadata.' }, { type: 'null' }] },
        search_indexes: { type: ['array', 'null'], items: str(), maxItems: L.searchIndexes },
        fingerprint_expression: { type: ['string', 'null'], maxLength: L.expressionLength },
        deduplicate_token: { type: ['boolean', 'null'], description: "Needs the reveal transform of token:read on the new token's containers." },
        expires_at: { anyOf: [dateTime(), { type: 'null' }] },
      },
    },
    CreateTokenIntentRequest: fromValibot(CreateTokenIntentSchema, {
      description: 'Create Token Intent: a token type and its data (validated as the type’s). Unknown attributes are refused by name.',
      additionalProperties: false,
      required: ['type', 'data'],
      properties: { data: anyJson(`The data: validated as a token of the type, at most ${L.jsonDepth} levels deep.`) },
    }),
    UpdateTokenRequest: fromValibot(UpdateTokenSchema, {
      description:
        'A JSON merge patch (RFC 7386): data, mask and metadata are merged; the other attributes are replaced; null resets an attribute to its default. id and type cannot change.',
      additionalProperties: false,
      properties: {
        data: anyJson('Merge patch of the data (not null).'),
        mask: anyJson('Merge patch of the mask; null removes it.'),
        metadata: {
          anyOf: [metadata({ anyOf: [metadataValue, { type: 'null' }] }), { type: 'null' }],
          description: 'Merge patch: a null value deletes that key; null removes all.',
        },
        containers: { anyOf: [containers, { type: 'null' }] },
      },
    }),
    SearchTokensRequest: fromValibot(SearchTokensSchema, {
      description: 'Terms field:value joined by AND: data, type, container, fingerprint, id, metadata.<key>; paging. Unknown attributes are refused by name.',
    }),
    TokenizeRequest: anyJson('Any JSON; every object with a string type and a data key is a Create Token body and becomes a token (at most 100).'),
    CreateProxyRequest: fromValibot(CreateProxySchema, {
      description:
        'A pre-configured proxy (docs/proxies.md): transforms are ordered lists (request_transform / response_transform: one, as the Basis Theory SDK sends it); configuration values are sealed and never shown again; require_auth defaults to true.',
    }),
    UpdateProxyRequest: fromValibot(UpdateProxySchema, { description: 'Replaces the proxy: absent transforms, configuration and application are removed.' }),
    PatchProxyRequest: fromValibot(PatchProxySchema, {
      description:
        'JSON merge patch (RFC 7386): configuration is merged (a null value removes a name; null removes it all); transform lists are replaced whole; application null removes it.',
    }),
    CreateReactorRequest: fromValibot(
      CreateReactorSchema,
      { description: 'Either formula (configuration then required) or code (inline code; configuration optional), not both.' },
      shared,
    ),
    UpdateReactorRequest: fromValibot(
      UpdateReactorSchema,
      {
        description:
          'PUT replaces: an absent application removes it; configuration is required for a formula’s reactor, code for an inline-code reactor; the formula cannot change.',
      },
      shared,
    ),
    PatchReactorRequest: fromValibot(
      PatchReactorSchema,
      { description: 'JSON merge patch (RFC 7386): absent attributes keep their value; configuration is merged (null empties it); application null removes it.' },
      shared,
    ),
    ReactRequest: fromValibot(InvokeSchema, {
      properties: {
        args: { anyOf: [openObject('Arguments; string values may hold {{ <token id> }} expressions, replaced by the token data.'), { type: 'null' }] },
        callback_url: { anyOf: [str('Asks for an asynchronous run (202): the result is delivered to this URL as a signed webhook.', { format: 'uri' }), { type: 'null' }] },
      },
    }),
    ReactAsyncRequest: {
      type: 'object',
      additionalProperties: false,
      description: 'The body of react without callback_url: the result is read at /results/{request_id} and announced by webhook.',
      properties: {
        args: { anyOf: [openObject('Arguments; string values may hold {{ <token id> }} expressions, replaced by the token data when the run starts.'), { type: 'null' }] },
        timeout_ms: { type: ['integer', 'null'], minimum: TIMEOUT_MS.min, maximum: TIMEOUT_MS.max, description: `Wall-time limit of the run. Default: ${TIMEOUT_MS.default}.` },
      },
    },
    AuthorizeSessionRequest: fromValibot(
      AuthorizeSchema,
      {
        description: 'Exactly one of permissions (held on every container) or rules. Token permissions only, within the authorizing application’s own grants.',
        properties: { expires_at: dateTime('An earlier expiry (it cannot be extended).') },
      },
      shared,
    ),
    DetokenizeRequest: anyJson('Any JSON value; each string may hold {{ <token id> }} expressions (optionally with filters), as reactor args.'),
    WebhookRequest: fromValibot(WebhookSchema, {
      properties: {
        url: str('Absolute http(s) URL without credentials; loopback, private, link-local, CGNAT and metadata addresses are refused unless the vault allows the private network.', {
          maxLength: 2048,
        }),
      },
    }),
    CreateFormulaRequest: fromValibot(FormulaSchema, {}, shared),
    UpdateFormulaRequest: ref('CreateFormulaRequest'),
    CreateApplicationRequest: fromValibot(CreateApplicationSchema, { description: 'Permissions are limited by the type (public, private, management).' }, shared),
    UpdateApplicationRequest: fromValibot(UpdateApplicationSchema, { description: 'PUT: the type cannot change.' }, shared),
  };
}
