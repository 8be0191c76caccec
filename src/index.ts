/**
 * tokenvault: an embeddable tokenization vault and reactor platform.
 * The explicit public surface: everything a user may import from 'tokenvault'.
 */
export { createVault } from './vault.js';
export type { Vault, VaultOptions, VaultKeys, ReencryptProgress, ReactorOptions, ExpressionOptions } from './vault.js';
export type { Caller, SessionIdentity } from './caller.js';
export { makeCaller, transformFor, coversGrants } from './caller.js';
export { systemClock, ManualClock } from './clock.js';
export type { Clock } from './clock.js';
export { consoleLogger, silentLogger } from './logger.js';
export type { Logger } from './logger.js';
export { LocalKeyProvider, generateMasterKey } from './crypto/key-provider.js';
export type { KeyProvider } from './crypto/key-provider.js';
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
  STATUS_BY_CODE,
  statusOf,
} from './errors.js';
export type { ErrorCode, FieldErrors } from './errors.js';
export { PERMISSIONS, PERMISSIONS_BY_TYPE, APPLICATION_TYPES, TRANSFORMS } from './permissions.js';
export type { Permission, ApplicationType, Transform, AccessRule } from './permissions.js';
export { TokenService } from './tokens/token-service.js';
export type { ListTokensQuery, SearchTokensQuery } from './tokens/token-service.js';
export type { TokenView } from './tokens/token-view.js';
export { ApplicationService } from './applications/application-service.js';
export type { ApplicationView } from './applications/application-service.js';
export { ApplicationKeyService, MAX_KEYS_PER_APPLICATION } from './applications/application-key-service.js';
export type { ApplicationKeyView } from './applications/application-key-service.js';
export { SessionService, SESSION_TTL_MS } from './sessions/session-service.js';
export type { SessionView } from './sessions/session-service.js';
export { intersectGrants } from './sessions/session-grants.js';
export { DetokenizeService } from './tokens/detokenize-service.js';
export { PermissionService } from './permission-service.js';
export type { PermissionView } from './permission-service.js';
export { TenantService } from './tenant-service.js';
export type { TenantView } from './tenant-service.js';
export { FormulaService } from './reactors/formula-service.js';
export { ReactorService, MAX_REACTOR_NESTING } from './reactors/reactor-service.js';
export type { ListReactorsQuery, ReactorResponse } from './reactors/reactor-service.js';
export type { FormulaView, ReactorView } from './reactors/reactor-views.js';
export type { ConsoleOutputMode } from './reactors/console-output.js';
export { MAX_DETOKENIZED_TOKENS } from './reactors/detokenize.js';
export { DEFAULT_SANDBOX_LIMITS, MAX_CODE_BYTES } from './sandbox/sandbox.js';
export type { Sandbox, SandboxLimits, SandboxHost, SandboxRunInput, SandboxRunOutput, HostApiTree, HostFetch, HostFetchRequest, HostFetchResponse } from './sandbox/sandbox.js';
export type { SandboxWorkerOptions } from './sandbox/worker-options.js';
export type { Paginated, Pagination, PageQuery } from './pagination.js';
export type { SweepResult } from './jobs/sweeper.js';
export type * from './storage/store.js';
