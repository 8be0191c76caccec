/**
 * SoftHSM tokens for the PKCS#11 key provider's tests (docs/key-custody.md): each test file makes its
 * own token in a temporary directory with scripts/softhsm-token.mjs and points SOFTHSM2_CONF at it.
 * Locally a machine without SoftHSM skips these suites with the reason; in CI (CI=true, where
 * .ci/run installs softhsm2) a missing SoftHSM is a failure.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';

export const SOFTHSM_MODULE = '/usr/lib/softhsm/libsofthsm2.so';
export const SOFTHSM_PIN = '1234';

const installed = existsSync(SOFTHSM_MODULE) && spawnSync('softhsm2-util', ['--version']).status === 0;
export const SOFTHSM_SKIP_REASON = 'SoftHSM is not installed (apt-get install softhsm2; .ci/run installs it)';

export interface SoftHsmToken {
  dir: string;
  conf: string;
  module: string;
  tokenLabel: string;
  keyLabel: string;
  pin: string;
}

/** A new token with an AES key (generated, or `importHex`'s value), sensitive and non-extractable unless asked. */
export function createSoftHsmToken(options: { tokenLabel?: string; keyLabel?: string; importHex?: string; extractable?: boolean; dir?: string } = {}): SoftHsmToken {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'tokenvault-hsm-'));
  const keyLabel = options.keyLabel ?? 'tokenvault-kek';
  const args = ['scripts/softhsm-token.mjs', dir, '--key-label', keyLabel, '--pin', SOFTHSM_PIN, '--token-label', options.tokenLabel ?? 'tokenvault'];
  if (options.importHex !== undefined) args.push('--import-hex', options.importHex);
  if (options.extractable) args.push('--extractable');
  const out = execFileSync(process.execPath, args, { encoding: 'utf8' });
  const made = JSON.parse(out) as { conf: string; module: string; tokenLabel: string; keyLabel: string };
  return { dir, ...made, pin: SOFTHSM_PIN };
}

/** Removes a token's directory (after every provider on it closed). */
export function removeSoftHsmToken(token: SoftHsmToken): void {
  rmSync(token.dir, { recursive: true, force: true });
}

/** A suite that needs SoftHSM: skipped with the reason locally when it is missing, failing in CI. */
export function describeSoftHsm(name: string, body: () => void): void {
  if (installed) {
    describe(name, body);
  } else if (process.env['CI'] === 'true') {
    describe(name, () => {
      it('needs SoftHSM, which CI installs (.ci/run)', () => {
        throw new Error(SOFTHSM_SKIP_REASON);
      });
    });
  } else describe.skip(`${name} (${SOFTHSM_SKIP_REASON})`, () => undefined);
}

/** One token for the whole file, SOFTHSM2_CONF set before any module initializes. */
export function fileToken(options: Parameters<typeof createSoftHsmToken>[0] = {}): () => SoftHsmToken {
  let token: SoftHsmToken | undefined;
  afterAll(() => {
    if (token) removeSoftHsmToken(token);
  });
  return () => {
    if (token === undefined) {
      token = createSoftHsmToken(options);
      process.env['SOFTHSM2_CONF'] = token.conf;
    }
    return token;
  };
}

/** Runs `run` with the token's files taken away (the token no longer present to the module), then restores them. */
export async function withTokenAway<T>(token: SoftHsmToken, run: () => Promise<T>): Promise<T> {
  const tokens = join(token.dir, 'tokens');
  renameSync(tokens, `${tokens}-away`);
  try {
    return await run();
  } finally {
    renameSync(`${tokens}-away`, tokens);
  }
}
