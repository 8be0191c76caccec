/**
 * Runs a pre-configured proxy's transforms, in order (docs/proxies.md, Transforms). Code, and the
 * mask's regular expression (mask-transform.ts), run in the reactor sandbox (its workers, deadlines
 * and fair shares; its console output never logged, only its size); `req.bt` and tokenize act as
 * the proxy's application within the grants it was bound with, never as the caller. A failing
 * transform throws: the HTTP layer answers it as `{"proxy_error": ...}`, so it is never taken for
 * the destination's answer.
 */
import type { Caller } from '../auth/caller.js';
import type { Logger } from '../common/logger.js';
import { ValidationError } from '../errors/errors.js';
import { createBtTree, type NestedReact } from '../reactors/bt-bridge.js';
import type { HostFetch, RunOwner, Sandbox } from '../sandbox/sandbox.js';
import type { TokenService } from '../tokens/token-service.js';
import { maskInSandbox } from './mask-transform.js';
import { parsePath, setAt } from './proxy-json-path.js';
import { type ProxyMessage, bodyValue, checkedHeaders, withBody } from './proxy-message.js';
import type { RequestTransform, ResponseTransform } from './proxies-input.js';
import { tokenizeBody } from './tokenize-transform.js';
import { type CodeTransformOptions, NODE22_LOGGER_SHIM, type TransformMessage, runtimeOf, transformArgument } from './transform-shapes.js';

export interface TransformDeps {
  sandbox: () => Promise<Sandbox>;
  tokens: TokenService;
  react: NestedReact;
  /** The egress-checked fetch reactor code has; null: fetch rejects. */
  fetch: HostFetch | null;
  logger: Logger;
}

/** What one call's transforms share. */
export interface TransformContext {
  tenantId: string;
  proxyId: string;
  configuration: Record<string, unknown>;
  /** The proxy's application within its bound grants; null: the proxy has none. */
  appCaller: Caller | null;
  /** Who called the proxy; null: an unauthenticated call (inbound). */
  caller: Caller | null;
  /** Whose share of the sandbox's workers the code uses. */
  owner: RunOwner;
  method: string;
  path: string;
  query: Record<string, string>;
  /** The tokens tokenize transforms created (for the audit entry). */
  createdTokenIds: string[];
}

/** An answer made by a request code transform, without calling the destination. */
export interface TransformAnswer {
  status: number;
  message: ProxyMessage;
}

export async function runRequestTransforms(
  deps: TransformDeps,
  ctx: TransformContext,
  transforms: readonly RequestTransform[],
  message: ProxyMessage,
): Promise<ProxyMessage | TransformAnswer> {
  let current = message;
  for (const [i, transform] of transforms.entries()) {
    const field = `request_transforms[${i}]`;
    const next = await named(field, () => requestStep(deps, ctx, transform, current, field));
    if ('status' in next) return next;
    current = next;
  }
  return current;
}

async function requestStep(deps: TransformDeps, ctx: TransformContext, transform: RequestTransform, current: ProxyMessage, field: string): Promise<ProxyMessage | TransformAnswer> {
  if (transform.type === 'tokenize') return tokenizeMessage(deps, ctx, current, transform.expression, undefined, field);
  const result = await runCode(
    deps,
    ctx,
    transform,
    { body: bodyValue(current, field), headers: { ...current.headers }, method: ctx.method, path: ctx.path, query: ctx.query },
    field,
  );
  if (result['response'] === undefined) return changed(current, result, field);
  // The code answers itself: the destination is not called (docs/proxies.md, Transforms).
  const response = asObject(result['response'], `${field}.response`);
  const status = response['status'] ?? 200;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599)
    throw ValidationError.field(`${field}.response.status`, 'must be a whole number from 200 to 599');
  const headers = response['headers'] === undefined ? {} : checkedHeaders(response['headers'], `${field}.response.headers`);
  return { status, message: withBody({ headers, body: null }, response['body']) };
}

/** Runs the response transforms (only on a 2xx: the caller decides). */
export async function runResponseTransforms(
  deps: TransformDeps,
  ctx: TransformContext,
  transforms: readonly ResponseTransform[],
  status: number,
  message: ProxyMessage,
): Promise<ProxyMessage> {
  let current = message;
  for (const [i, transform] of transforms.entries()) {
    const field = `response_transforms[${i}]`;
    await named(field, async () => {
      switch (transform.type) {
        case 'code': {
          const result = await runCode(
            deps,
            ctx,
            transform,
            { body: bodyValue(current, field), headers: { ...current.headers }, status, method: ctx.method, path: ctx.path, query: ctx.query },
            field,
          );
          current = changed(current, result, field);
          return;
        }
        case 'tokenize':
          current = await tokenizeMessage(deps, ctx, current, transform.expression, transform.location, field);
          return;
        case 'mask': {
          const masked = await maskInSandbox(await deps.sandbox(), ctx.owner, bodyText(current, field), transform.expression, transform.replacement ?? '*');
          current = { headers: withoutLength(current.headers), body: new TextEncoder().encode(masked) };
          return;
        }
        case 'append_json': {
          let value: unknown;
          try {
            value = JSON.parse(transform.value);
          } catch {
            throw ValidationError.field(`${field}.value`, 'is not JSON');
          }
          const body = bodyValue(current, field);
          if (body === null || typeof body !== 'object') throw ValidationError.field(field, 'appends to a JSON body: the answer is not a JSON object or array');
          if (!setAt(body, parsePath(transform.location, '$', `${field}.location`), value))
            throw ValidationError.field(`${field}.location`, `'${transform.location}' is not a place in the body`);
          current = withBody(current, body);
          return;
        }
        case 'append_header':
          current = { headers: { ...current.headers, ...checkedHeaders({ [transform.location]: transform.value }, field) }, body: current.body };
          return;
      }
    });
  }
  return current;
}

/** A transform's input error names the transform (`request_transforms[1].headers`). */
async function named<T>(field: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof ValidationError && !Object.keys(error.errors).some((key) => key.startsWith(field))) {
      throw new ValidationError(Object.fromEntries(Object.entries(error.errors).map(([key, messages]) => [`${field}.${key}`, messages])));
    }
    throw error;
  }
}

async function tokenizeMessage(
  deps: TransformDeps,
  ctx: TransformContext,
  message: ProxyMessage,
  expression: string,
  location: string | undefined,
  field: string,
): Promise<ProxyMessage> {
  const appCaller = ctx.appCaller;
  if (appCaller === null) throw ValidationError.field(field, "creates tokens as the proxy's application: give the proxy an application");
  const body = bodyValue(message, field);
  // Each id is recorded as its token is made, so a failure after it still names it (the audit entry).
  await tokenizeBody(
    expression,
    location,
    body,
    async (tokenBody) => {
      const id = await createAs(deps, appCaller, ctx.caller, tokenBody);
      ctx.createdTokenIds.push(id);
      return id;
    },
    field,
  );
  return withBody(message, body);
}

/**
 * Creates one token of a tokenize transform as the proxy's application. A duplicate is matched only
 * among tokens both the application and the caller may reveal, as a reactor's tokenize block does
 * (docs/authority.md): the id goes on toward the caller (echoed, or in the answer) and a duplicate
 * writes nothing, so its timing alone would confirm a guessed card to whoever holds the key. An
 * unauthenticated caller may reveal nothing: its tokens are never deduplicated.
 */
async function createAs(deps: TransformDeps, appCaller: Caller, caller: Caller | null, tokenBody: Record<string, unknown>): Promise<string> {
  if (tokenBody['deduplicate_token'] !== true || typeof tokenBody['type'] !== 'string') return (await deps.tokens.create(appCaller, tokenBody as never)).id;
  if (caller === null) return (await deps.tokens.create(appCaller, { ...tokenBody, deduplicate_token: false } as never)).id;
  const made = (await deps.tokens.tokenize(appCaller, tokenBody, { shownTo: caller })) as { id: string };
  return made.id;
}

async function runCode(
  deps: TransformDeps,
  ctx: TransformContext,
  transform: { code: string } & CodeTransformOptions,
  message: TransformMessage,
  field: string,
): Promise<Record<string, unknown>> {
  const sandbox = await deps.sandbox();
  const bt = ctx.appCaller && createBtTree(deps.tokens, deps.react, ctx.appCaller);
  const runtime = runtimeOf(transform);
  const req = transformArgument(runtime, message);
  const run = await sandbox.run({
    code: runtime === 'node22' ? transform.code + NODE22_LOGGER_SHIM : transform.code,
    req: { ...req, args: req['args'], configuration: ctx.configuration },
    host: { bt, fetch: deps.fetch },
    owner: ctx.owner,
    // The code sees the request's data: what it prints never reaches the process log, only its size.
    onLogs: (lines, truncated) => {
      const bytes = lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0);
      deps.logger.info('proxy transform console output', { tenantId: ctx.tenantId, proxyId: ctx.proxyId, lineCount: lines.length, bytes, truncated });
    },
  });
  if (run.result === null || run.result === undefined) return {};
  return asObject(run.result, field);
}

function asObject(value: unknown, field: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw ValidationError.field(field, 'must return an object: { headers, body }');
  return value as Record<string, unknown>;
}

/** The message after a code transform: the headers and body it returned replace the current ones. */
function changed(message: ProxyMessage, result: Record<string, unknown>, field: string): ProxyMessage {
  const headers = result['headers'] === undefined ? message.headers : checkedHeaders(result['headers'], `${field}.headers`);
  const next = { headers, body: message.body };
  return 'body' in result ? withBody(next, result['body']) : next;
}

function bodyText(message: ProxyMessage, field: string): string {
  if (message.body === null) return '';
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(message.body);
  } catch {
    throw ValidationError.field(field, 'masks a text body: this one is binary');
  }
}

function withoutLength(headers: Record<string, string>): Record<string, string> {
  const out = { ...headers };
  delete out['content-length'];
  return out;
}
