/**
 * The sandbox contract: what the reactor service needs from a JavaScript sandbox. The QuickJS
 * implementation lives in `quickjs-sandbox.ts` (worker threads); services depend on this interface only.
 */

/** Resource limits of one reactor run. */
export interface SandboxLimits {
  /** Heap of the QuickJS runtime. Default 64 MiB. */
  memoryBytes: number;
  /** Wall time of the run, host awaits included. Default 10 000 ms. */
  timeoutMs: number;
  /**
   * C stack budget of the QuickJS interpreter. Default 128 KiB (about 700 plain recursive calls).
   * Measured: from about 250 KiB up, some recursion shapes exhaust Node's own stack before
   * QuickJS notices, so the default stays well below that.
   */
  maxStackBytes: number;
  /** Size of the JSON text of the returned value (and of a thrown error's description). Default 1 MiB. */
  maxResultBytes: number;
  /** Captured console output; what does not fit is cut and `logsTruncated` is set. Default 64 KiB. */
  maxLogBytes: number;
}

/** The defaults applied to any limit not given. */
export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  memoryBytes: 64 * 1024 * 1024,
  timeoutMs: 10_000,
  maxStackBytes: 128 * 1024,
  maxResultBytes: 1024 * 1024,
  maxLogBytes: 64 * 1024,
});

/** Host capabilities exposed to reactor code. Every function takes and returns JSON-compatible values. */
export interface SandboxHost {
  /**
   * Exposed as `req.bt`: a tree of async host functions, e.g.
   * `{ tokens: { create(body), retrieve(id), update(id, patch), delete(id), list(query) }, tokenize(body), reactors: { react(id, body) } }`;
   * null → `req.bt` is null. Functions are called with their parent object as `this`.
   */
  bt: HostApiTree | null;
  /** Exposed as the global `fetch`. Null → `fetch` rejects. */
  fetch: HostFetch | null;
}

export type HostApiTree = { [name: string]: HostApiTree | ((...args: unknown[]) => Promise<unknown>) };

export interface HostFetchRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
}

export interface HostFetchResponse {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  body: string;
}

export type HostFetch = (request: HostFetchRequest) => Promise<HostFetchResponse>;

export interface SandboxRunInput {
  /** CommonJS-style source: `module.exports = async function (req) { ... }`. */
  code: string;
  /**
   * `req` as the code sees it (plus `bt`). A proxy transform's also holds `method`, `headers`, `path`
   * and `query` (docs/proxies.md, Transforms); every value must be JSON.
   */
  req: { args: unknown; configuration: Record<string, unknown>; [field: string]: unknown };
  host: SandboxHost;
  /** Per-run overrides of the sandbox's limits. */
  limits?: Partial<SandboxLimits>;
  /**
   * Who the run is for, so that the sandbox can share its workers fairly (optional: a sandbox may
   * ignore it; the worker sandbox serves runs without one as one anonymous owner without caps).
   */
  owner?: RunOwner;
  /**
   * Receives the captured console output once the run ends, whether it succeeded or failed (the
   * output of a failed run is what its author needs most). Not called when nothing was printed.
   */
  onLogs?: (lines: readonly string[], truncated: boolean) => void;
}

/**
 * The fairness key of a run: opaque ids the sandbox only compares. The vault passes the invoking
 * caller's tenant and application (a session's: the application that created it); the worker
 * sandbox serves owners in turn, tenants first, and caps what one owner may hold (worker-pool.ts).
 */
export interface RunOwner {
  readonly tenantId: string;
  readonly applicationId: string;
}

export interface SandboxRunOutput {
  /** The JSON value the function returned (undefined → null). */
  result: unknown;
  logs: string[];
  logsTruncated: boolean;
}

/**
 * Runs reactor code in isolation.
 * @example
 * const sandbox = await createQuickJsSandbox();
 * sandbox.check('module.exports = async (req) => ({ raw: req.args })');
 * const { result } = await sandbox.run({ code, req: { args: {}, configuration: {} }, host: { bt: null, fetch: null } });
 */
export interface Sandbox {
  /** Compiles the code without running it: throws ValidationError({ code: ['SyntaxError: ... (line N)'] }) on a syntax error. */
  check(code: string): void;
  /**
   * Runs the code's exported function with `req` and resolves with its JSON result. Every failure is a
   * ReactorError carrying the status of the reactor error class (ARCHITECTURE.md, Reference facts).
   */
  run(input: SandboxRunInput): Promise<SandboxRunOutput>;
  /** Releases what the sandbox holds (worker threads); the vault calls it on close for the sandbox it created. */
  close?(): Promise<void>;
}

/** Largest accepted reactor source, in UTF-8 bytes. */
export const MAX_CODE_BYTES = 256 * 1024;
