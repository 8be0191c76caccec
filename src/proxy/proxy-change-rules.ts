/**
 * Who may change what a pre-configured proxy does with the data that passes through it, and how a
 * merge patch's configuration is read (docs/proxies.md, Pre-configured proxies).
 */
import { type Caller, isTenantAdministrator } from '../auth/caller.js';
import { AuthorizationError } from '../errors/errors.js';
import type { ProxyRecord } from '../storage/store.js';

/**
 * The author or a tenant administrator only: whoever else holds proxy:update could otherwise send
 * the next caller's data (and, for an inbound proxy, a third party's) to a destination of its own.
 */
export function requireMayReconfigure(caller: Caller, proxy: ProxyRecord): void {
  if (isTenantAdministrator(caller) || (proxy.createdBy !== null && proxy.createdBy === caller.applicationId)) return;
  throw new AuthorizationError(
    `Changing the destination, transforms, configuration, authentication or key of proxy '${proxy.id}' is for the application that created it or a tenant administrator. Its name and application may be changed with proxy:update`,
  );
}

/** A merge patch's configuration with its null values (removals) taken out, for validation. */
export function stripNullValues(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const configuration = (body as Record<string, unknown>)['configuration'];
  if (configuration === null || typeof configuration !== 'object' || Array.isArray(configuration)) return body;
  return { ...(body as object), configuration: Object.fromEntries(Object.entries(configuration).filter(([, value]) => value !== null)) };
}
