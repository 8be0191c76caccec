/**
 * Failures of the QuickJS WebAssembly module itself, as opposed to errors of the guest code.
 *
 * Some deep nesting (a deeply nested array literal, JSON.stringify of a deeply nested value) uses
 * much more of Node's own stack per level than of the interpreter's C stack, so Node's stack can run
 * out inside the interpreter before QuickJS's stack check fires. V8 then throws a RangeError through
 * the WebAssembly frames, leaving the module's shadow stack pointer and the runtime's state behind:
 * that module is no longer trusted. An emscripten abort (WebAssembly.RuntimeError) is the same.
 */
export class SandboxCrash extends Error {
  constructor(readonly reason: 'stack' | 'abort') {
    super(reason === 'stack' ? 'host stack exhausted inside the sandbox' : 'sandbox module aborted');
    this.name = 'SandboxCrash';
  }
}

/** True for exceptions that mean the WebAssembly module itself failed, not the guest code. */
export function isModuleFailure(error: unknown): boolean {
  return error instanceof RangeError || error instanceof WebAssembly.RuntimeError;
}

export function crashOf(error: unknown): SandboxCrash {
  return new SandboxCrash(error instanceof RangeError ? 'stack' : 'abort');
}
