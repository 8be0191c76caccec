/**
 * How a command holds the master key (docs/key-custody.md): the flags of the key providers, shared by
 * `serve` and `keys rotate`, and the provider they name: the local key (environment or key file, the
 * default), an HSM over PKCS#11, or a key split into shares (the vault starts sealed).
 */
import { existsSync, readFileSync } from 'node:fs';
import * as v from 'valibot';
import type { KeyProvider } from '../crypto/key-provider.js';
import { type KeyShareSet, KeyShareSetSchema } from '../crypto/key-shares.js';
import { createPkcs11KeyProvider } from '../crypto/pkcs11-key-provider.js';
import { SealableKeyProvider } from '../crypto/sealable-key-provider.js';
import { ValidationError } from '../errors/errors.js';
import { CliError, type CliIo, UsageError, integerFlag } from './io.js';
import type { StoreTarget } from './store-target.js';

/** The flags, in the option table style of STORE_OPTIONS. */
export const KEY_CUSTODY_OPTIONS = {
  'key-provider': { type: 'string' },
  'pkcs11-module': { type: 'string' },
  'pkcs11-token-label': { type: 'string' },
  'pkcs11-slot': { type: 'string' },
  'pkcs11-key-label': { type: 'string' },
  'key-shares-file': { type: 'string' },
} as const;

export const KEY_CUSTODY_HELP = `  --key-provider <local|pkcs11>
                             Who holds the master key: local (TOKENVAULT_MASTER_KEY or the key file,
                             the default; sealed when the key was split, see below) or pkcs11 (an
                             HSM: the key-encrypting key never leaves it; docs/key-custody.md)
  --pkcs11-module <path>     The PKCS#11 module (e.g. /usr/lib/softhsm/libsofthsm2.so)
  --pkcs11-token-label <l>   The token, by label (or --pkcs11-slot <id>)
  --pkcs11-key-label <l>     The label of the AES key on the token (sensitive, non-extractable)
  --key-shares-file <path>   The record of a split key (keys split wrote it; default
                             <db>.key-shares for SQLite, required to split with PostgreSQL): the
                             vault starts sealed until the threshold of shares is given
`;

export const KEY_CUSTODY_ENV_HELP = `  TOKENVAULT_PKCS11_PIN      The user PIN of the PKCS#11 token (with --key-provider pkcs11)
`;

type CustodyValues = { [flag in keyof typeof KEY_CUSTODY_OPTIONS]?: string };

/** What the flags chose: a provider to hand the vault, or undefined for the local master key. */
export type Custody = { kind: 'local' } | { kind: 'pkcs11'; provider: KeyProvider } | { kind: 'sealed'; provider: SealableKeyProvider; record: KeyShareSet };

/** Checks the flags (usage errors before anything opens) and opens the provider they name. */
export async function keyCustody(values: CustodyValues, target: StoreTarget, io: CliIo): Promise<Custody> {
  const kind = values['key-provider'] ?? 'local';
  if (kind !== 'local' && kind !== 'pkcs11') throw new UsageError("--key-provider must be 'local' or 'pkcs11'");
  const pkcs11Flags = (['pkcs11-module', 'pkcs11-token-label', 'pkcs11-slot', 'pkcs11-key-label'] as const).filter((f) => values[f] !== undefined);
  if (kind === 'local') {
    if (pkcs11Flags.length > 0) throw new UsageError(`--${pkcs11Flags[0]} needs --key-provider pkcs11`);
    const record = shareSet(values['key-shares-file'], target);
    if (record === undefined) return { kind: 'local' };
    // A split key with the whole key still at hand is no split: refuse rather than ignore the key.
    if (io.env['TOKENVAULT_MASTER_KEY']) {
      throw new CliError(
        `the master key is split (${record.file}) but TOKENVAULT_MASTER_KEY (or --master-key-file) still holds it: remove it, and the vault opens with the custodians' shares`,
      );
    }
    if (target.kind === 'sqlite' && existsSync(`${target.db}.key`)) {
      throw new CliError(`the master key is split (${record.file}) but the key file ${target.db}.key is still there: remove it, and the vault opens with the custodians' shares`);
    }
    return { kind: 'sealed', provider: new SealableKeyProvider(record.record), record: record.record };
  }
  if (values['key-shares-file'] !== undefined) throw new UsageError('--key-shares-file applies to the local key (a PKCS#11 key is not split)');
  const module = values['pkcs11-module'];
  const keyLabel = values['pkcs11-key-label'];
  const tokenLabel = values['pkcs11-token-label'];
  if (module === undefined) throw new UsageError('--key-provider pkcs11 needs --pkcs11-module <path>');
  if (keyLabel === undefined) throw new UsageError('--key-provider pkcs11 needs --pkcs11-key-label <label>');
  if ((tokenLabel === undefined) === (values['pkcs11-slot'] === undefined)) throw new UsageError('--key-provider pkcs11 needs one of --pkcs11-token-label or --pkcs11-slot');
  const slot = values['pkcs11-slot'] === undefined ? undefined : integerFlag('pkcs11-slot', values['pkcs11-slot'], 0, 2 ** 32 - 1);
  const pin = io.env['TOKENVAULT_PKCS11_PIN'];
  if (pin === undefined || pin === '') throw new CliError('TOKENVAULT_PKCS11_PIN must hold the user PIN of the token (--key-provider pkcs11)');
  if (io.env['TOKENVAULT_MASTER_KEY'] !== undefined && io.env['TOKENVAULT_MASTER_KEY'] !== '') {
    throw new CliError('TOKENVAULT_MASTER_KEY is set but --key-provider pkcs11 holds the key in the HSM: unset it (a key in the environment is what the HSM replaces)');
  }
  try {
    const provider = await createPkcs11KeyProvider({
      module,
      keyLabel,
      pin,
      ...(tokenLabel === undefined ? {} : { tokenLabel }),
      ...(slot === undefined ? {} : { slot }),
    });
    return { kind: 'pkcs11', provider };
  } catch (error) {
    if (error instanceof ValidationError) throw new CliError(`--key-provider pkcs11: ${Object.values(error.errors)[0]?.[0] ?? error.message}`);
    throw new CliError(`--key-provider pkcs11: the token could not be opened (${(error as { name?: string }).name ?? 'error'})`);
  }
}

/** The default place of a split's record: beside the SQLite database, as the key file was. */
export function defaultShareSetFile(target: StoreTarget): string | undefined {
  return target.kind === 'sqlite' && target.db !== ':memory:' ? `${target.db}.key-shares` : undefined;
}

/** The split's record, when the flag names one or the SQLite database has one beside it. */
function shareSet(flag: string | undefined, target: StoreTarget): { file: string; record: KeyShareSet } | undefined {
  const file = flag ?? defaultShareSetFile(target);
  if (file === undefined) return undefined;
  if (!existsSync(file)) {
    if (flag !== undefined) throw new CliError(`no key shares record at ${file}`);
    return undefined;
  }
  return { file, record: readShareSet(file) };
}

export function readShareSet(file: string): KeyShareSet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    throw new CliError(`${file} is not a key shares record (JSON written by tokenvault keys split)`);
  }
  const checked = v.safeParse(KeyShareSetSchema, parsed);
  if (!checked.success || checked.output.threshold > checked.output.shares) throw new CliError(`${file} is not a key shares record (JSON written by tokenvault keys split)`);
  return checked.output;
}
