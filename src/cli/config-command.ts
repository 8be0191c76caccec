/**
 * `tokenvault config check <file>` validates a serve config file as `serve --config` would, without
 * opening anything; `tokenvault config keys` lists every key with its environment variable.
 */
import { attributeConfigErrors, configKeys, envName } from './config-file.js';
import { type CliIo, UsageError } from './io.js';
import { serve } from './serve.js';

export const CONFIG_HELP = `Usage: tokenvault config check <file>
       tokenvault config keys

  check <file>   Validate a serve config file (TOML): syntax, keys, types, values, that named
                 files (TLS, secrets) can be read. Environment variables are not applied; nothing
                 is opened or started. Exit code 0 when valid, 2 with the file, line and key otherwise.
  keys           Every config key (the serve options) and the environment variable that overrides it.

Reference: docs/configuration.md
`;

export async function config(args: readonly string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === '-h' || sub === '--help') {
    io.stdout(CONFIG_HELP);
    return sub === undefined ? 2 : 0;
  }
  if (sub === 'keys') {
    if (rest.length > 0) throw new UsageError(`config keys takes no arguments`);
    let keys: string[] = [];
    await attributeConfigErrors(
      () => serve([], { ...io, env: {}, checkOnly: true }),
      (parsed) => (keys = parsed.table ? configKeys(parsed.table) : []),
    );
    io.stdout(keys.map((key) => `${key.padEnd(42)}${envName(key)}\n`).join(''));
    return 0;
  }
  if (sub !== 'check') throw new UsageError(`unknown config command '${sub}' (check or keys)`);
  if (rest.length !== 1 || rest[0]!.startsWith('-')) throw new UsageError('config check takes one file: tokenvault config check tokenvault.toml');
  const file = rest[0]!;
  let set: string[] = [];
  await attributeConfigErrors(
    () => serve(['--config', file], { ...io, env: {}, checkOnly: true }),
    (parsed) => (set = [...parsed.seen.keys()]),
  );
  io.stdout(`${file}: valid (${set.length === 0 ? 'sets nothing' : `sets ${set.join(', ')}`})\n`);
  return 0;
}
