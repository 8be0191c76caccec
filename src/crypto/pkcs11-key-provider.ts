/**
 * The key-encrypting key in an HSM over PKCS#11 (docs/key-custody.md): tenant keys are wrapped and
 * unwrapped by AES-256-GCM inside the token (C_Encrypt / C_Decrypt with the wrap context as AAD), so
 * the key itself never enters this process. The key must be sensitive and non-extractable: a key
 * the token would hand out is refused at start.
 *
 * When the token stops answering (the module closed the session, the device went away) every use
 * of a key answers 503 KeyProviderUnavailableError and readiness fails; the provider reconnects by
 * itself (a new session, login, the key found again) at most once per `retryMs`, and while it serves
 * it probes the token at most once per `probeMs` (one GCM encryption of a constant), so keys held
 * unwrapped stop being used within that time of the token going away.
 */
import { randomBytes } from 'node:crypto';
import { type Clock, systemClock } from '../common/clock.js';
import { KeyProviderUnavailableError, ValidationError } from '../errors/errors.js';
import type { KeyProvider } from './key-provider.js';

/** Options of createPkcs11KeyProvider (and of `tokenvault serve --key-provider pkcs11`). */
export interface Pkcs11KeyProviderOptions {
  /** Path of the PKCS#11 module, for example /usr/lib/softhsm/libsofthsm2.so. */
  module: string;
  /** The token, by label (preferred: slot ids may change when tokens are added) or by slot id. */
  tokenLabel?: string;
  slot?: number;
  /** CKA_LABEL of the AES key-encrypting key on the token. */
  keyLabel: string;
  /** The user PIN (from the environment: TOKENVAULT_PKCS11_PIN for the CLI). */
  pin: string;
  /** Longest time (ms) between probes of the token while it serves (default 1000; 0 probes on every use). */
  probeMs?: number;
  /** Shortest time (ms) between reconnection attempts while it does not (default 1000). */
  retryMs?: number;
  clock?: Clock;
}

const FORMAT = 2;
const IV = 12;
const TAG = 16;

type Pkcs11Module = typeof import('pkcs11js');
type Pkcs11 = InstanceType<Pkcs11Module['PKCS11']>;
type Handle = Buffer;

/** Opens the module, the token and the key (failing here, in our words, when any is wrong) and returns the provider. */
export async function createPkcs11KeyProvider(options: Pkcs11KeyProviderOptions): Promise<Pkcs11KeyProvider> {
  let binding: Pkcs11Module;
  try {
    const loaded = await import('pkcs11js');
    // A CommonJS module: its exports are the default export under ESM.
    binding = ((loaded as { default?: Pkcs11Module }).default ?? loaded) as Pkcs11Module;
  } catch {
    throw ValidationError.field('keyProvider', 'the PKCS#11 provider needs the optional dependency pkcs11js (npm install pkcs11js; it builds with node-gyp)');
  }
  const provider = new Pkcs11Wrapper(binding, options);
  provider.connect(true);
  return provider;
}

/**
 * The provider as the package declares it: its public declarations name nothing of pkcs11js, an
 * optional dependency a consumer may not have installed.
 */
export type Pkcs11KeyProvider = KeyProvider & { check(): void; ready(): Promise<void>; close(): void };

class Pkcs11Wrapper implements Pkcs11KeyProvider {
  readonly #p11: Pkcs11Module;
  readonly #lib: Pkcs11;
  readonly #options: Pkcs11KeyProviderOptions;
  readonly #clock: Clock;
  #session: Handle | null = null;
  #key: Handle | null = null;
  #checkedAt = -Infinity;
  #triedAt = -Infinity;
  #closed = false;

  constructor(binding: Pkcs11Module, options: Pkcs11KeyProviderOptions) {
    if (options.tokenLabel === undefined && options.slot === undefined) throw ValidationError.field('keyProvider.tokenLabel', 'name the token by its label (or its slot id)');
    this.#p11 = binding;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#lib = new binding.PKCS11();
    try {
      this.#lib.load(options.module);
    } catch {
      throw ValidationError.field('keyProvider.module', `cannot load the PKCS#11 module ${options.module}`);
    }
    this.#initialize();
    INITIALIZED.set(options.module, (INITIALIZED.get(options.module) ?? 0) + 1);
  }

  wrap(key: Uint8Array, context: string): Uint8Array {
    const iv = randomBytes(IV);
    const plain = Buffer.from(key);
    try {
      const body = this.#use(() => this.#crypt('encrypt', iv, Buffer.from(context, 'utf8'), plain));
      return Buffer.concat([Buffer.from([FORMAT]), iv, body]);
    } finally {
      plain.fill(0); // the copy handed to the module holds the tenant key
    }
  }

  unwrap(wrapped: Uint8Array, context: string): Uint8Array {
    const buf = Buffer.from(wrapped.buffer, wrapped.byteOffset, wrapped.byteLength);
    if (buf[0] !== FORMAT || buf.length < 1 + IV + TAG) throw new Error('Unrecognized wrapped key format (not wrapped by a PKCS#11 key)');
    try {
      return this.#use(() => this.#crypt('decrypt', buf.subarray(1, 1 + IV), Buffer.from(context, 'utf8'), buf.subarray(1 + IV)));
    } catch (error) {
      if (error instanceof KeyProviderUnavailableError) throw error;
      // The token answers (a probe just passed) and refused these bytes: another key, or damaged.
      throw new Error('Could not unwrap a tenant key: the HSM key does not match the one this database was created with');
    }
  }

  /** Throws KeyProviderUnavailableError while the token does not serve (probing it at most every probeMs). */
  check(): void {
    const now = this.#clock.now();
    if (this.#session !== null && now - this.#checkedAt < (this.#options.probeMs ?? 1000)) return;
    if (this.#session !== null && this.#probe()) {
      this.#checkedAt = now;
      return;
    }
    this.#reconnect(now);
  }

  async ready(): Promise<void> {
    this.check();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#drop();
    // The module is one per process: it is finalized when its last provider closes.
    const users = (INITIALIZED.get(this.#options.module) ?? 1) - 1;
    if (users > 0) {
      INITIALIZED.set(this.#options.module, users);
      return;
    }
    INITIALIZED.delete(this.#options.module);
    try {
      this.#lib.C_Finalize();
    } catch {
      // Finalized already, or the module gone: nothing is held any more either way.
    }
  }

  /** Opens a session, logs in and finds the key. `first`: errors in our words for the start (configuration). */
  connect(first = false): void {
    const { tokenLabel, slot, keyLabel, pin } = this.#options;
    const p11 = this.#p11;
    const slots = this.#lib.C_GetSlotList(true);
    const chosen = slots.find((s) => (tokenLabel !== undefined ? this.#lib.C_GetTokenInfo(s).label.trim() === tokenLabel : s.readUIntLE(0, Math.min(6, s.length)) === slot));
    if (chosen === undefined)
      throw startError(first, 'keyProvider.tokenLabel', `no PKCS#11 token ${tokenLabel !== undefined ? `labelled '${tokenLabel}'` : `in slot ${slot}`} is present`);
    const session = this.#lib.C_OpenSession(chosen, p11.CKF_SERIAL_SESSION | p11.CKF_RW_SESSION);
    try {
      try {
        this.#lib.C_Login(session, p11.CKU_USER, pin);
      } catch (error) {
        if (codeOf(error) !== p11.CKR_USER_ALREADY_LOGGED_IN) {
          throw startError(
            first,
            'keyProvider.pin',
            codeOf(error) === p11.CKR_PIN_INCORRECT ? 'the token refused the PIN (TOKENVAULT_PKCS11_PIN)' : `the token refused the login (${nameOf(error)})`,
          );
        }
      }
      this.#lib.C_FindObjectsInit(session, [
        { type: p11.CKA_CLASS, value: p11.CKO_SECRET_KEY },
        { type: p11.CKA_LABEL, value: keyLabel },
      ]);
      const found = this.#lib.C_FindObjects(session, 2);
      this.#lib.C_FindObjectsFinal(session);
      if (found.length !== 1)
        throw startError(
          first,
          'keyProvider.keyLabel',
          found.length === 0 ? `the token holds no secret key labelled '${keyLabel}'` : `the token holds more than one key labelled '${keyLabel}'`,
        );
      const key = found[0]!;
      const [keyType, sensitive, extractable] = this.#lib.C_GetAttributeValue(session, key, [
        { type: p11.CKA_KEY_TYPE },
        { type: p11.CKA_SENSITIVE },
        { type: p11.CKA_EXTRACTABLE },
      ]);
      if (Buffer.from(keyType!.value as Buffer).readUIntLE(0, 1) !== p11.CKK_AES) throw startError(first, 'keyProvider.keyLabel', `the key '${keyLabel}' is not an AES key`);
      // A key the token would export could be copied out of it: that is a key file with extra steps.
      if (!flag(sensitive!.value) || flag(extractable!.value)) {
        throw startError(
          first,
          'keyProvider.keyLabel',
          `the key '${keyLabel}' must be sensitive and non-extractable (CKA_SENSITIVE true, CKA_EXTRACTABLE false): generate it so (docs/key-custody.md)`,
        );
      }
      this.#session = session;
      this.#key = key;
      if (!this.#probe())
        throw startError(first, 'keyProvider.keyLabel', `the key '${keyLabel}' cannot encrypt and decrypt with AES-GCM (CKA_ENCRYPT and CKA_DECRYPT must be true)`);
      this.#checkedAt = this.#clock.now();
    } catch (error) {
      this.#session = null;
      this.#key = null;
      try {
        this.#lib.C_CloseSession(session);
      } catch {
        // The session is gone with the device already.
      }
      throw error;
    }
  }

  /** Runs a token operation; a failure of the token itself (the probe fails after it) marks it away. */
  #use<T>(run: () => T): T {
    this.check();
    try {
      return run();
    } catch (error) {
      if (this.#probe()) throw error;
      this.#drop();
      throw unavailable(error);
    }
  }

  #crypt(mode: 'encrypt' | 'decrypt', iv: Buffer, aad: Buffer, input: Buffer): Buffer {
    const p11 = this.#p11;
    const mechanism = { mechanism: p11.CKM_AES_GCM, parameter: { type: p11.CK_PARAMS_AES_GCM, iv, aad, ivBits: IV * 8, tagBits: TAG * 8 } };
    const session = this.#session!;
    if (mode === 'encrypt') {
      this.#lib.C_EncryptInit(session, mechanism, this.#key!);
      return Buffer.from(this.#lib.C_Encrypt(session, input, Buffer.alloc(input.length + TAG)));
    }
    this.#lib.C_DecryptInit(session, mechanism, this.#key!);
    // The module writes the plaintext (a tenant key) into this buffer: answered as it is, not copied,
    // so the caller's wipe reaches the only copy (KeyProvider.unwrap).
    return this.#lib.C_Decrypt(session, input, Buffer.alloc(input.length));
  }

  /** One GCM round trip of a constant under the key: the session, the login and the key all serve. */
  #probe(): boolean {
    if (this.#session === null) return false;
    try {
      const iv = randomBytes(IV);
      const aad = Buffer.from('tokenvault/probe', 'utf8');
      const sealed = this.#crypt('encrypt', iv, aad, PROBE);
      return this.#crypt('decrypt', iv, aad, sealed).equals(PROBE);
    } catch {
      return false;
    }
  }

  #reconnect(now: number): void {
    if (this.#closed) throw new KeyProviderUnavailableError('The key provider is closed');
    this.#drop();
    if (now - this.#triedAt < (this.#options.retryMs ?? 1000)) throw unavailable();
    this.#triedAt = now;
    try {
      // A module that lost its device may keep it lost until it is initialized again (SoftHSM
      // does): start it afresh. Other sessions on the module in this process reconnect the same way.
      try {
        this.#lib.C_Finalize();
      } catch {
        // Not initialized (any more): the initialization below is what matters.
      }
      this.#initialize();
      this.connect();
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** C_Initialize, tolerating a module that was initialized already (by this process, another binding). */
  #initialize(): void {
    try {
      this.#lib.C_Initialize();
    } catch (error) {
      if (codeOf(error) !== this.#p11.CKR_CRYPTOKI_ALREADY_INITIALIZED) throw unavailable(error);
    }
  }

  #drop(): void {
    const session = this.#session;
    this.#session = null;
    this.#key = null;
    if (session === null) return;
    try {
      this.#lib.C_CloseSession(session);
    } catch {
      // Closed by the module already (the usual reason to drop it).
    }
  }
}

const PROBE = Buffer.alloc(16);

/** Providers open on each module path (PKCS#11 state is per process: C_Finalize ends every session). */
const INITIALIZED = new Map<string, number>();

function flag(value: unknown): boolean {
  return Buffer.isBuffer(value) ? value[0] !== 0 : value === true;
}

function codeOf(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** The PKCS#11 return value's name (CKR_…), never more of the module's message. */
function nameOf(error: unknown): string {
  const match = /CKR_[A-Z_]+/.exec(error instanceof Error ? error.message : '');
  return match?.[0] ?? 'error';
}

function unavailable(cause?: unknown): KeyProviderUnavailableError {
  return new KeyProviderUnavailableError(`The HSM does not answer${cause === undefined ? '' : ` (${nameOf(cause)})`}; retry the request shortly`, 5, cause);
}

function startError(first: boolean, field: string, message: string): Error {
  return first ? ValidationError.field(field, message) : new KeyProviderUnavailableError(`The HSM does not serve: ${message}`, 5);
}
