/**
 * The bodies of `/proxies` (docs/proxies.md, Pre-configured proxies), checked once here: name,
 * destination_url, ordered request and response transforms (the Basis Theory SDK's singular
 * `request_transform` / `response_transform` are taken as one-element lists), configuration (the
 * secrets the transforms read: names with string, number or boolean values), application and
 * require_auth.
 */
import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import { validationFromIssues } from '../validation/issues.js';
import { TRANSFORM_RUNTIMES } from './transform-shapes.js';

export const MAX_PROXY_NAME = 200;
export const MAX_TRANSFORMS = 10;
export const CONFIGURATION_LIMITS = Object.freeze({ entries: 100, nameLength: 200, valueLength: 4096 });
const MAX_CODE = 100_000;
const MAX_TEXT = 10_000;

const Name = v.pipe(v.string('must be a string'), v.trim(), v.minLength(1, 'is required'), v.maxLength(MAX_PROXY_NAME, `must be at most ${MAX_PROXY_NAME} characters`));
const Url = v.pipe(v.string('must be a string'), v.minLength(1, 'is required'), v.maxLength(2048, 'must be at most 2048 characters'));
const Text = (what: string) => v.pipe(v.string('must be a string'), v.minLength(1, `is required: ${what}`), v.maxLength(MAX_TEXT, `must be at most ${MAX_TEXT} characters`));
const Code = v.pipe(v.string('must be a string'), v.minLength(1, 'is required'), v.maxLength(MAX_CODE, `must be at most ${MAX_CODE} characters`));
const Reference = v.strictObject({ id: v.pipe(v.string('must be a string'), v.minLength(1, 'is required'), v.maxLength(250, 'is too long')) }, 'must be an object with an id');

/**
 * A code transform's options: only the runtime image, which picks the shape the code receives
 * (transform-shapes.ts). Given or not, it is stored (`node-bt` by default), so a transform stored
 * without one is known to predate Basis Theory's shape.
 */
const CodeOptions = v.optional(
  v.strictObject(
    {
      runtime: v.optional(
        v.strictObject(
          { image: v.optional(v.picklist(TRANSFORM_RUNTIMES, `must be one of: ${TRANSFORM_RUNTIMES.join(', ')}`), 'node-bt') },
          'must be { image }: the sandbox installs no dependencies and has its own limits (docs/proxies.md)',
        ),
        {},
      ),
    },
    'must be { runtime: { image } }',
  ),
  {},
);
const CodeTransform = v.pipe(
  v.strictObject({ type: v.literal('code'), code: Code, options: CodeOptions }),
  v.transform((t) => ({ ...t, options: { runtime: { image: t.options.runtime.image } } })),
);

/** A request transform: code run in the reactor sandbox, or a tokenize template (as the proxy's application). */
export const RequestTransformSchema = v.variant(
  'type',
  [CodeTransform, v.strictObject({ type: v.literal('tokenize'), expression: Text('the tokenize template') })],
  "must be a transform with type 'code' or 'tokenize'",
);

/** A response transform (run only on a 2xx answer). */
export const ResponseTransformSchema = v.variant(
  'type',
  [
    CodeTransform,
    v.strictObject({ type: v.literal('tokenize'), expression: Text('the tokenize template'), location: v.optional(Text('a JSON path')) }),
    v.strictObject({
      type: v.literal('mask'),
      matcher: v.optional(v.literal('regex', "must be 'regex'")),
      expression: v.pipe(Text('a regular expression with one capture group'), v.check(oneCaptureGroup, 'must be a valid regular expression with exactly one capture group')),
      replacement: v.optional(v.pipe(v.string('must be a string'), v.length(1, 'must be exactly one character'))),
    }),
    v.strictObject({ type: v.literal('append_json'), value: Text('the JSON text to append'), location: Text('a JSON path') }),
    v.strictObject({
      type: v.literal('append_header'),
      value: Text('the header value'),
      location: v.pipe(Text('the header name'), v.regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be a header name')),
    }),
  ],
  "must be a transform with type 'code', 'tokenize', 'mask', 'append_json' or 'append_header'",
);

const Transforms = <T extends v.GenericSchema>(item: T) =>
  v.pipe(v.array(item, 'must be an array of transforms'), v.maxLength(MAX_TRANSFORMS, `must hold at most ${MAX_TRANSFORMS} transforms`));
const Configuration = v.pipe(
  v.custom<Record<string, unknown>>((value) => value !== null && typeof value === 'object' && !Array.isArray(value), 'must be an object of names and values'),
  v.check((c) => Object.keys(c).length <= CONFIGURATION_LIMITS.entries, `must hold at most ${CONFIGURATION_LIMITS.entries} entries`),
  v.check(
    (c) =>
      Object.entries(c).every(
        ([name, value]) =>
          name.length <= CONFIGURATION_LIMITS.nameLength && ['string', 'number', 'boolean'].includes(typeof value) && String(value).length <= CONFIGURATION_LIMITS.valueLength,
      ),
    `must map names (at most ${CONFIGURATION_LIMITS.nameLength} characters) to strings, numbers or booleans (at most ${CONFIGURATION_LIMITS.valueLength} characters)`,
  ),
);

const fields = {
  request_transforms: v.nullish(Transforms(RequestTransformSchema)),
  request_transform: v.nullish(RequestTransformSchema),
  response_transforms: v.nullish(Transforms(ResponseTransformSchema)),
  response_transform: v.nullish(ResponseTransformSchema),
  configuration: v.nullish(Configuration),
  application: v.nullish(Reference),
  require_auth: v.nullish(v.boolean('must be true or false')),
};

/** Exported for the OpenAPI document. */
export const CreateProxySchema = v.strictObject({ name: Name, destination_url: Url, ...fields });
export const UpdateProxySchema = CreateProxySchema;
export const PatchProxySchema = v.strictObject({
  name: v.optional(Name),
  destination_url: v.optional(Url),
  request_transforms: v.optional(v.nullable(Transforms(RequestTransformSchema))),
  request_transform: v.optional(v.nullable(RequestTransformSchema)),
  response_transforms: v.optional(v.nullable(Transforms(ResponseTransformSchema))),
  response_transform: v.optional(v.nullable(ResponseTransformSchema)),
  configuration: v.optional(v.nullable(Configuration)),
  application: v.optional(v.nullable(Reference)),
  require_auth: v.optional(v.boolean('must be true or false')),
});

export type CreateProxyRequest = v.InferInput<typeof CreateProxySchema>;
export type UpdateProxyRequest = CreateProxyRequest;
export type PatchProxyRequest = v.InferInput<typeof PatchProxySchema>;
export type RequestTransform = v.InferOutput<typeof RequestTransformSchema>;
export type ResponseTransform = v.InferOutput<typeof ResponseTransformSchema>;

/** A whole proxy as a create or PUT gives it (absent lists are empty; require_auth defaults to true). */
export interface ProxyInput {
  name: string;
  destinationUrl: string;
  requestTransforms: RequestTransform[];
  responseTransforms: ResponseTransform[];
  configuration: Record<string, string | number | boolean> | null;
  applicationId: string | null;
  requireAuth: boolean;
}

/** What a merge patch names (undefined: unchanged; null configuration or application: removed). */
export type ProxyPatch = Partial<Omit<ProxyInput, 'configuration' | 'applicationId'>> & {
  configuration?: Record<string, string | number | boolean> | null;
  applicationId?: string | null;
};

export function parseProxy(body: unknown): ProxyInput {
  const o = parse(CreateProxySchema, body);
  return {
    name: o.name,
    destinationUrl: o.destination_url,
    requestTransforms: transforms(o.request_transforms, o.request_transform, 'request'),
    responseTransforms: transforms(o.response_transforms, o.response_transform, 'response'),
    configuration: (o.configuration ?? null) as ProxyInput['configuration'],
    applicationId: o.application?.id ?? null,
    requireAuth: o.require_auth ?? true,
  };
}

export function parseProxyPatch(body: unknown): ProxyPatch {
  const o = parse(PatchProxySchema, body);
  const patch: ProxyPatch = {};
  if (o.name !== undefined) patch.name = o.name;
  if (o.destination_url !== undefined) patch.destinationUrl = o.destination_url;
  if (o.request_transforms !== undefined || o.request_transform !== undefined) patch.requestTransforms = transforms(o.request_transforms, o.request_transform, 'request');
  if (o.response_transforms !== undefined || o.response_transform !== undefined) patch.responseTransforms = transforms(o.response_transforms, o.response_transform, 'response');
  if (o.configuration !== undefined) patch.configuration = o.configuration as ProxyPatch['configuration'];
  if (o.application !== undefined) patch.applicationId = o.application?.id ?? null;
  if (o.require_auth !== undefined) patch.requireAuth = o.require_auth;
  return patch;
}

function parse<S extends v.GenericSchema>(schema: S, body: unknown): v.InferOutput<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw ValidationError.field('body', 'must be a JSON object');
  const parsed = v.safeParse(schema, withTransformTypes(body as Record<string, unknown>));
  if (!parsed.success) throw validationFromIssues(parsed.issues);
  return parsed.output;
}

function transforms<T>(list: T[] | null | undefined, single: T | null | undefined, side: 'request' | 'response'): T[] {
  if (list != null && single != null) throw ValidationError.field(`${side}_transform`, `must not be given with ${side}_transforms: give the list only`);
  return list ?? (single == null ? [] : [single]);
}

/** The Basis Theory SDK 4.x sends a transform as `{ code }` without a type: that is a code transform. */
function withTransformTypes(body: Record<string, unknown>): Record<string, unknown> {
  const typed = (t: unknown) => (t !== null && typeof t === 'object' && !Array.isArray(t) && !('type' in t) && 'code' in t ? { type: 'code', ...t } : t);
  const out = { ...body };
  for (const name of ['request_transform', 'response_transform']) if (name in out) out[name] = typed(out[name]);
  for (const name of ['request_transforms', 'response_transforms']) if (Array.isArray(out[name])) out[name] = (out[name] as unknown[]).map(typed);
  return out;
}

function oneCaptureGroup(source: string): boolean {
  try {
    // A regex with exactly one capture group matches the empty alternative with two entries.
    return new RegExp(`${source}|`).exec('')!.length === 2;
  } catch {
    return false;
  }
}
