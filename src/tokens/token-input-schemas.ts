/** The token input's limits, attribute lists and valibot schemas (the OpenAPI document is generated from them). */
import * as v from 'valibot';

/** Limits on a token's input (none is documented elsewhere; these keep rows and indexes bounded). */
export const TOKEN_INPUT_LIMITS = Object.freeze({
  idLength: 250,
  typeLength: 64,
  expressionLength: 4096,
  searchIndexes: 100,
  metadataKeys: 100,
  metadataKeyLength: 128,
  metadataValueLength: 1024,
  /** Deepest nesting of arrays/objects accepted in data and mask. */
  jsonDepth: 64,
});

/** Every attribute a Create Token body may hold (others are refused by name). */
export const CREATE_KEYS = ['id', 'type', 'data', 'mask', 'containers', 'metadata', 'search_indexes', 'fingerprint_expression', 'deduplicate_token', 'expires_at'] as const;
/** Every attribute an Update Token body may hold (others are refused by name). */
export const UPDATE_KEYS = ['data', 'mask', 'metadata', 'containers', 'search_indexes', 'fingerprint_expression', 'deduplicate_token', 'expires_at'] as const;

const L = TOKEN_INPUT_LIMITS;
const expression = v.pipe(v.string('must be an expression string'), v.maxLength(L.expressionLength, `must be at most ${L.expressionLength} characters`));
const searchIndexes = v.pipe(
  v.array(v.pipe(expression, v.minLength(1, 'must not be empty')), 'must be an array of expression strings'),
  v.maxLength(L.searchIndexes, `must have at most ${L.searchIndexes} entries`),
);
const deduplicate = v.boolean('must be a boolean');
const expiresAt = v.string('must be a string (an ISO 8601 date-time, M/D/YYYY h:mm:ss AM|PM ±hh:mm or M/D/YYYY)');

// data, mask, containers and metadata are checked by hand: they need JSON checks, normalization, or
// per-key reporting that valibot's record schema does not give (it skips keys like "__proto__").
/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const createSchema = v.object(
  {
    id: v.nullish(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(L.idLength, `must be at most ${L.idLength} characters`))),
    type: v.pipe(v.string('must be a string naming a token type'), v.minLength(1, 'must not be empty'), v.maxLength(L.typeLength, `must be at most ${L.typeLength} characters`)),
    search_indexes: v.nullish(searchIndexes),
    fingerprint_expression: v.nullish(expression),
    deduplicate_token: v.nullish(deduplicate),
    expires_at: v.nullish(expiresAt),
  },
  'must be a JSON object',
);
/** Exported for the OpenAPI document (src/http/openapi), which is generated from it. */
export const updateSchema = v.object(
  {
    search_indexes: v.nullish(searchIndexes),
    fingerprint_expression: v.nullish(expression),
    deduplicate_token: v.nullish(deduplicate),
    expires_at: v.nullish(expiresAt),
  },
  'must be a JSON object',
);
