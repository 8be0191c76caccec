/**
 * `tokenvault/sandbox`: the QuickJS sandbox reactor code runs in, for a vault given its sandbox
 * (`reactors.sandbox`): one sandbox shared by several vaults in a process, or a Sandbox of your own
 * that wraps it (to log or meter runs). A vault closes only the sandbox it created itself: close
 * one you made with `sandbox.close()`.
 */
export { createQuickJsSandbox } from './sandbox/quickjs-sandbox.js';
export type { QuickJsSandbox, QuickJsSandboxOptions } from './sandbox/quickjs-sandbox.js';
export { DEFAULT_SANDBOX_LIMITS, MAX_CODE_BYTES } from './sandbox/sandbox.js';
export type { Sandbox, SandboxLimits, SandboxHost, SandboxRunInput, SandboxRunOutput, RunOwner } from './sandbox/sandbox.js';
export type { SandboxWorkerOptions } from './sandbox/pool/worker-options.js';
