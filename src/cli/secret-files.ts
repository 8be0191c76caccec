/**
 * Secrets named by file (`--master-key-file`, `--postgres-password-file`, or TOKENVAULT_<NAME>, as
 * container secrets are mounted), so that neither a config file nor the process list holds them.
 * An environment variable holding the secret itself (TOKENVAULT_MASTER_KEY, PGPASSWORD) wins.
 */
import { readFileSync, statSync } from 'node:fs';
import { CliError, type CliIo } from './io.js';

/** Returns the io with TOKENVAULT_MASTER_KEY read from its file, and sets the PostgreSQL URL's password from its file. */
export function withSecretFiles(io: CliIo, values: { 'master-key-file'?: string; 'postgres-password-file'?: string; postgres?: string }): CliIo {
  let env = io.env;
  const keyFile = values['master-key-file'];
  if (keyFile !== undefined && !env['TOKENVAULT_MASTER_KEY']) env = { ...env, TOKENVAULT_MASTER_KEY: readSecret(keyFile, 'master-key-file', io) };
  const passwordFile = values['postgres-password-file'];
  if (passwordFile !== undefined) {
    if (values.postgres === undefined) throw new CliError('--postgres-password-file needs --postgres');
    if (!env['PGPASSWORD']) {
      const url = new URL(values.postgres);
      url.password = readSecret(passwordFile, 'postgres-password-file', io);
      values.postgres = url.href;
    }
  }
  return env === io.env ? io : { ...io, env };
}

function readSecret(file: string, option: string, io: CliIo): string {
  let text: string;
  try {
    const mode = statSync(file).mode & 0o777;
    if ((mode & 0o077) !== 0) io.stderr(`tokenvault: warning: ${file} is readable by other users (mode ${mode.toString(8)}); run chmod 600 on it\n`);
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new CliError(`--${option}: cannot read ${file} (${(error as { code?: string }).code ?? 'error'})`);
  }
  if (text === '') throw new CliError(`--${option}: ${file} is empty`);
  return text;
}
