import { createHmac, hkdfSync } from 'node:crypto';

/**
 * The id a log entry shows its tenant: an HMAC of the entry's seq under a key of the tenant. The seq
 * itself is a place in a sequence every tenant writes to, so two entries' seqs would tell a
 * `log:read` holder how much the whole deployment did between them (docs/authority.md, Cursors).
 * The id stays the same for the same entry on every instance and across data key rotations.
 */
export function logEntryIds(tenantSecret: Buffer): (seq: number) => string {
  const key = Buffer.from(hkdfSync('sha256', tenantSecret, Buffer.alloc(0), 'tokenvault/log-entry-id/v1', 32));
  return (seq) => createHmac('sha256', key).update(String(seq)).digest().subarray(0, 16).toString('base64url');
}
