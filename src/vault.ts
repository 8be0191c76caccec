import { migrationProgressLines } from './storage/migration-progress.js';
import { AuditLog } from './audit/audit.js';
import { AuthenticationError, ServiceUnavailableError } from './errors/errors.js';
import type { ReactRequest } from './reactors/reactor-input.js';
import { AuditService } from './audit/audit-service.js';
import { sweepAudit } from './audit/audit-retention.js';
import type { Caller } from './auth/caller.js';
import type { CallerMaker } from './auth/caller-brand.js';
import { ApplicationKeyService } from './applications/application-key-service.js';
import { ApplicationService } from './applications/application-service.js';
import { AuthCache } from './auth/auth-cache.js';
import { Authenticator } from './auth/authenticate.js';
import { SessionService } from './sessions/session-service.js';
import { systemClock } from './common/clock.js';
import { type KeyProvider, LocalKeyProvider } from './crypto/key-provider.js';
import { DEFAULT_KEY_REFRESH_MS, KeyRing } from './crypto/key-ring.js';
import { ExpressionEngine } from './expressions/engine.js';
import { IdempotencyService } from './idempotency/idempotency-service.js';
import { JobQueue } from './jobs/job-queue.js';
import { Sweeper } from './jobs/sweeper.js';
import { registerSweepJobs } from './jobs/sweep-jobs.js';
import { closeAll } from './vault/close-all.js';
import { toLogger, unexpectedErrorFields } from './common/logger.js';
import { formatIso } from './common/time.js';
import { ProxyService, type ProxyRequest } from './proxy/proxy-service.js';
import { resolveProxyOptions } from './proxy/proxy-options.js';
import { ProxiesService } from './proxy/proxies-service.js';
import { KeyedProxyService } from './proxy/keyed-proxy-service.js';
import { FormulaService } from './reactors/formula-service.js';
import { ReactorService } from './reactors/reactor-service.js';
import { createEgressFetch } from './sandbox/egress/egress-fetch.js';
import type { Sandbox } from './sandbox/sandbox.js';
import { TenantSetup, type NewTenantInput } from './tenants/tenant-setup.js';
import { TokenService } from './tokens/token-service.js';
import { DetokenizeService } from './tokens/detokenize-service.js';
import { TokenIntentService } from './token-intents/token-intent-service.js';
import { TokenSources } from './token-intents/token-sources.js';
import { PermissionService } from './permissions/permission-service.js';
import { TenantService } from './tenants/tenant-service.js';
import { createOperatorTools, type OperatorTools } from './operator/operator-tools.js';
import { guardService, refusal } from './vault/guarded-services.js';
import { type VaultOptions, checkVaultOptions, vaultWorkerFile } from './vault/vault-options.js';
import { Deliveries, DELIVER_JOB, purgeDeliveries } from './webhooks/deliveries.js';
import { type ReactorRunFinished, reactorCallbacks } from './webhooks/reactor-callbacks.js';
import { SigningSecrets } from './webhooks/signing-secrets.js';
import { WebhookEvents } from './webhooks/webhook-events-emitter.js';
import { WebhookService } from './webhooks/webhook-service.js';
import type { Vault } from './vault/vault-interface.js';

export type { ExpressionOptions, JobOptions, ProxyOptions, ReactorOptions, TokenIntentOptions, VaultOptions, WebhookOptions } from './vault/vault-options.js';
export type { ProxyRequest, ProxyResponse } from './proxy/proxy-service.js';
export type { NewTenant, NewTenantInput } from './tenants/tenant-setup.js';
export type { Vault, VaultWorker } from './vault/vault-interface.js';

const DEFAULT_SWEEP_MS = 5 * 60 * 1000;

/**
 * Opens a vault.
 * @example
 * import { createVault } from 'tokenvault';
 * import { createSqliteStore } from 'tokenvault/sqlite';
 * const vault = await createVault({ store: createSqliteStore({ filename: 'vault.db' }), masterKey: process.env.MASTER_KEY });
 */
export async function createVault(options: VaultOptions): Promise<Vault> {
  return (await assembleVault(options)).vault;
}

/** What assembleVault answers: the vault, and what is kept off it. */
export interface AssembledVault {
  vault: Vault;
  operator: OperatorTools;
  /** What the job worker does when an async run ends (callback and events); for the test vault. */
  runFinished: (event: ReactorRunFinished) => Promise<void>;
}

/**
 * The vault and the operator tools over the same key ring and store. Not exported from the package
 * root: `openOperator` (tokenvault/operator) and the test vault are its only callers, so holding a
 * `Vault` never reaches the tools. `internal.callers`: whose Callers the services accept (default
 * the vault's own; the test vault adds tokenvault/testing's, docs/testing.md).
 */
export async function assembleVault(options: VaultOptions, internal: { callers?: readonly CallerMaker[] } = {}): Promise<AssembledVault> {
  checkVaultOptions(options);
  const workerFile = vaultWorkerFile(options);
  const { store } = options;
  const provider: KeyProvider = options.keyProvider ?? new LocalKeyProvider(options.masterKey!);
  const clock = options.clock ?? systemClock;
  const logger = toLogger(options.logger);
  await store.migrate({ onProgress: migrationProgressLines(clock, (line) => logger.info(line.message, line.fields)) });
  const keyRing = new KeyRing(store, provider, clock, { refreshMs: options.keyRefreshMs ?? DEFAULT_KEY_REFRESH_MS });
  const auditKey = async (tenantId: string) => (await keyRing.keysFor(tenantId)).auditKey;
  const audit = new AuditLog(store, clock, logger, { flushMs: options.auditFlushMs ?? 50, auditKey });
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
  const webhooks = new WebhookService({ store, clock, audit, secrets, deliveries, events, allowPrivateNetwork });
  const tokenIntents = new TokenIntentService({
    store,
    keys: keyRing,
    expressions,
    clock,
    audit,
    events,
    ...(options.tokenIntents?.expiresInMs === undefined ? {} : { expiresInMs: options.tokenIntents.expiresInMs }),
  });
  const tokens = new TokenService({ store, keys: keyRing, expressions, clock, audit, events, intents: tokenIntents });
  // `{{ <id> }}` expressions resolve tokens, then token intents (reactor args, /detokenize).
  const detokenizeSource = new TokenSources(tokens, tokenIntents);
  const authCache = new AuthCache(options.authCacheMs ?? 1000);
  const applications = new ApplicationService({ store, clock, audit, authCache, events });
  const authenticator = new Authenticator({ store, clock, authCache });
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
          ...(workerFile ? { workerFile } : {}),
          ...(reactorOptions.onRunTimes ? { onRunTimes: reactorOptions.onRunTimes } : {}),
        }),
      )
      .catch((error: unknown) => {
        ownSandbox = null;
        sandboxPromise = null;
        // The QuickJS module did not load (most often: bundled with its WebAssembly file left behind,
        // docs/bundling.md). A 503 names the cause; the operator's log has the stack.
        // A fault of the installation, not of a request: its message (a file path) is logged whole.
        const cause = error instanceof Error ? error.message : String(error);
        logger.error('the reactor sandbox could not start', { ...unexpectedErrorFields(error), error_message: cause });
        throw new ServiceUnavailableError(
          `The reactor sandbox could not start: ${cause}; when tokenvault is bundled, quickjs-emscripten and @jitl/* must stay external (docs/bundling.md)`,
          30,
          error,
        );
      });
    return sandboxPromise;
  };
  const reactorFetch = createEgressFetch({ allowHosts: reactorOptions.egress?.allowHosts ?? [], allowPrivateNetwork });
  const formulas = new FormulaService({ store, clock, audit, sandbox, ...(reactorOptions.limits && reactorOptions.sandbox ? { limits: reactorOptions.limits } : {}) });
  const reactors = new ReactorService({
    store,
    clock,
    audit,
    logger,
    tokens,
    detokenizeSource,
    expressions,
    sandbox,
    fetch: reactorFetch,
    consoleOutput: reactorOptions.consoleOutput ?? 'summary',
    jobs,
    records: keyRing,
    allowPrivateNetwork,
    // Callback deliveries and reactor.completed / reactor.failed events.
    onRunFinished,
    ...(reactorOptions.onAsyncRun ? { onAsyncRun: reactorOptions.onAsyncRun } : {}),
    // The default sandbox has the limits built in; a given one gets them on every run.
    ...(reactorOptions.limits && reactorOptions.sandbox ? { limits: reactorOptions.limits } : {}),
  });

  const proxyOptions = resolveProxyOptions(options.proxy);
  const proxy = new ProxyService({ tokens: detokenizeSource, expressions, audit, options: proxyOptions, allowPrivateNetwork });
  const proxies = new ProxiesService({ store, clock, audit, records: keyRing, rules: { allowPrivateNetwork, allowPorts: proxyOptions.allowPorts }, events });
  const keyedProxy = new KeyedProxyService({
    store,
    clock,
    records: keyRing,
    proxy,
    audit,
    // Transforms run as reactor code does: the same sandbox, egress rules and bt bridge.
    transforms: { sandbox, tokens, react: (caller, id, body) => reactors.react(caller, id, body as ReactRequest), fetch: reactorFetch, logger },
  });

  const sweeper = new Sweeper({
    store,
    keys: keyRing,
    clock,
    logger,
    async onExpired(expired) {
      for (const token of expired) {
        await events.emit(token.tenantId, 'token.expired', { token_id: token.id, token_type: token.type, expired_at: formatIso(token.expiresAt), actor: 'system:expiry' });
      }
    },
    purgeDeliveries: (now) => purgeDeliveries(store, now),
    sweepAudit: (now) => sweepAudit({ store, audit, auditKey, retentionMs: options.auditRetentionMs }, now),
  });
  const interval = options.sweepIntervalMs ?? DEFAULT_SWEEP_MS;
  // Each sweep concern is one job for all instances (keyed by its kind): whichever claims it runs
  // it, then makes it due again one interval later. Stored now, due at most one interval from now.
  registerSweepJobs(jobs, sweeper, { intervalMs: interval || DEFAULT_SWEEP_MS, schedule: interval > 0 });
  await jobs.scheduleRecurring();
  if (jobOptions.start !== false) jobs.start();

  const setup = new TenantSetup({ store, keyRing, applications, audit, clock });

  // Every service operation refuses a Caller the vault did not make (docs/security.md).
  const accepted = internal.callers ?? ['vault'];
  const guard = <T extends object>(service: T) => guardService(service, accepted);
  const vault: Vault = Object.freeze({
    tokens: guard(tokens),
    formulas: guard(formulas),
    reactors: guard(reactors),
    applications: guard(applications),
    applicationKeys: guard(new ApplicationKeyService({ store, clock, audit, authCache, events })),
    sessions: guard(new SessionService({ store, clock, audit })),
    detokenize: guard(new DetokenizeService({ tokens: detokenizeSource, expressions, audit })),
    tokenIntents: guard(tokenIntents),
    detokenizeSource: guard(detokenizeSource),
    proxy: ((caller: Caller | null, request: ProxyRequest) => {
      // Null is an unauthenticated call (a keyed proxy with require_auth false); any other Caller must be the vault's.
      const refused = caller === null ? undefined : refusal(caller, accepted);
      if (refused !== undefined) return refused;
      if (typeof request?.key === 'string') return keyedProxy.invoke(caller, request as ProxyRequest & { key: string });
      if (caller === null) return Promise.reject(new AuthenticationError('An API key is required: only a pre-configured proxy called with its key may be called without one'));
      return proxy.invoke(caller, request);
    }) as Vault['proxy'],
    proxies: guard(proxies),
    permissions: guard(new PermissionService()),
    tenants: guard(new TenantService({ store })),
    logs: guard(new AuditService({ store, audit, tenantSecret: auditKey })),
    webhooks: guard(webhooks),
    idempotency: guard(new IdempotencyService({ store, clock, logger, records: keyRing })),
    worker: Object.freeze({ start: () => jobs.start(), stop: () => jobs.stop(), runDue: () => jobs.runDue(), depth: () => store.countDueJobs(clock.now()) }),
    clock,
    logger,
    authenticate: (key: string | null | undefined, pageOrigin?: string | null, requestOrigin?: string | null) =>
      authenticator.authenticate(key, pageOrigin ?? null, requestOrigin ?? null),
    createTenant: (input: NewTenantInput) => setup.createTenant(input),
    createFirstTenant: (input: NewTenantInput) => setup.createFirstTenant(input),
    async ready() {
      await store.getTenant('readiness-probe');
      // A sealed vault or an HSM away cannot serve a token: not ready (docs/key-custody.md).
      await provider.ready?.();
    },
    sweep: () => sweeper.sweepAll(),
    auditStats: () => audit.stats(),
    sweepStats: () => sweeper.stats(),
    close: () =>
      closeAll([
        ['jobs', () => jobs.stop()],
        ['proxy', () => proxy.close()],
        // A sandbox that never started has nothing to close.
        ['sandbox', async () => (await ownSandbox?.catch(() => undefined))?.close?.()],
        ['audit', () => audit.close()],
        ['store', () => store.close()],
        // As the store: the vault closes the provider it was given (a PKCS#11 session, docs/key-custody.md).
        ['keyProvider', () => provider.close?.()],
      ]),
  });
  return { vault, operator: createOperatorTools(keyRing, store, setup, clock), runFinished: onRunFinished };
}
