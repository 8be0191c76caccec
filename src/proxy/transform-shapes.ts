/**
 * What a proxy's code transform receives, by its runtime (docs/proxies.md, Code transforms). Basis
 * Theory tells its two runtimes apart by the transform's `options.runtime.image`:
 * - `node-bt` (the default): `module.exports = async function (req)` with
 *   `req = { bt, args: { body, headers, method, path, query }, configuration }` (a response
 *   transform's args also hold `status`);
 * - `node22`: `module.exports = async function (event)` with
 *   `event = { req: { body, headers, method, path, query }, configuration, logger, applicationOptions }`.
 * A transform stored before the vault spoke Basis Theory's shape has no runtime: it keeps the shape
 * it was written for (`req.args` is the body, headers, method, path and query beside it).
 */

export type TransformRuntime = 'node-bt' | 'node22';

/** The runtime images a code transform may name. */
export const TRANSFORM_RUNTIMES: readonly TransformRuntime[] = Object.freeze(['node-bt', 'node22']);

/** A code transform as stored: `options` is absent on those stored before runtimes were recorded. */
export interface CodeTransformOptions {
  options?: { runtime?: { image?: TransformRuntime } };
}

/** The HTTP message a transform sees. */
export interface TransformMessage {
  body: unknown;
  headers: Record<string, string>;
  method: string;
  path: string;
  query: Record<string, string>;
  /** Response transforms only. */
  status?: number;
}

/** The runtime of a stored transform: undefined for one stored before runtimes were recorded. */
export function runtimeOf(transform: CodeTransformOptions): TransformRuntime | 'legacy' {
  if (transform.options === undefined) return 'legacy';
  return transform.options.runtime?.image ?? 'node-bt';
}

/**
 * The argument of the code's function, without `bt` and `configuration` (the sandbox and the caller
 * add them). For node22 the logger is made inside the sandbox (loggerShim), so only data crosses.
 */
export function transformArgument(runtime: TransformRuntime | 'legacy', message: TransformMessage): Record<string, unknown> {
  const { body, ...rest } = message;
  switch (runtime) {
    case 'legacy':
      return { args: body, ...rest };
    case 'node-bt':
      return { args: { body, ...rest } };
    case 'node22':
      // applicationOptions configure a Basis Theory client inside BT's runtime; the vault's sandbox
      // runs no npm packages, so there is none to configure: an empty object (docs/proxies.md).
      return { args: null, req: { body, ...rest }, applicationOptions: {} };
  }
}

/**
 * Appended to a node22 transform's code: gives `event.logger` (info, warn, error, debug: console
 * output, whose size alone is logged, as any transform's) before the exported function runs.
 */
export const NODE22_LOGGER_SHIM = `
;(function () {
  var exported = module.exports;
  if (typeof exported !== 'function') return;
  module.exports = function (event) {
    var log = function (level) { return function () { var parts = [level]; for (var i = 0; i < arguments.length; i++) parts.push(arguments[i]); console.log.apply(console, parts); }; };
    if (event && typeof event === 'object') event.logger = { info: log('info'), warn: log('warn'), error: log('error'), debug: log('debug') };
    return exported(event);
  };
})();
`;
