/**
 * What an open vault offers its callers (createVault, src/vault.ts): the contract, kept apart from
 * the wiring that builds it so that each reads on its own; vault.ts re-exports both types.
 */
import type { ApplicationKeyService } from '../applications/application-key-service.js';
import type { ApplicationService } from '../applications/application-service.js';
import type { AuditService } from '../audit/audit-service.js';
import type { Authenticator } from '../auth/authenticate.js';
import type { Caller } from '../auth/caller.js';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { IdempotencyService } from '../idempotency/idempotency-service.js';
import type { SweepResult, SweepStats } from '../jobs/sweeper.js';
import type { PermissionService } from '../permissions/permission-service.js';
import type { ProxiesService } from '../proxy/proxies-service.js';
import type { ProxyRequest, ProxyResponse } from '../proxy/proxy-service.js';
import type { FormulaService } from '../reactors/formula-service.js';
import type { ReactorService } from '../reactors/reactor-service.js';
import type { SessionService } from '../sessions/session-service.js';
import type { NewTenant, NewTenantInput } from '../tenants/tenant-setup.js';
import type { TenantService } from '../tenants/tenant-service.js';
import type { TokenIntentService } from '../token-intents/token-intent-service.js';
import type { DetokenizeSource, DetokenizeService } from '../tokens/detokenize-service.js';
import type { TokenService } from '../tokens/token-service.js';
import type { WebhookService } from '../webhooks/webhook-service.js';

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

/**
 * An open vault: its services, each taking the Caller first and deciding authorization from it.
 * Operator tools (key rotation, listing tenants, administrator recovery) take no Caller and are not
 * here: they come with the vault from `openOperator` (`tokenvault/operator`).
 */
export interface Vault {
  readonly tokens: TokenService;
  /** Token intents: short-lived data until a token is made of it (docs/token-intents.md). */
  readonly tokenIntents: TokenIntentService;
  /**
   * What `{{ <id> }}` detokenization expressions resolve against, for the caller's token:use
   * transform: tokens, then token intents (reactor args and /detokenize use it; so can a proxy).
   */
  readonly detokenizeSource: DetokenizeSource;
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
  /**
   * The ephemeral proxy (`/proxy`, proxy:invoke): sends the request to its destination with its
   * `{{ token_id }}` expressions detokenized, and returns the destination's answer (docs/proxies.md).
   */
  proxy(caller: Caller, request: ProxyRequest): Promise<ProxyResponse>;
  /**
   * With `request.key`: calls that pre-configured proxy (docs/proxies.md), its transforms run;
   * `caller` null is an unauthenticated call, allowed only by a proxy with `require_auth: false`.
   */
  proxy(caller: Caller | null, request: ProxyRequest & { key: string }): Promise<ProxyResponse>;
  /** Pre-configured proxies (`/proxies`, proxy:create|read|update|delete; docs/proxies.md). */
  readonly proxies: ProxiesService;
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
  /** The background job worker (async reactor runs, webhook deliveries, the sweep). */
  readonly worker: VaultWorker;
  readonly clock: Clock;
  /** Where the vault logs (its `logger` option; default warnings and errors on stderr): a handler without its own logs here too. */
  readonly logger: Logger;
  /** Resolves an API key or an authorized session key to its Caller (AuthenticationError when unknown). */
  authenticate: Authenticator['authenticate'];
  /** Creates a tenant and its first management application; returns the application with its key (shown once). */
  createTenant(input: NewTenantInput): Promise<NewTenant>;
  /**
   * Creates a tenant as createTenant does, only when the database has none yet (what a fresh
   * service does at start); null when there is one. Instances sharing the database and starting
   * together create one tenant between them (under the store's `withLock`, when it has one).
   */
  createFirstTenant(input: NewTenantInput): Promise<NewTenant | null>;
  /** Resolves when the store answers a query (readiness); rejects with the store's error otherwise. */
  ready(): Promise<void>;
  /**
   * Runs every concern of the sweep now (the background sweep runs each as its own job): removes
   * expired tokens, lapsed cvcs, expired idempotency records, reactor results, sessions, token
   * intents and old webhook deliveries. Each concern runs even when another failed; then, if any
   * did, it rejects with an AggregateError naming them. A token whose stored data cannot be opened
   * is counted (`cvcUnreadable`), logged by id and skipped.
   */
  sweep(): Promise<SweepResult>;
  /** Counters of the sweep, for metrics: rows found unreadable, failed runs by concern (docs/operations.md). */
  sweepStats(): SweepStats;
  /**
   * Counters of the batched audit queue, for metrics: entries waiting, flushes that failed (their
   * entries kept and retried), entries dropped (queue full in a long outage).
   */
  auditStats(): { queued: number; flushFailures: number; droppedEntries: number };
  /**
   * Stops the job worker (running jobs finish or are released), flushes the audit queue and closes
   * the store: every part, even when one fails; then, if any did, rejects with an AggregateError
   * holding each part's error (its message names the parts).
   */
  close(): Promise<void>;
}
