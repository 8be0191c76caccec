import { AuthorizationError } from '../errors/errors.js';
import type { AccessRule, ApplicationType, Permission } from '../permissions/permissions.js';
import type { Caller, SessionIdentity } from './caller.js';

/**
 * Who made a Caller: the vault (`vault.authenticate`, sessions, async runs, reactor and proxy
 * clients, idempotency replays), or `tokenvault/testing` (`makeCaller`, a test vault's `caller()`),
 * which only a test vault accepts (docs/security.md, "Callers come from the vault").
 */
export type CallerMaker = 'vault' | 'test';

/**
 * The brand. A module-private WeakMap rather than an ES private field (`#brand in caller`): a
 * Caller stays a plain frozen object (what users and tests see and compare is unchanged), one table
 * says which maker made it, and it holds no Caller alive. Either way the mark is on the object's
 * identity: a copy (spread, structuredClone, Object.create, a Proxy, JSON round trip) is unbranded.
 */
const made = new WeakMap<object, CallerMaker>();

/** The fields of a Caller, before minting. */
export interface CallerFields {
  tenantId: string;
  applicationId: string;
  applicationType: ApplicationType;
  permissions: Iterable<Permission>;
  rules: readonly AccessRule[];
  session?: SessionIdentity | undefined;
  credentialsGeneration?: number | undefined;
  allowedOrigins?: readonly string[] | undefined;
}

/**
 * Mints a Caller: every part frozen (its permissions a set without add/delete/clear, its rules and
 * their permission lists frozen), so a Caller the vault handed out cannot be widened afterwards,
 * and branded with its maker. The only way a Caller is made (src/auth only).
 */
export function mintCaller<Extra extends object = object>(fields: CallerFields, maker: CallerMaker, extra?: Extra): Caller & Extra {
  const caller: Record<string, unknown> = {
    ...extra,
    tenantId: fields.tenantId,
    applicationId: fields.applicationId,
    applicationType: fields.applicationType,
    permissions: new ReadonlyPermissions(fields.permissions),
    rules: Object.freeze(fields.rules.map((r) => Object.freeze({ ...r, permissions: Object.freeze([...r.permissions]) }))),
  };
  if (fields.session !== undefined) caller.session = Object.freeze({ ...fields.session });
  if (fields.credentialsGeneration !== undefined) caller.credentialsGeneration = fields.credentialsGeneration;
  if (fields.allowedOrigins !== undefined && fields.allowedOrigins.length > 0) caller.allowedOrigins = Object.freeze([...fields.allowedOrigins]);
  Object.freeze(caller);
  made.set(caller, maker);
  return caller as unknown as Caller & Extra;
}

/**
 * A Caller made from `source` with some fields changed (narrower grants, the allowed origins of a
 * session's creator): it keeps `source`'s maker, so a test Caller never becomes a vault one.
 */
export function deriveCaller(source: Caller, changes: Partial<CallerFields>): Caller {
  // An unminted source never becomes a minted Caller, not even a test one.
  requireMintedCaller(source, ['vault', 'test']);
  return mintCaller({ ...source, ...changes }, made.get(source)!);
}

/** Which maker made `value`, or undefined when it is no minted Caller. */
export function callerMaker(value: unknown): CallerMaker | undefined {
  return typeof value === 'object' && value !== null ? made.get(value) : undefined;
}

/**
 * AuthorizationError unless `value` is a Caller one of `accepted` made. Every operation of the
 * vault's services passes here first (src/vault/guarded-services.ts), so in-process use is as safe
 * as HTTP: a hand-built or copied Caller reaches no data.
 */
export function requireMintedCaller(value: unknown, accepted: readonly CallerMaker[]): void {
  const maker = callerMaker(value);
  if (maker !== undefined && accepted.includes(maker)) return;
  if (maker === 'test') {
    throw new AuthorizationError('This Caller was made by tokenvault/testing, which only a test vault accepts: obtain a Caller from vault.authenticate(key)');
  }
  throw new AuthorizationError(
    'This Caller was not made by the vault (a hand-built or copied object): obtain a Caller from vault.authenticate(key); in tests, from a test vault (tokenvault/testing)',
  );
}

/** A Caller's permissions: a set that cannot change once made (no add, delete or clear). */
class ReadonlyPermissions extends Set<Permission> {
  constructor(items: Iterable<Permission>) {
    super();
    for (const item of items) super.add(item);
    Object.freeze(this);
  }

  override add(): this {
    throw new TypeError("A Caller's permissions cannot change");
  }

  override delete(): boolean {
    throw new TypeError("A Caller's permissions cannot change");
  }

  override clear(): void {
    throw new TypeError("A Caller's permissions cannot change");
  }
}
