import { createCipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import type { Clock } from '../common/clock.js';
import { SharedLoads } from '../common/shared-loads.js';
import { KeyProviderUnavailableError, SealedError } from '../errors/errors.js';
import type { Store, WrappedKeyRecord } from '../storage/store.js';
import { FORMAT, HEADER, aad, decryptWith, decryptWithAad, nextIv, recordAad, versionOf } from './ciphertext.js';
import type { KeyProvider } from './key-provider.js';

export { versionOf };

interface TenantKeys {
  /** Data keys by version; the highest encrypts new writes. */
  data: Map<number, Buffer>;
  current: number;
  fingerprintKey: Buffer;
  searchKey: Buffer;
  /** MACs the tenant's audit chain (docs/audit.md); derived from the index key, so it travels with the master key. */
  auditKey: Buffer;
  /** When (clock time) the versions were last listed from the store. */
  checkedAt: number;
}

/** Default of `keyRefreshMs`: how stale a cached list of key versions may be before a write re-lists it. */
export const DEFAULT_KEY_REFRESH_MS = 60_000;

/**
 * Envelope encryption per tenant. Each tenant has versioned data keys (AES-256-GCM) and one index
 * key from which the HMAC keys for fingerprints and blind search indexes are derived with HKDF;
 * all are stored wrapped by the KeyProvider. The index key never rotates, because rotating it would
 * change every fingerprint and break deduplication and search.
 *
 * Unwrapped keys are cached in memory after first use: a service awaits `keysFor` (or
 * `keysCovering` for rows it read) once per call, then encrypts and decrypts synchronously with them.
 *
 * Another instance sharing the store may rotate a tenant's data key. Reads pick the new version up
 * at once: a ciphertext under a version not in the cache reloads the tenant's keys (decrypt,
 * keysCovering). Writes pick it up within `refreshMs`: keysFor re-lists the versions when its list
 * is older than that (one indexed query per tenant per period; only new versions are unwrapped).
 */
export class KeyRing {
  #store: Store;
  #provider: KeyProvider;
  #clock: Clock;
  #tenants = new Map<string, TenantKeys>();
  #loads = new SharedLoads<string, TenantKeys>();
  #refreshMs: number;
  /** Counts revocations (seals): a load that began before one must not hand out what it unwrapped. */
  #revocations = 0;

  constructor(store: Store, provider: KeyProvider, clock: Clock, options: { refreshMs?: number } = {}) {
    this.#store = store;
    this.#provider = provider;
    this.#clock = clock;
    this.#refreshMs = options.refreshMs ?? DEFAULT_KEY_REFRESH_MS;
    // A seal takes the master key away: the tenant keys it unwrapped leave memory with it.
    provider.onRevoke?.(() => this.#forgetAll());
  }

  /**
   * The tenant's keys, creating them on first use. The newest version (`current`, which encrypts
   * writes) is at most `refreshMs` old: past that the versions are listed again from the store.
   */
  async keysFor(tenantId: string): Promise<TenantKeys> {
    // Keys held unwrapped are used only while the provider serves: an HSM that went away or a seal
    // stops reads of cached tenants too, not only the next unwrap (docs/key-custody.md).
    this.#provider.check?.();
    return this.#fresh(tenantId) ?? this.#load(tenantId);
  }

  /**
   * The tenant's keys holding every one of `versions` (the key versions of tokens just read): when
   * one is missing, another instance rotated, and the keys are reloaded once. A version still
   * missing then is not in the store (a damaged row); decrypting it fails.
   */
  async keysCovering(tenantId: string, versions: Iterable<number>): Promise<TenantKeys> {
    this.#provider.check?.();
    const keys = this.#fresh(tenantId) ?? (await this.#load(tenantId));
    for (const version of versions) if (!keys.data.has(version)) return this.#load(tenantId, true);
    return keys;
  }

  /** The cached keys while their version list is younger than `refreshMs`. */
  #fresh(tenantId: string): TenantKeys | undefined {
    const keys = this.#tenants.get(tenantId);
    return keys !== undefined && this.#clock.now() - keys.checkedAt < this.#refreshMs ? keys : undefined;
  }

  /**
   * Whether the key provider can unwrap every stored key of the tenant (the master key is the one
   * they were wrapped with). Reads only: creates no key, for a tenant without keys too.
   */
  async verify(tenantId: string): Promise<boolean> {
    try {
      for (const purpose of ['data', 'index'] as const) {
        for (const record of await this.#store.listWrappedKeys(tenantId, purpose)) await this.#unwrap(record);
      }
      return true;
    } catch (error) {
      // A provider that cannot answer (an HSM away, a sealed vault) says nothing about the key.
      if (error instanceof KeyProviderUnavailableError || error instanceof SealedError) throw error;
      return false;
    }
  }

  /**
   * Wipes every unwrapped key held (a seal); later uses load them again through the provider. A load
   * under way sees the count change and wipes what it unwrapped (#read).
   */
  #forgetAll(): void {
    this.#revocations += 1;
    this.#loads.forgetAll();
    for (const keys of this.#tenants.values()) wipe(keys);
    this.#tenants.clear();
  }

  encrypt(keys: TenantKeys, tenantId: string, tokenId: string, plaintext: Buffer): { ciphertext: Buffer; keyVersion: number } {
    // Keys taken before an await may have been wiped by a seal since: never encrypt under them.
    this.#provider.check?.();
    const key = keys.data.get(keys.current)!;
    // One buffer for header, IV, tag and body: GCM output is as long as its input.
    const out = Buffer.allocUnsafe(HEADER + plaintext.length);
    out[0] = FORMAT;
    out.writeUInt32BE(keys.current, 1);
    const iv = nextIv(out.subarray(5, 17));
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(tenantId, tokenId));
    cipher.update(plaintext).copy(out, HEADER);
    cipher.final();
    cipher.getAuthTag().copy(out, 17);
    return { ciphertext: out, keyVersion: keys.current };
  }

  /** Decrypts, reloading the tenant's keys once if the version is newer than the cache (another instance rotated). */
  async decrypt(tenantId: string, tokenId: string, ciphertext: Uint8Array): Promise<Buffer> {
    return decryptWith(await this.keysCovering(tenantId, [versionOf(ciphertext)]), tenantId, tokenId, ciphertext);
  }

  /** Decrypts with keys from keysFor or keysCovering; null when they lack the ciphertext's version. */
  decryptWithKeys(keys: TenantKeys, tenantId: string, tokenId: string, ciphertext: Uint8Array): Buffer | null {
    this.#provider.check?.();
    if (!keys.data.has(versionOf(ciphertext))) return null;
    return decryptWith(keys, tenantId, tokenId, ciphertext);
  }

  /**
   * Encrypts a stored record that is not a token (an idempotent response) under the tenant's newest
   * data key. `context` names the record (for example tenant, application and idempotency key);
   * it is bound as AAD in a domain separate from tokens' (recordAad), so a sealed record cannot be
   * opened as another record, as a token, or under another tenant.
   */
  async sealRecord(tenantId: string, context: readonly string[], plaintext: Buffer): Promise<Buffer> {
    const keys = await this.keysFor(tenantId);
    const out = Buffer.allocUnsafe(HEADER + plaintext.length);
    out[0] = FORMAT;
    out.writeUInt32BE(keys.current, 1);
    const iv = nextIv(out.subarray(5, 17));
    const cipher = createCipheriv('aes-256-gcm', keys.data.get(keys.current)!, iv);
    cipher.setAAD(recordAad(tenantId, context));
    cipher.update(plaintext).copy(out, HEADER);
    cipher.final();
    cipher.getAuthTag().copy(out, 17);
    return out;
  }

  /**
   * Decrypts a record sealed by sealRecord with the same context. Old key versions stay readable
   * (rotation keeps them); throws when the context differs or the bytes were changed.
   */
  async openRecord(tenantId: string, context: readonly string[], ciphertext: Uint8Array): Promise<Buffer> {
    let keys = await this.keysFor(tenantId);
    if (!keys.data.has(versionOf(ciphertext))) keys = await this.#load(tenantId, true);
    this.#provider.check?.();
    return decryptWithAad(keys, recordAad(tenantId, context), ciphertext);
  }

  /** Keyed fingerprint of a value (base64url HMAC-SHA256): equal values of a tenant give equal fingerprints. */
  fingerprint(keys: TenantKeys, value: string): string {
    this.#provider.check?.();
    return createHmac('sha256', keys.fingerprintKey).update(value, 'utf8').digest('base64url');
  }

  /** Blind index value for search: a keyed HMAC, never the value itself. */
  blindIndex(keys: TenantKeys, value: string): string {
    this.#provider.check?.();
    return createHmac('sha256', keys.searchKey).update(value, 'utf8').digest('base64url');
  }

  /** Creates a new data key version for the tenant; new writes use it, old rows stay readable. */
  async rotate(tenantId: string): Promise<number> {
    await this.keysFor(tenantId);
    for (;;) {
      const existing = await this.#store.listWrappedKeys(tenantId, 'data');
      const version = (existing.at(-1)?.version ?? 0) + 1;
      if (await this.#insertNew(tenantId, 'data', version)) {
        await this.#load(tenantId, true);
        return version;
      }
    }
  }

  /**
   * Loads the tenant's keys, sharing a read under way. A forced load (a version is missing, or this
   * ring just rotated) starts a read of its own, and a read begun before it is not kept when it ends
   * later: its list predates the newer one, and keeping it would put writes back on an old key for
   * up to `refreshMs`.
   */
  #load(tenantId: string, force = false): Promise<TenantKeys> {
    if (force) this.#loads.forget(tenantId);
    return this.#loads.load(
      tenantId,
      () => this.#read(tenantId),
      (keys) => this.#tenants.set(tenantId, keys),
    );
  }

  async #read(tenantId: string): Promise<TenantKeys> {
    const revocations = this.#revocations;
    const checkedAt = this.#clock.now();
    const cached = this.#tenants.get(tenantId);
    let data = await this.#store.listWrappedKeys(tenantId, 'data');
    if (data.length === 0) {
      await this.#insertNew(tenantId, 'data', 1);
      data = await this.#store.listWrappedKeys(tenantId, 'data');
    }
    let index = await this.#store.listWrappedKeys(tenantId, 'index');
    if (index.length === 0) {
      await this.#insertNew(tenantId, 'index', 1);
      index = await this.#store.listWrappedKeys(tenantId, 'index');
    }
    const dataKeys = new Map<number, Buffer>();
    // A reload unwraps only versions it has not seen (a KMS unwrap may be a network call).
    for (const record of data) dataKeys.set(record.version, cached?.data.get(record.version) ?? owned(await this.#unwrap(record)));
    let keys: TenantKeys;
    if (cached !== undefined) keys = { ...cached, data: dataKeys, current: data.at(-1)!.version, checkedAt };
    else {
      const root = owned(await this.#unwrap(index[0]!));
      const derive = (info: string) => Buffer.from(hkdfSync('sha256', root, Buffer.from(tenantId, 'utf8'), info, 32));
      keys = {
        data: dataKeys,
        current: data.at(-1)!.version,
        fingerprintKey: derive('tokenvault/fingerprint/v1'),
        searchKey: derive('tokenvault/search-index/v1'),
        auditKey: derive('tokenvault/audit-mac/v1'),
        checkedAt,
      };
      // Only what is derived from the index key is kept: the key itself leaves memory at once.
      root.fill(0);
    }
    if (revocations !== this.#revocations) {
      // A seal came while this load was under way: its keys (and the cached ones it reused, which
      // the seal wiped) are not handed out. Sealed still, check() says so; unsealed again, a new load
      // (this one was forgotten by the seal, so only a new one is kept, and wiped by the next seal).
      wipe(keys);
      this.#provider.check?.();
      return this.#load(tenantId);
    }
    return keys;
  }

  /**
   * A new tenant's first keys (data key version 1 and the index key), wrapped and not stored: the
   * store writes them with the tenant, in one transaction (Store.createTenant).
   */
  async newTenantKeys(tenantId: string): Promise<WrappedKeyRecord[]> {
    const createdAt = this.#clock.now();
    const out: WrappedKeyRecord[] = [];
    for (const purpose of ['data', 'index'] as const) {
      const wrapped = await wrapFresh(this.#provider, wrapContext(tenantId, purpose, 1));
      out.push({ tenantId, purpose, version: 1, wrapped, createdAt });
    }
    return out;
  }

  /** False when a concurrent writer inserted the same version first. */
  async #insertNew(tenantId: string, purpose: 'data' | 'index', version: number): Promise<boolean> {
    const wrapped = await wrapFresh(this.#provider, wrapContext(tenantId, purpose, version));
    return this.#store.insertWrappedKey({ tenantId, purpose, version, wrapped, createdAt: this.#clock.now() });
  }

  #unwrap(record: WrappedKeyRecord): Uint8Array | Promise<Uint8Array> {
    return this.#provider.unwrap(record.wrapped, wrapContext(record.tenantId, record.purpose, record.version));
  }
}

export type { TenantKeys };

/** A new random key, wrapped; the key itself is overwritten once wrapped (it is unwrapped again when used). */
async function wrapFresh(provider: KeyProvider, context: string): Promise<Uint8Array> {
  const key = randomBytes(32);
  try {
    return await provider.wrap(key, context);
  } finally {
    key.fill(0);
  }
}

/**
 * An unwrapped key as the ring's own Buffer: a provider hands over the bytes it answers (the
 * KeyProvider contract), so they are kept as they are, not copied, and the one copy is what a seal wipes.
 */
function owned(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Overwrites every key of a tenant's set. */
function wipe(keys: TenantKeys): void {
  for (const key of keys.data.values()) key.fill(0);
  keys.fingerprintKey.fill(0);
  keys.searchKey.fill(0);
  keys.auditKey.fill(0);
}

function wrapContext(tenantId: string, purpose: string, version: number): string {
  return `tokenvault:${purpose}-key:${tenantId}:${version}`;
}
