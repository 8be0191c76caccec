/**
 * `tokenvault/store`: the store contract and its record types, for authors of a store (and for
 * code that passes a store around). Applications use the vault's services instead; the root entry
 * exports no record types. The conformance suite a store must pass is `runStoreConformance` in
 * `tokenvault/testing`. Each method's guarantee is stated on `Store` (ARCHITECTURE.md, "Adding a
 * store method").
 * @example
 * import type { Store, StoredToken } from 'tokenvault/store';
 */
export type * from './storage/store.js';
