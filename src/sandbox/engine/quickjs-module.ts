/**
 * Loads the QuickJS WebAssembly module the sandbox uses: the synchronous release build (no
 * asyncify, see quickjs-run.ts), on its own instance rather than the process-wide `getQuickJS()`
 * one, so a failure here is never shared with other users of quickjs-emscripten in the process.
 */
import { newQuickJSWASMModule, newVariant, RELEASE_SYNC, type QuickJSWASMModule } from 'quickjs-emscripten';

type EmscriptenOptions = NonNullable<Parameters<typeof newVariant>[1]['emscriptenModule']>;

// Emscripten prints an abort (e.g. QuickJS's leak assertion) to stderr itself; an embedded library
// must not write to its host's output, and the abort still surfaces as a WebAssembly.RuntimeError.
const QUIET_RELEASE_SYNC = newVariant(RELEASE_SYNC, {
  emscriptenModule: { print: () => undefined, printErr: () => undefined } as EmscriptenOptions,
});

export function loadQuickJsModule(): Promise<QuickJSWASMModule> {
  return newQuickJSWASMModule(QUIET_RELEASE_SYNC);
}
