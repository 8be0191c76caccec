import * as v from 'valibot';
import type { Clock } from '../common/clock.js';
import type { KeyProvider } from '../crypto/key-provider.js';
import { ValidationError } from '../errors/errors.js';
import type { Logger as PinoLogger } from 'pino';
import { isLoggerLike, type Logger } from '../common/logger.js';
import { type ProxyOptions, ProxyOptionsSchema } from '../proxy/proxy-options.js';
import { CONSOLE_OUTPUT_MODES, type ConsoleOutputMode } from '../reactors/console-output.js';
import type { AsyncRunEnded } from '../reactors/async-runs.js';
import { resolveLimits } from '../sandbox/limits.js';
import { DEFAULT_SANDBOX_LIMITS, type Sandbox, type SandboxLimits } from '../sandbox/sandbox.js';
import { resolveWorkerFile } from '../sandbox/worker-file.js';
import { resolveWorkerOptions, type SandboxWorkerOptions } from '../sandbox/pool/worker-options.js';
import type { RunTimes } from '../sandbox/pool/worker-pool.js';
import type { Store } from '../storage/store.js';
import { validationFromIssues } from '../validation/issues.js';

export type { ProxyOptions } from '../proxy/proxy-options.js';

export interface VaultOptions {
  /** Where everything is kept: `createSqliteStore(...)` from `tokenvault/sqlite`, or another Store. */
  store: Store;
  /** 32 bytes, or their base64, used by the default LocalKeyProvider to wrap tenant keys. */
  masterKey?: Uint8Array | string;
  /**
   * A custom key wrapper; replaces masterKey. `createPkcs11KeyProvider` (an HSM over PKCS#11) and
   * `SealableKeyProvider` (split knowledge) come from `tokenvault` (docs/key-custody.md).
   * vault.close() closes it.
   */
  keyProvider?: KeyProvider;
  /** Default: the system clock. Tests inject a ManualClock. */
  clock?: Clock;
  /**
   * Where the vault logs (docs/logging.md): a Logger (`message, fields`) or a pino logger. Default:
   * warnings and errors as JSON lines on stderr (`stderrLogger`). Never receives token data or keys.
   */
  logger?: Logger | PinoLogger;
  /**
   * How often the background sweep removes expired tokens, lapsed cvcs and expired records (ms,
   * default 5 minutes, at most 10). It is a recurring job of the job queue (one instance sweeps at
   * a time on a shared database). 0: this vault does not schedule it (call `vault.sweep()` yourself).
   */
  sweepIntervalMs?: number;
  /** Read audit entries are batched; how long one may wait (ms, default 50). */
  auditFlushMs?: number;
  /**
   * How long audit entries are kept (ms; default: forever). The sweep removes older ones behind a
   * checkpoint entry that keeps the chain verifiable (docs/audit.md). At least a day.
   */
  auditRetentionMs?: number;
  /**
   * How long a resolved API key is remembered (ms, default 1000; 0 disables). Changes through this
   * vault take effect at once; changes by another process sharing the database within this time
   * (an application key deleted there, or an authorizer's grants reduced there, keep working here
   * for at most this long). A session key is never remembered past its expiry.
   */
  authCacheMs?: number;
  /**
   * How long this vault writes with a tenant's data key before checking the store for a newer one
   * that another process sharing the database made (`keys rotate`), in ms (default 60000, at most
   * 600000). Reads of data under a newer key load it at once, whatever this is.
   */
  keyRefreshMs?: number;
  /** Reactor runtime options. */
  reactors?: ReactorOptions;
  /** Expression limits (docs/tokens.md, Expressions). */
  expressions?: ExpressionOptions;
  /** Webhook options (docs/webhooks.md). */
  webhooks?: WebhookOptions;
  /** The background job worker (docs/operations.md, Background work). */
  jobs?: JobOptions;
  /** The ephemeral proxy (docs/proxies.md). Its destinations follow `reactors.egress.allowPrivateNetwork`. */
  proxy?: ProxyOptions;
  /** Token intents (docs/token-intents.md). */
  tokenIntents?: TokenIntentOptions;
}

/** Options of token intents (docs/token-intents.md). */
export interface TokenIntentOptions {
  /**
   * How long an intent lives, in ms (default 86400000: one day; 60000 to 2592000000, 30 days). An
   * intent holding a card's cvc lives at most one hour, the cvc's lifetime.
   */
  expiresInMs?: number;
}

/** Options of event webhooks and callbacks. Their URLs follow `reactors.egress.allowPrivateNetwork`. */
export interface WebhookOptions {
  /**
   * How long a tenant's webhook subscriptions are remembered (ms, default 1000; 0 disables). Changes
   * through this vault take effect at once; changes through another instance sharing the database
   * within this time.
   */
  subscriptionCacheMs?: number;
}

/** Options of the background job worker. */
export interface JobOptions {
  /** Start the worker with the vault (default true). False: call `vault.worker.start()` or `vault.worker.runDue()` yourself. */
  start?: boolean;
  /** Jobs this instance runs at once (default 8). */
  concurrency?: number;
  /** How often the worker looks for due jobs enqueued elsewhere (ms, default 1000); jobs enqueued by this vault start at once. */
  pollIntervalMs?: number;
  /** How long closing waits for running jobs before it releases them to other workers (ms, default 10000). */
  shutdownGraceMs?: number;
}

/** Options of the expression engine. */
export interface ExpressionOptions {
  /** Rendering time one service call (a create, a tokenize call, a list page) may use, in ms (default 250). */
  requestBudgetMs?: number;
  /** Monotonic time source of that budget, in ms (default performance.now). Tests inject one that moves when read. */
  now?: () => number;
}

/** Options of the reactor runtime. */
export interface ReactorOptions {
  /**
   * Where reactor code may `fetch`. Deny-by-default: only hosts in `allowHosts` (exact names, or
   * `*.example.com` for subdomains), and never loopback, private, link-local or metadata addresses
   * unless `allowPrivateNetwork` is true.
   */
  egress?: { allowHosts?: string[]; allowPrivateNetwork?: boolean };
  /** Per-run sandbox limits (memory, wall time, stack, result and log sizes); defaults in DEFAULT_SANDBOX_LIMITS. */
  limits?: Partial<SandboxLimits>;
  /**
   * The worker threads reactor code runs in (default sandbox only): `size` (default max(2, cores)),
   * `maxQueued` runs waiting for a worker before new runs get 503 (default 256), and
   * `recycleAboveBytes`, the WebAssembly memory past which a worker is replaced after its runs
   * (default 32 MiB). Shares, so that one application's flood leaves room to the others:
   * `maxRunningPerApplication` (default ceil(size / 2)) and `maxRunningPerTenant` (default
   * ceil(3 × size / 4)) workers at once, `maxQueuedPerApplication` (default maxQueued / 4) and
   * `maxQueuedPerTenant` (default maxQueued / 2) runs waiting; `runsPerWorker` (default 4), the
   * runs of one owner a worker interleaves while they await the host (docs/reactors.md).
   */
  workers?: Partial<SandboxWorkerOptions>;
  /**
   * A sandbox to run reactor code in (e.g. `createQuickJsSandbox()` from `tokenvault/sandbox`, shared
   * by several vaults); default a QuickJS sandbox created on first use. The vault does not close a given one.
   */
  sandbox?: Sandbox;
  /**
   * The default sandbox's worker thread code: a path (from the working directory) or file: URL of
   * tokenvault's `sandbox-worker.js`; default the one beside tokenvault's code. Checked when the
   * vault is created. Set it when tokenvault is bundled into an application (docs/bundling.md).
   */
  workerFile?: string | URL;
  /**
   * What becomes of reactor `console` output, which may hold the detokenized data the code was
   * given. `'summary'` (default): discarded; the logger gets only its line count, byte size and
   * whether it was cut. `'redacted'`: the logger also gets the lines, with every value the run was
   * handed from a token (detokenized args' token data, and what `req.bt` returned) replaced by
   * `[REDACTED]`; best effort, since a value the code transformed is not recognized.
   */
  consoleOutput?: ConsoleOutputMode;
  /**
   * Told once when an asynchronous run ends, with its status (200, or its problem's status): pass
   * `createMetrics().observeAsyncRun` so those runs count in `tokenvault_reactor_runs_total`
   * (docs/operations.md, CLI). Called on the job worker; what it throws is logged, never fails the run.
   */
  onAsyncRun?: (event: AsyncRunEnded) => void;
  /**
   * Told of each run of the default sandbox as it ends: how long it waited for a worker and how
   * long it then ran. Pass `createMetrics().observeReactorRunTimes` for
   * `tokenvault_reactor_queue_wait_seconds` and `tokenvault_reactor_run_seconds` (docs/reactors.md).
   */
  onRunTimes?: (times: RunTimes) => void;
}

const OptionsSchema = v.object({
  store: v.custom<Store>((s) => typeof s === 'object' && s !== null && typeof (s as Store).createToken === 'function', 'must be a Store (e.g. createSqliteStore())'),
  masterKey: v.optional(v.union([v.string(), v.instance(Uint8Array)])),
  keyProvider: v.optional(v.custom<KeyProvider>((p) => typeof p === 'object' && p !== null && typeof (p as KeyProvider).wrap === 'function', 'must implement wrap and unwrap')),
  clock: v.optional(v.custom<Clock>((c) => typeof c === 'object' && c !== null && typeof (c as Clock).now === 'function', 'must have now()')),
  logger: v.optional(v.custom<Logger>(isLoggerLike, 'must have info, warn and error (a Logger or a pino logger)')),
  sweepIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10 * 60 * 1000, 'must be at most 10 minutes (expired tokens must go within the hour)'))),
  auditFlushMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60_000))),
  auditRetentionMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(24 * 60 * 60 * 1000, 'must be at least a day (86400000)'))),
  authCacheMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(60_000))),
  webhooks: v.optional(v.strictObject({ subscriptionCacheMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(60_000))) })),
  keyRefreshMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(600_000))),
  tokenIntents: v.optional(v.strictObject({ expiresInMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(60_000), v.maxValue(30 * 24 * 60 * 60 * 1000))) })),
  expressions: v.optional(
    v.strictObject({
      requestBudgetMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60_000))),
      now: v.optional(v.custom<() => number>((f) => typeof f === 'function', 'must be a function returning milliseconds')),
    }),
  ),
  reactors: v.optional(
    v.strictObject({
      egress: v.optional(
        v.strictObject({
          allowHosts: v.optional(v.array(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(253, 'must be a host name')))),
          allowPrivateNetwork: v.optional(v.boolean()),
        }),
      ),
      // Ranges are checked by the sandbox (resolveLimits), which owns them.
      limits: v.optional(v.record(v.string(), v.number())),
      workers: v.optional(v.record(v.string(), v.number())),
      sandbox: v.optional(
        v.custom<Sandbox>(
          (s) => typeof s === 'object' && s !== null && typeof (s as Sandbox).run === 'function' && typeof (s as Sandbox).check === 'function',
          'must implement check and run',
        ),
      ),
      workerFile: v.optional(v.union([v.pipe(v.string(), v.minLength(1, 'must not be empty')), v.instance(URL)], 'must be a path or a file: URL')),
      onAsyncRun: v.optional(v.custom<(event: AsyncRunEnded) => void>((f) => typeof f === 'function', 'must be a function')),
      onRunTimes: v.optional(v.custom<(times: RunTimes) => void>((f) => typeof f === 'function', 'must be a function')),
      consoleOutput: v.optional(v.picklist(CONSOLE_OUTPUT_MODES, `must be one of ${CONSOLE_OUTPUT_MODES.map((m) => `'${m}'`).join(', ')}`)),
    }),
  ),
  proxy: v.optional(ProxyOptionsSchema),
  jobs: v.optional(
    v.strictObject({
      start: v.optional(v.boolean()),
      concurrency: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(256))),
      pollIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(60_000))),
      shutdownGraceMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(300_000))),
    }),
  ),
});

/** Checks a vault's options once, at construction: a bad one is a ValidationError naming it (`options.<path>`). */
export function checkVaultOptions(options: VaultOptions): void {
  const parsed = v.safeParse(OptionsSchema, options);
  if (!parsed.success) throw validationFromIssues(parsed.issues, 'options');
  if (!options.keyProvider && options.masterKey === undefined) {
    throw ValidationError.field('options.masterKey', 'is required (32 bytes or their base64) unless a keyProvider is given');
  }
  if (options.reactors?.limits) checkLimits(options.reactors.limits);
  if (options.reactors?.workers) checkWorkers(options.reactors.workers);
  if (options.reactors?.sandbox !== undefined && options.reactors.workerFile !== undefined) {
    throw ValidationError.field('options.reactors.workerFile', 'applies to the default sandbox only: a given sandbox names its own (createQuickJsSandbox({ workerFile }))');
  }
}

/**
 * The default sandbox's worker file, checked at construction: a bundled application without it
 * fails here, naming the path and the option, rather than on its first reactor run.
 */
export function vaultWorkerFile(options: VaultOptions): URL | null {
  if (options.reactors?.sandbox !== undefined) return null;
  return resolveWorkerFile(options.reactors?.workerFile, 'options.reactors.workerFile');
}

/** Checks worker pool options once, at construction. */
function checkWorkers(workers: Partial<SandboxWorkerOptions>): void {
  try {
    resolveWorkerOptions(workers);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(Object.fromEntries(Object.entries(error.errors).map(([field, messages]) => [`options.reactors.${field}`, messages])));
  }
}

/** Checks sandbox limit overrides once, at construction, rather than on the first reactor run. */
function checkLimits(limits: Partial<SandboxLimits>): void {
  try {
    resolveLimits(DEFAULT_SANDBOX_LIMITS, limits);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(Object.fromEntries(Object.entries(error.errors).map(([field, messages]) => [`options.reactors.${field}`, messages])));
  }
}
