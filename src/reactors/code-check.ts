import { ReactorError, ValidationError } from '../errors/errors.js';
import { MAX_CODE_BYTES, type RunOwner, type Sandbox, type SandboxLimits } from '../sandbox/sandbox.js';

/** Wall time the load probe may take (the module's top level only; its function is not called). */
export const LOAD_PROBE_TIMEOUT_MS = 1000;

/**
 * Checks reactor code when it is saved (a formula's, or a reactor's inline code), so that code that
 * cannot run is a 400 at save rather than a 500 at every invocation:
 * 1. it compiles (`sandbox.check`, on this thread, runs nothing): a syntax error names its line;
 * 2. loaded, it sets `module.exports` to a function. Only running the module's top level can tell,
 *    so that runs in the sandbox like any reactor, with no arguments, no configuration, no `req.bt`,
 *    a `fetch` that rejects, and at most {@link LOAD_PROBE_TIMEOUT_MS}: it reaches nothing the code
 *    could not reach at its first invocation. The exported function itself is not called.
 *
 * A top level that throws or runs past the probe's time is a 400 too (it would fail every run). A
 * busy sandbox (503) is not the code's fault and is passed on. `owner`: the saving caller, whose
 * share of the sandbox's workers the probe uses.
 */
export async function checkReactorCode(sandbox: Sandbox, code: string, limits?: Partial<SandboxLimits>, owner?: RunOwner): Promise<void> {
  sandbox.check(code);
  const probe = loadProbe(code);
  // Code within a few hundred bytes of the size limit leaves no room for the probe's wrapper: it is
  // only compiled (the run then reports a missing function, as before this check existed).
  if (Buffer.byteLength(probe, 'utf8') > MAX_CODE_BYTES) return;
  const timeoutMs = Math.min(LOAD_PROBE_TIMEOUT_MS, limits?.timeoutMs ?? LOAD_PROBE_TIMEOUT_MS);
  let exported: unknown;
  try {
    const run = await sandbox.run({
      code: probe,
      req: { args: null, configuration: {} },
      host: { bt: null, fetch: null },
      limits: { ...limits, timeoutMs },
      // The saving caller's share of the workers: saving code cannot bypass the fair queue.
      ...(owner ? { owner } : {}),
    });
    exported = run.result;
  } catch (error) {
    if (!(error instanceof ReactorError) || error.status === 503) throw error;
    throw ValidationError.field('code', `fails when it is loaded: ${error.message}`);
  }
  if (exported !== 'function') {
    throw ValidationError.field(
      'code',
      `must set module.exports to a function, e.g. module.exports = async function (req) { ... } (it is ${typeof exported === 'string' ? exported : 'not set'})`,
    );
  }
}

/**
 * Code whose exported function answers the type of what `code` exports, without calling it. The
 * reactor's code runs in a CommonJS wrapper of its own on the first line, so its line numbers stay
 * its own in a load error.
 */
function loadProbe(code: string): string {
  return (
    'const __tvModule = { exports: {} }; (function (module, exports) {' +
    code +
    '\n}).call(__tvModule.exports, __tvModule, __tvModule.exports);\n' +
    'const __tvType = __tvModule.exports === null ? "null" : typeof __tvModule.exports;\n' +
    'module.exports = function () { return __tvType; };'
  );
}
