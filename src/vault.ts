import { randomUUID } from 'node:crypto';
import * as v from 'valibot';
import { AuditLog } from './audit.js';
import { AuditService } from './audit-service.js';
import { MIN_KEY_LENGTH } from './applications/api-keys.js';
import { ApplicationKeyService } from './applications/application-key-service.js';
import { ApplicationService, type ApplicationView } from './applications/application-service.js';
import { AuthCache } from './applications/auth-cache.js';
import { SessionService } from './sessions/session-service.js';
import { type Clock, systemClock } from './clock.js';
import { type KeyProvider, LocalKeyProvider } from './crypto/key-provider.js';
import { DEFAULT_KEY_REFRESH_MS, KeyRing } from './crypto/key-ring.js';
import { NotFoundError, ValidationError, requireCreated } from './errors.js';
import type { Permission } from './permissions.js';
import { refuseNul } from './validation/no-nul.js';
import { ExpressionEngine } from './expressions/engine.js';
import { IdempotencyService } from './idempotency/idempotency-service.js';
import { JobQueue } from './jobs/job-queue.js';
import { type SweepResult, sweep } from './jobs/sweeper.js';
import { type Logger, silentLogger } from './logger.js';
import { validationFromIssues } from './validation/issues.js';
import { PERMISSIONS_BY_TYPE } from './permissions.js';
import { formatIso } from './time.js';
import { CONSOLE_OUTPUT_MODES, type ConsoleOutputMode } from './reactors/console-output.js';
import { FormulaService } from './reactors/formula-service.js';
import { ReactorService } from './reactors/reactor-service.js';
import { createEgressFetch } from './sandbox/egress-fetch.js';
import { resolveLimits } from './sandbox/limits.js';
import { resolveWorkerOptions, type SandboxWorkerOptions } from './sandbox/worker-options.js';
import { DEFAULT_SANDBOX_LIMITS, type Sandbox, type SandboxLimits } from './sandbox/sandbox.js';
import type { Store, TenantRecord } from './storage/store.js';
import { TokenService } from './tokens/token-service.js';
import { DetokenizeService } from './tokens/detokenize-service.js';
import { PermissionService } from './permission-service.js';
import { TenantService } from './tenant-service.js';
import { Deliveries, DELIVER_JOB, purgeDeliveries } from './webhooks/deliveries.js';
import { reactorCallbacks } from './webhooks/reactor-callbacks.js';
import { SigningSecrets } from './webhooks/signing-secrets.js';
import { WebhookEvents } from './webhooks/webhook-events-emitter.js';
import { WebhookService } from './webhooks/webhook-service.js';

export interface VaultOptions {
  /** Where everything is kept: `createSqliteStore(...)` from `tokenvault/sqlite`, or another Store. */
  store: Store;
  /** 32 bytes, or their base64, used by the default LocalKeyProvider to wrap tenant keys. */
  masterKey?: Uint8Array | string;
  /** A custom key wrapper (e.g. a KMS); replaces masterKey. */
  keyProvider?: KeyProvider;
  /** Default: the system clock. Tests inject a ManualClock. */
  clock?: Clock;
  /** Default: silent. Never receives token data or keys. */
  logger?: Logger;
  /**
   * How often the background sweep removes expired tokens, lapsed cvcs and expired records (ms,
   * default 5 minutes, at most 10). It is a recurring job of the job queue (one instance sweeps at
   * a time on a shared database). 0: this vault does not schedule it (call `vault.sweep()` yourself).
   */
  sweepIntervalMs?: number;
  /** Read audit entries are batched; how long one may wait (ms, default 50). */
  auditFlushMs?: number;
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
  /** Expression limits (README, Expressions). */
  expressions?: ExpressionOptions;
  /** Webhook options (README, Webhooks). */
  webhooks?: WebhookOptions;
  /** The background job worker (README, Background work). */
  jobs?: JobOptions;
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

/** The background job worker of a vault. */
export interface VaultWorker {
  /** Starts polling for due jobs (createVault does unless `jobs.start` is false). */
  start(): void;
  /** Stops polling; running jobs finish within the grace time or are released to other workers. */
  stop(): Promise<void>;
  /** Runs every job due now (and what they enqueue, when due) and waits for them; returns how many ran. For tests and scripts. */
  runDue(): Promise<number>;
  /** How many jobs are due now and not taken by a worker (the queue depth, for metrics). */
  depth(): Promise<number>;
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
   * `recycleAboveBytes`, the WebAssembly memory past which a worker is replaced after its run
   * (default 32 MiB).
   */
  workers?: Partial<SandboxWorkerOptions>;
  /** A sandbox to run reactor code in; default a QuickJS sandbox created on first use. */
  sandbox?: Sandbox;
  /**
   * What becomes of reactor `console` output, which may hold the detokenized data the code was
   * given. `'summary'` (default): discarded; the logger gets only its line count, byte size and
   * whether it was cut. `'redacted'`: the logger also gets the lines, with every value the run was
   * handed from a token (detokenized args' token data, and what `req.bt` returned) replaced by
   * `[REDACTED]`; best effort, since a value the code transformed is not recognized.
   */
  consoleOutput?: ConsoleOutputMode;
}

const OptionsSchema = v.object({
  store: v.custom<Store>((s) => typeof s === 'object' && s !== null && typeof (s as Store).createToken === 'function', 'must be a Store (e.g. createSqliteStore())'),
  masterKey: v.optional(v.union([v.string(), v.instance(Uint8Array)])),
  keyProvider: v.optional(v.custom<KeyProvider>((p) => typeof p === 'object' && p !== null && typeof (p as KeyProvider).wrap === 'function', 'must implement wrap and unwrap')),
  clock: v.optional(v.custom<Clock>((c) => typeof c === 'object' && c !== null && typeof (c as Clock).now === 'function', 'must have now()')),
  logger: v.optional(v.custom<Logger>((l) => typeof l === 'object' && l !== null && typeof (l as Logger).info === 'function', 'must have info, warn and error')),
  sweepIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10 * 60 * 1000, 'must be at most 10 minutes (expired tokens must go within the hour)'))),
  auditFlushMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60_000))),
  authCacheMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(60_000))),
  webhooks: v.optional(v.strictObject({ subscriptionCacheMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(60_000))) })),
  keyRefreshMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(600_000))),
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
      sandbox: v.optional(v.custom<Sandbox>((s) => typeof s === 'object' && s !== null && typeof (s as Sandbox).run === 'function' && typeof (s as Sandbox).check === 'function', 'must implement check and run')),
      consoleOutput: v.optional(v.picklist(CONSOLE_OUTPUT_MODES, `must be one of ${CONSOLE_OUTPUT_MODES.map((m) => `'${m}'`).join(', ')}`)),
    }),
  ),
  jobs: v.optional(
    v.strictObject({
      start: v.optional(v.boolean()),
      concurrency: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(256))),
      pollIntervalMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(60_000))),
      shutdownGraceMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(300_000))),
    }),
  ),
});

const DEFAULT_SWEEP_MS = 5 * 60 * 1000;

export interface ReencryptProgress {
  tenantId: string;
  done: number;
  total: number;
}

/** Key management: rotation and re-encryption to the newest key. */
export interface VaultKeys {
  /** Makes a new data key for the tenant; new writes use it and older data stays readable. Returns its version. */
  rotate(tenantId: string): Promise<number>;
  /**
   * Encrypts a record that is not a token (e.g. stored idempotent results) with the
   * tenant's newest data key, bound to `context`; openRecord decrypts it with the same context.
   */
  sealRecord(tenantId: string, context: readonly string[], plaintext: Buffer): Promise<Buffer>;
  openRecord(tenantId: string, context: readonly string[], ciphertext: Uint8Array): Promise<Buffer>;
  /**
   * Whether the master key (or key provider) unwraps every stored key of the tenant. Reads only:
   * checks never create keys.
   */
  verify(tenantId: string): Promise<boolean>;
  /** Re-encrypts the tenant's tokens under its newest data key, reporting progress after each batch. */
  reencrypt(tenantId: string, options?: { batchSize?: number; onProgress?: (progress: ReencryptProgress) => void }): Promise<number>;
}

export interface Vault {
  readonly tokens: TokenService;
  /** Reactor formulas: code plus configuration and request-parameter declarations. */
  readonly formulas: FormulaService;
  /** Reactors: configured formulas, and their invocation. */
  readonly reactors: ReactorService;
  readonly applications: ApplicationService;
  /** The API keys of applications (several per application). */
  readonly applicationKeys: ApplicationKeyService;
  /** Sessions: short-lived keys a public application creates and a private one authorizes. */
  readonly sessions: SessionService;
  /** Detokenization of any JSON (`POST /detokenize`, token:use). */
  readonly detokenize: DetokenizeService;
  /** The permission catalog (`GET /permissions`). */
  readonly permissions: PermissionService;
  /** The caller's own tenant (`GET /tenants/self`). */
  readonly tenants: TenantService;
  /** The audit trail (log:read). */
  readonly logs: AuditService;
  /** Event webhooks, the signing secret and deliveries (webhook:*, application:read/update for the secret). */
  readonly webhooks: WebhookService;
  /** Idempotency keys: a mutating call run at most once per application and key (the HTTP layer's `<PREFIX>-IDEMPOTENCY-KEY`). */
  readonly idempotency: IdempotencyService;
  readonly keys: VaultKeys;
  /** The background job worker (async reactor runs, webhook deliveries, the sweep). */
  readonly worker: VaultWorker;
  readonly clock: Clock;
  readonly store: Store;
  /** Resolves an API key or an authorized session key to its Caller (AuthenticationError when unknown). */
  authenticate: ApplicationService['authenticate'];
  /** Creates a tenant and its first management application; returns the application with its key (shown once). */
  createTenant(input: { name: string; adminKey?: string; applicationName?: string }): Promise<{ tenant: TenantRecord; application: ApplicationView & { key: string } }>;
  /**
   * Creates a tenant as createTenant does, only when the database has none yet (what a fresh
   * service does at start); null when there is one. Instances sharing the database and starting
   * together create one tenant between them (under the store's `withLock`, when it has one).
   */
  createFirstTenant(input: { name: string; adminKey?: string; applicationName?: string }): Promise<{ tenant: TenantRecord; application: ApplicationView & { key: string } } | null>;
  listTenants(): Promise<TenantRecord[]>;
  /**
   * For an operator who lost every administrator key: creates a new management application in the
   * tenant and returns it with its key (shown once). Audited as `application:recover` by
   * `operator`. There is no HTTP route to it: whoever holds the store and master key runs it
   * (`tokenvault recover-admin`).
   */
  recoverAdministrator(tenantId: string, input?: { name?: string }): Promise<ApplicationView & { key: string }>;
  /** Resolves when the store answers a query (readiness); rejects with the store's error otherwise. */
  ready(): Promise<void>;
  /** Removes expired tokens and lapsed cvcs now (the background sweep calls this). */
  sweep(): Promise<SweepResult>;
  /**
   * Counters of the batched audit queue, for metrics: entries waiting, flushes that failed (their
   * entries kept and retried), entries dropped (queue full in a long outage).
   */
  auditStats(): { queued: number; flushFailures: number; droppedEntries: number };
  /** Stops the job worker (running jobs finish or are released), flushes the audit queue and closes the store. */
  close(): Promise<void>;
}

/** What a tenant's first (and a recovered) management application holds. */
/**
 * Opens a vault.
 * @example
 * import { createVault } from 'tokenvault';
 * import { createSqliteStore } from 'tokenvault/sqlite';
 * const vault = await createVault({ store: createSqliteStore({ filename: 'vault.db' }), masterKey: process.env.MASTER_KEY });
 */
export async function createVault(options: VaultOptions): Promise<Vault> {
  const parsed = v.safeParse(OptionsSchema, options);
  if (!parsed.success) throw validationFromIssues(parsed.issues, 'options');
  const { store } = options;
  if (!options.keyProvider && options.masterKey === undefined) {
    throw ValidationError.field('options.masterKey', 'is required (32 bytes or their base64) unless a keyProvider is given');
  }
  const provider = options.keyProvider ?? new LocalKeyProvider(options.masterKey!);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  await store.migrate();
  const keyRing = new KeyRing(store, provider, clock, { refreshMs: options.keyRefreshMs ?? DEFAULT_KEY_REFRESH_MS });
  const audit = new AuditLog(store, clock, logger, { flushMs: options.auditFlushMs ?? 50 });
  const expressions = new ExpressionEngine({ ...options.expressions });
  const reactorOptions = options.reactors ?? {};
  const allowPrivateNetwork = reactorOptions.egress?.allowPrivateNetwork === true;
  const jobOptions = options.jobs ?? {};
  const jobs = new JobQueue({
    store,
    clock,
    logger,
    concurrency: jobOptions.concurrency ?? 8,
    pollIntervalMs: jobOptions.pollIntervalMs ?? 1000,
    shutdownGraceMs: jobOptions.shutdownGraceMs ?? 10_000,
  });
  const secrets = new SigningSecrets({ store, keys: keyRing, clock });
  const deliveries = new Deliveries({ store, keys: keyRing, clock, logger, audit, secrets, queue: () => jobs, allowPrivateNetwork });
  // A delivery waits at most 10 s for its receiver; the lease leaves room for the resolver too.
  jobs.register(DELIVER_JOB, (payload) => deliveries.handle(payload), { leaseMs: 60_000 });
  const events = new WebhookEvents({ store, clock, logger, deliveries, cacheMs: options.webhooks?.subscriptionCacheMs ?? 1000 });
  const onRunFinished = reactorCallbacks({ deliveries, events, logger });
  const webhooks = new WebhookService({ store, clock, audit, secrets, deliveries, events, allowPrivateNetwork, onRunFinished });
  const tokens = new TokenService({ store, keys: keyRing, expressions, clock, audit, events });
  const authCache = new AuthCache(options.authCacheMs ?? 1000);
  const applications = new ApplicationService({ store, clock, audit, authCache, events });
  if (reactorOptions.limits) checkLimits(reactorOptions.limits);
  if (reactorOptions.workers) checkWorkers(reactorOptions.workers);
  // Created on first need: a vault that never runs reactors does not load the QuickJS module or
  // start worker threads. Only the sandbox created here is closed with the vault.
  let sandboxPromise: Promise<Sandbox> | null = reactorOptions.sandbox ? Promise.resolve(reactorOptions.sandbox) : null;
  let ownSandbox: Promise<Sandbox> | null = null;
  const sandbox = () => {
    sandboxPromise ??= ownSandbox = import('./sandbox/quickjs-sandbox.js')
      .then((m) =>
        m.createQuickJsSandbox({
          ...(reactorOptions.limits ? { limits: reactorOptions.limits } : {}),
          ...(reactorOptions.workers ? { workers: reactorOptions.workers } : {}),
        }),
      )
      .catch((error: unknown) => {
        ownSandbox = null;
        sandboxPromise = null;
        throw error;
      });
    return sandboxPromise;
  };
  const formulas = new FormulaService({ store, clock, audit, sandbox, ...(reactorOptions.limits && reactorOptions.sandbox ? { limits: reactorOptions.limits } : {}) });
  const reactors = new ReactorService({
    store,
    clock,
    audit,
    logger,
    tokens,
    expressions,
    sandbox,
    fetch: createEgressFetch({ allowHosts: reactorOptions.egress?.allowHosts ?? [], allowPrivateNetwork }),
    consoleOutput: reactorOptions.consoleOutput ?? 'summary',
    jobs,
    records: keyRing,
    allowPrivateNetwork,
    // Callback deliveries and reactor.completed / reactor.failed events.
    onRunFinished,
    // The default sandbox has the limits built in; a given one gets them on every run.
    ...(reactorOptions.limits && reactorOptions.sandbox ? { limits: reactorOptions.limits } : {}),
  });

  const runSweep = async () => {
    const result = await sweep(store, keyRing, clock, logger, async (expired) => {
      for (const token of expired) {
        await events.emit(token.tenantId, 'token.expired', { token_id: token.id, token_type: token.type, expired_at: formatIso(token.expiresAt), actor: 'system:expiry' });
      }
    });
    await purgeDeliveries(store, clock.now());
    return result;
  };
  const interval = options.sweepIntervalMs ?? DEFAULT_SWEEP_MS;
  // The sweep is one job for all instances (key 'sweep'): whichever claims it sweeps, then makes it
  // due again one interval later.
  jobs.register('sweep', async () => {
    await runSweep();
    return { status: 'reschedule', runAt: clock.now() + (interval || DEFAULT_SWEEP_MS) };
  });
  if (interval > 0) await jobs.enqueue({ kind: 'sweep', key: 'sweep', tenantId: null, payload: null, runAt: clock.now() + interval });
  if (jobOptions.start !== false) jobs.start();

  const keys: VaultKeys = {
    rotate: (tenantId) => keyRing.rotate(tenantId),
    sealRecord: (tenantId, context, plaintext) => keyRing.sealRecord(tenantId, context, plaintext),
    openRecord: (tenantId, context, ciphertext) => keyRing.openRecord(tenantId, context, ciphertext),
    verify: (tenantId) => keyRing.verify(tenantId),
    async reencrypt(tenantId, { batchSize = 500, onProgress } = {}) {
      const tenantKeys = await keyRing.keysFor(tenantId);
      const target = tenantKeys.current;
      const total = await store.countTokensBelowKeyVersion(tenantId, target);
      let done = 0;
      for (;;) {
        const batch = await store.listTokensBelowKeyVersion(tenantId, target, batchSize);
        if (batch.length === 0) break;
        for (const token of batch) {
          const plaintext = await keyRing.decrypt(tenantId, token.id, token.ciphertext);
          const next = keyRing.encrypt(await keyRing.keysFor(tenantId), tenantId, token.id, plaintext);
          // Compare-and-set: a token updated meanwhile is already under the newest key.
          await store.replaceCiphertext(tenantId, token.id, token.ciphertext, { ...next, cvcPurgeAt: token.cvcPurgeAt });
          done++;
        }
        onProgress?.({ tenantId, done: Math.min(done, total), total });
      }
      return done;
    },
  };

  const vault: Vault = Object.freeze({
    tokens,
    formulas,
    reactors,
    applications,
    applicationKeys: new ApplicationKeyService({ store, clock, audit, authCache }),
    sessions: new SessionService({ store, clock, audit }),
    detokenize: new DetokenizeService({ tokens, expressions, audit }),
    permissions: new PermissionService(),
    tenants: new TenantService({ store }),
    logs: new AuditService({ store, audit }),
    webhooks,
    idempotency: new IdempotencyService({ store, clock, logger, records: keyRing }),
    keys,
    worker: Object.freeze({ start: () => jobs.start(), stop: () => jobs.stop(), runDue: () => jobs.runDue(), depth: () => store.countDueJobs(clock.now()) }),
    clock,
    store,
    authenticate: (key: string | null | undefined) => applications.authenticate(key),
    async createTenant(input: { name: string; adminKey?: string; applicationName?: string }) {
      if (typeof input?.name !== 'string' || input.name.trim() === '' || input.name.length > 200) {
        throw ValidationError.field('name', 'must be 1 to 200 characters');
      }
      refuseNul(input, '');
      if (input.adminKey !== undefined && (typeof input.adminKey !== 'string' || input.adminKey.length < MIN_KEY_LENGTH)) {
        throw ValidationError.field('adminKey', `must be at least ${MIN_KEY_LENGTH} characters`);
      }
      const tenant: TenantRecord = { id: randomUUID(), name: input.name.trim(), createdAt: clock.now() };
      const administrator = applications.initialApplication(tenant.id, {
        name: input.applicationName ?? 'Administrator',
        type: 'management',
        permissions: [...PERMISSIONS_BY_TYPE.management],
        ...(input.adminKey === undefined ? {} : { key: input.adminKey }),
      });
      // One transaction: never a tenant without its administrator (or without keys).
      const initial = { application: administrator.record, key: administrator.keyRecord, keys: await keyRing.newTenantKeys(tenant.id) };
      requireCreated(await store.createTenant(tenant, initial), 'Tenant', tenant.id);
      return { tenant, application: administrator.view };
    },
    async createFirstTenant(input: { name: string; adminKey?: string; applicationName?: string }) {
      const firstOnly = async () => ((await store.listTenants()).length > 0 ? null : vault.createTenant(input));
      return store.withLock ? store.withLock('first-tenant', firstOnly) : firstOnly();
    },
    listTenants: async () => store.listTenants(),
    async recoverAdministrator(tenantId: string, input: { name?: string } = {}) {
      if (typeof tenantId !== 'string' || (await store.getTenant(tenantId)) === null) throw new NotFoundError('Tenant', String(tenantId));
      const { record, keyRecord, view: application } = applications.initialApplication(tenantId, {
        name: input.name ?? 'Recovered administrator',
        type: 'management',
        permissions: [...PERMISSIONS_BY_TYPE.management],
      });
      requireCreated(await store.createApplication(record, keyRecord), 'Application', record.id);
      audit.record({ tenantId, actor: 'operator', operation: 'application:recover', resourceId: application.id, outcome: 'success' });
      await audit.flush();
      return application;
    },
    async ready() {
      await store.getTenant('readiness-probe');
    },
    sweep: runSweep,
    auditStats: () => audit.stats(),
    async close() {
      await jobs.stop();
      await ownSandbox?.then((s) => s.close?.()).catch(() => undefined);
      await audit.close();
      await store.close();
    },
  });
  return vault;
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
