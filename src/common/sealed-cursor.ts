import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { ValidationError } from '../errors/errors.js';

/**
 * Cursors as callers see them: the store's cursor sealed (AES-256-GCM) under a key of the
 * caller's tenant, bound to what the page was asked for.
 *
 * Why: a store's cursor is the row's position in a table every tenant writes to (a sequence shared
 * by all tenants). Shown as it is, two cursors a caller gets a minute apart tell it how many
 * tokens the whole deployment (other tenants, and applications whose containers it cannot read)
 * created meanwhile, and it could write cursors of its own. Sealed, a cursor shows nothing, and
 * one issued for another tenant, application, permission or filter is a 400, like one the vault
 * never issued (docs/authority.md, Cursors).
 */

const NONCE = 12;
const TAG = 16;
const INVALID = () => ValidationError.field('start', 'is not a valid cursor');

/**
 * The key cursors are sealed with, derived (HKDF, its own label) from a tenant secret that never
 * rotates and never leaves memory: a cursor stays valid across a data key rotation and across
 * instances sharing the store.
 */
export function cursorKey(tenantSecret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', tenantSecret, Buffer.alloc(0), 'tokenvault/page-cursor/v1', 32));
}

/** What a cursor is bound to: any change of one of these makes it invalid. */
export function cursorBinding(parts: unknown): Buffer {
  return Buffer.from(JSON.stringify(parts), 'utf8');
}

/** The store's cursor sealed for callers (base64url), or null at the last page. */
export function sealCursor(key: Buffer, binding: Buffer, storeCursor: string | null): string | null {
  if (storeCursor === null) return null;
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG });
  cipher.setAAD(binding);
  const body = Buffer.concat([cipher.update(storeCursor, 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url');
}

/** The store's cursor inside a sealed one; a ValidationError on `start` for anything else. */
export function openCursor(key: Buffer, binding: Buffer, sealed: string): string {
  const bytes = Buffer.from(sealed, 'base64url');
  // Re-encoding must give the same text: rejects padding and other spellings.
  if (bytes.length <= NONCE + TAG || bytes.toString('base64url') !== sealed) throw INVALID();
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, NONCE), { authTagLength: TAG });
    decipher.setAAD(binding);
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG));
    return Buffer.concat([decipher.update(bytes.subarray(NONCE, bytes.length - TAG)), decipher.final()]).toString('utf8');
  } catch {
    throw INVALID();
  }
}
