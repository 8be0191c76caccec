import type { Caller } from '../auth/caller.js';
import type { RunOwner } from '../sandbox/sandbox.js';

/**
 * Whose share of the sandbox's workers a caller's runs use (worker-pool.ts): its tenant and
 * application. A session counts as the public application that created it: anyone holding that
 * public key starts sessions, and a backend authorizes one for each of its users, so one share per
 * session would let a flood spread over sessions take the pool; this way a backend's own
 * application keeps a share apart from its browsers' sessions.
 */
export function runOwner(caller: Caller): RunOwner {
  return { tenantId: caller.tenantId, applicationId: caller.session?.createdBy ?? caller.applicationId };
}
