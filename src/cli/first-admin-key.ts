/**
 * The first start's management key: written to a file only its owner can read (mode 0600), and only
 * the file's path printed, so the key never reaches a log collector that keeps stdout (README, Quick
 * start). `--print-admin-key` prints it instead; an in-memory database prints it too (the key and
 * every token die with the process, and there is no database file to keep it beside).
 */
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { generateApiKey } from '../auth/api-keys.js';
import type { Vault } from '../vault.js';
import { CliError } from './io.js';
import type { StoreTarget } from './store-target.js';

export interface AdminKeyChoice {
  /** TOKENVAULT_ADMIN_KEY: the operator chose the key, nothing is written or printed. */
  given: string | undefined;
  /** --admin-key-file: where a generated key goes. */
  file: string | undefined;
  /** --print-admin-key: print a generated key on stdout instead of writing it. */
  print: boolean;
}

/** Where a generated key is written: --admin-key-file, else `<db>.admin-key`, else ./tokenvault.admin-key (PostgreSQL); undefined: printed. */
export function adminKeyFile(target: StoreTarget, choice: AdminKeyChoice): string | undefined {
  if (choice.print) return undefined;
  if (choice.file !== undefined) return resolve(choice.file);
  if (target.kind === 'postgres') return resolve('tokenvault.admin-key');
  return target.db === ':memory:' ? undefined : resolve(`${target.db}.admin-key`);
}

/**
 * On a database with no tenant: one tenant and its management application. Returns what to print
 * (empty when there was a tenant already). A generated key is written whole to a temporary file
 * before the tenant exists, so a full disk fails the start instead of losing the only key; the file
 * takes its name once the tenant is created (and is removed when another instance created it first).
 */
export async function bootstrap(vault: Vault, target: StoreTarget, choice: AdminKeyChoice): Promise<string> {
  const file = choice.given === undefined ? adminKeyFile(target, choice) : undefined;
  const adminKey = choice.given ?? (file === undefined ? undefined : generateApiKey());
  const pending = file === undefined || adminKey === undefined ? undefined : writePending(file, adminKey);
  let first;
  try {
    // Instances sharing a PostgreSQL database may start together: one of them creates the tenant.
    first = await vault.createFirstTenant({ name: 'default', applicationName: 'Administrator', ...(adminKey === undefined ? {} : { adminKey }) });
  } catch (error) {
    if (pending) removeQuietly(pending);
    throw error;
  }
  if (first === null) {
    if (pending) removeQuietly(pending);
    return '';
  }
  const { tenant, application } = first;
  const created = `created tenant ${tenant.id} with management application ${application.id}\n`;
  if (choice.given !== undefined) return `${created}its API key is TOKENVAULT_ADMIN_KEY\n`;
  if (pending === undefined || file === undefined) return `${created}\nadmin API key (shown once, store it now): ${application.key}\n`;
  try {
    renameSync(pending, file);
  } catch (error) {
    throw new CliError(`the admin API key is in ${pending} but could not be renamed to ${file} (${(error as { code?: string }).code ?? 'error'}): move it yourself`);
  }
  return `${created}admin API key written to ${file} (mode 0600): read it, keep it in your secret store, then delete the file\n`;
}

function writePending(file: string, key: string): string {
  const pending = `${file}.tmp-${process.pid}`;
  let fd: number | undefined;
  try {
    fd = openSync(pending, 'wx', 0o600);
    writeFileSync(fd, `${key}\n`);
    fsyncSync(fd);
  } catch (error) {
    if (fd !== undefined) removeQuietly(pending);
    throw new CliError(
      `cannot write the admin API key file ${file} (${(error as { code?: string }).code ?? 'error'}): choose another place with --admin-key-file, set TOKENVAULT_ADMIN_KEY, or use --print-admin-key`,
    );
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return pending;
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}
