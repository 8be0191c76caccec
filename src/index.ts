/**
 * tokenvault: an embeddable tokenization vault and reactor platform.
 * The explicit public surface: everything a user may import from 'tokenvault'. Services are
 * exported as types (a vault makes them); minting a Caller for any tenant is in `tokenvault/testing`,
 * HTTP statuses of errors in `tokenvault/http`, the operator tools (key rotation, administrator
 * recovery) in `tokenvault/operator`.
 */
export { createVault } from './vault.js';
export type { Vault, VaultOptions, ReactorOptions, ExpressionOptions, TokenIntentOptions } from './vault.js';
export type { Caller, SessionIdentity } from './auth/caller.js';
export { systemClock, ManualClock } from './common/clock.js';
export type { Clock } from './common/clock.js';
export { consoleLogger, pinoVaultLogger, silentLogger, stderrLogger } from './common/logger.js';
export type { Logger } from './common/logger.js';
export { LocalKeyProvider, generateMasterKey } from './crypto/key-provider.js';
export type { KeyProvider } from './crypto/key-provider.js';
export { createPkcs11KeyProvider } from './crypto/pkcs11-key-provider.js';
export type { Pkcs11KeyProvider, Pkcs11KeyProviderOptions } from './crypto/pkcs11-key-provider.js';
export { SealableKeyProvider } from './crypto/sealable-key-provider.js';
export type { SealStatus } from './crypto/sealable-key-provider.js';
export { splitMasterKey } from './crypto/key-shares.js';
export type { KeyShareSet } from './crypto/key-shares.js';
export {
  VaultError,
  ValidationError,
  AuthenticationError,
  AuthorizationError,
  NotFoundError,
  ConflictError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  UnprocessableError,
  InternalError,
  ReactorError,
  ServiceUnavailableError,
  KeyProviderUnavailableError,
  SealedError,
  BadGatewayError,
  GatewayTimeoutError,
} from './errors/errors.js';
export type { ErrorCode, FieldErrors } from './errors/errors.js';
export { PERMISSIONS, PERMISSIONS_BY_TYPE, APPLICATION_TYPES, TRANSFORMS } from './permissions/permissions.js';
export type { Permission, ApplicationType, Transform, AccessRule } from './permissions/permissions.js';
export type { TokenService } from './tokens/token-service.js';
export type { ListTokensQuery, SearchTokensQuery } from './tokens/token-service.js';
export type { TokenView } from './tokens/token-view.js';
export type { CreateTokenInput, UpdateTokenInput } from './tokens/token-input.js';
export type { ApplicationService } from './applications/application-service.js';
export type { ApplicationView } from './applications/application-service.js';
export type { CreateApplicationRequest, UpdateApplicationRequest } from './applications/application-input.js';
export { MAX_KEYS_PER_APPLICATION } from './applications/application-key-service.js';
export type { ApplicationKeyService } from './applications/application-key-service.js';
export type { ApplicationKeyView } from './applications/application-key-service.js';
export { SESSION_TTL_MS } from './sessions/session-service.js';
export type { SessionService } from './sessions/session-service.js';
export type { AuthorizeSessionRequest } from './sessions/session-input.js';
export type { SessionView } from './sessions/session-service.js';
export type { DetokenizeService, DetokenizeSource } from './tokens/detokenize-service.js';
export type { TokenIntentService } from './token-intents/token-intent-service.js';
export { DEFAULT_TOKEN_INTENT_LIFETIME_MS } from './token-intents/token-intent-service.js';
export type { TokenIntentView } from './token-intents/token-intent-view.js';
export type { CreateTokenIntentInput, ConvertTokenIntentInput } from './token-intents/token-intent-input.js';
export type { CardDetails, BankDetails } from './token-intents/card-details.js';
export type { PermissionService } from './permissions/permission-service.js';
export type { PermissionView } from './permissions/permission-service.js';
export type { TenantService } from './tenants/tenant-service.js';
export type { TenantView } from './tenants/tenant-service.js';
export type { FormulaService } from './reactors/formula-service.js';
export { MAX_REACTOR_NESTING } from './reactors/reactor-service.js';
export type { ReactorService } from './reactors/reactor-service.js';
export type { ListReactorsQuery, ReactorResponse } from './reactors/reactor-service.js';
export type { FormulaView, ReactorView } from './reactors/reactor-views.js';
export type { CreateReactorRequest, UpdateReactorRequest, PatchReactorRequest, ReactRequest } from './reactors/reactor-input.js';
export type { FormulaRequest } from './reactors/formula-input.js';
export type { ConsoleOutputMode } from './reactors/console-output.js';
export { MAX_DETOKENIZED_TOKENS } from './tokens/detokenize.js';
export { DEFAULT_SANDBOX_LIMITS, MAX_CODE_BYTES } from './sandbox/sandbox.js';
export type {
  Sandbox,
  SandboxLimits,
  SandboxHost,
  SandboxRunInput,
  SandboxRunOutput,
  RunOwner,
  HostApiTree,
  HostFetch,
  HostFetchRequest,
  HostFetchResponse,
} from './sandbox/sandbox.js';
export type { SandboxWorkerOptions } from './sandbox/pool/worker-options.js';
export { IDEMPOTENCY_TTL_MS } from './idempotency/idempotency-service.js';
export type { IdempotencyService, IdempotentRequest, IdempotentResult } from './idempotency/idempotency-service.js';
export type { Paginated, Pagination, PageQuery } from './common/pagination.js';
export type { SweepResult, SweepStats } from './jobs/sweeper.js';
export type { WebhookRequest } from './webhooks/webhook-input.js';
