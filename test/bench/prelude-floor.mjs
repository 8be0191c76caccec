// The reactor row's floor (floor-table.mjs): what a run cannot avoid when every run gets a fresh
// QuickJS context with tokenvault's own prelude: a new runtime and context, the prelude installed
// (src/sandbox/engine/prepared-context.ts, bundled here from the source with esbuild), the reactor's
// code evaluated and called through the prelude's `run` on the same request, the result read, the
// context disposed. All on this thread: no worker, no pool, no message channel, no detokenizing.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { getQuickJS } from 'quickjs-emscripten';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** PreparedContext and wrapReactorSource from the source tree (built into dist/.bench, where node_modules resolves). */
async function loadPrelude() {
  const dir = join(ROOT, 'dist', '.bench');
  mkdirSync(dir, { recursive: true });
  const outfile = join(dir, 'prelude-floor.mjs');
  await build({
    stdin: {
      contents: "export { PreparedContext } from './src/sandbox/engine/prepared-context.ts'; export { wrapReactorSource } from './src/sandbox/engine/prelude.ts';",
      resolveDir: ROOT,
      loader: 'ts',
    },
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    external: ['quickjs-emscripten', '@jitl/*'],
    logLevel: 'warning',
  });
  return import(pathToFileURL(outfile).href);
}

/** A function running `code` on `req` as described above, returning a promise of the result text. */
export async function preludeFloor(code, req) {
  const { PreparedContext, wrapReactorSource } = await loadPrelude();
  const QuickJS = await getQuickJS();
  const counters = { created: 0, disposed: 0 };
  const reqJson = JSON.stringify(req);
  const source = wrapReactorSource(code);
  return async () => {
    const prepared = PreparedContext.create(QuickJS, { memoryBytes: 64 * 1024 * 1024, maxStackBytes: 1024 * 1024, counters });
    const { context: ctx, runtime } = prepared;
    try {
      const factory = ctx.unwrapResult(ctx.evalCode(source, 'reactor.js', { type: 'global' }));
      const reqHandle = ctx.newString(reqJson);
      const max = ctx.newNumber(1 << 20);
      const promise = ctx.unwrapResult(ctx.callFunction(prepared.run, ctx.undefined, factory, reqHandle, ctx.null, max));
      factory.dispose();
      reqHandle.dispose();
      max.dispose();
      const settled = ctx.resolvePromise(promise);
      promise.dispose();
      runtime.executePendingJobs();
      const result = ctx.unwrapResult(await settled);
      const text = ctx.getString(result);
      result.dispose();
      if (!text.startsWith('R')) throw new Error(`the floor's run failed: ${text}`);
      return text;
    } finally {
      prepared.dispose();
    }
  };
}
