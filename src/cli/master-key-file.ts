/** Writing a new master key file so that it is whole and durable, or absent, before the store opens. */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, readdirSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CliError } from './io.js';

/** The file operations the key file is written with: node:fs by default, injected by tests (a full disk, a crash). */
export interface KeyFileOps {
  /** Opens a new file for writing; fails when the path exists. */
  create(path: string, mode: number): number;
  write(fd: number, text: string): void;
  fsync(fd: number): void;
  close(fd: number): void;
  /** A second name for `existing`; fails with EEXIST when `path` exists (it never replaces a file). */
  link(existing: string, path: string): void;
  rename(from: string, to: string): void;
  unlink(path: string): void;
  exists(path: string): boolean;
  list(dir: string): string[];
  /** Makes the directory's entries (a file just named in it) durable. */
  fsyncDir(dir: string): void;
}

export const nodeKeyFileOps: KeyFileOps = {
  create: (path, mode) => openSync(path, 'wx', mode),
  write: (fd, text) => writeFileSync(fd, text),
  fsync: (fd) => fsyncSync(fd),
  close: (fd) => closeSync(fd),
  link: (existing, path) => linkSync(existing, path),
  rename: (from, to) => renameSync(from, to),
  unlink: (path) => unlinkSync(path),
  exists: (path) => existsSync(path),
  list: (dir) => readdirSync(dir),
  fsyncDir: (dir) => {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  },
};

/** The key file could not be written or made durable: names the file and the cause, never the key. */
export class KeyFileError extends CliError {
  constructor(
    readonly file: string,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Writes `key` as the new key file: a temp file beside it (mode 0600) is written and fsynced, then
 * linked to the key file's name, and the directory fsynced. Linking never replaces a file, so when
 * another process starting on the same database made the key file meanwhile, this answers 'exists'
 * and the caller reads that one: two processes never end up with different keys. On any failure
 * the temp file is removed and the key file is either absent or whole.
 */
export function createKeyFile(keyFile: string, key: string, ops: KeyFileOps = nodeKeyFileOps): 'created' | 'exists' {
  const dir = dirname(keyFile);
  const temp = `${keyFile}${TEMP_MARK}${process.pid}-${randomBytes(6).toString('hex')}`;
  let linked = false;
  try {
    const fd = ops.create(temp, 0o600);
    try {
      ops.write(fd, `${key}\n`);
      // The key must be on disk before its name is: a power cut must not leave a named, empty key.
      ops.fsync(fd);
    } finally {
      ops.close(fd);
    }
    if (!publish(temp, keyFile, ops)) {
      removeQuietly(temp, ops);
      return 'exists';
    }
    linked = true;
    removeQuietly(temp, ops);
    fsyncDirectory(dir, ops);
  } catch (error) {
    removeQuietly(temp, ops);
    throw keyFileError(keyFile, error, linked);
  }
  removeLeftovers(keyFile, ops);
  return 'created';
}

const TEMP_MARK = '.tmp-';

/** Links the temp file into place; false when the key file exists already (another process made it). */
function publish(temp: string, keyFile: string, ops: KeyFileOps): boolean {
  try {
    ops.link(temp, keyFile);
    return true;
  } catch (error) {
    const code = codeOf(error);
    if (code === 'EEXIST') return false;
    // Another starting process found the key file and removed our temp as a leftover (removeLeftovers).
    if (code === 'ENOENT' && ops.exists(keyFile)) return false;
    // A file system without hard links: a rename, checked first. Only a process starting on the same
    // database in the same instant could still replace the file; a hard link rules even that out.
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw error;
    if (ops.exists(keyFile)) return false;
    ops.rename(temp, keyFile);
    return true;
  }
}

function fsyncDirectory(dir: string, ops: KeyFileOps): void {
  try {
    ops.fsyncDir(dir);
  } catch (error) {
    // Platforms where a directory cannot be opened or synced (Windows) make the name durable otherwise.
    const code = codeOf(error);
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'ENOTSUP' && code !== 'EPERM') throw error;
  }
}

/**
 * Temp files of an earlier start that stopped between writing and linking. Their keys never served
 * a database (only the linked key file does), so they are removed once the key file exists; before
 * that, one may be a concurrent start's, still in flight.
 */
export function removeLeftovers(keyFile: string, ops: KeyFileOps = nodeKeyFileOps): void {
  const prefix = basename(keyFile) + TEMP_MARK;
  let names: string[];
  try {
    names = ops.list(dirname(keyFile));
  } catch {
    return;
  }
  for (const name of names) if (name.startsWith(prefix)) removeQuietly(join(dirname(keyFile), name), ops);
}

function removeQuietly(path: string, ops: KeyFileOps): void {
  try {
    ops.unlink(path);
  } catch {
    // Already gone, or the disk refuses: nothing else to do, and the original failure is what to report.
  }
}

const CAUSES: Record<string, [cause: string, action: string]> = {
  ENOSPC: ['no space left on device', 'free space and start again'],
  EDQUOT: ['disk quota exceeded', 'free space or raise the quota and start again'],
  EACCES: ['permission denied', 'let this user write to the directory and start again'],
  EPERM: ['operation not permitted', 'let this user write to the directory and start again'],
  EROFS: ['read-only file system', 'put the database on a writable file system'],
  EIO: ['input/output error', 'check the disk and start again'],
  ENOENT: ['no such file or directory', 'check that the directory exists and start again'],
};

function keyFileError(keyFile: string, error: unknown, linked: boolean): KeyFileError {
  const code = codeOf(error);
  const [cause, action] = (code !== undefined ? CAUSES[code] : undefined) ?? [code === undefined ? 'an unexpected error' : 'an error', 'fix the cause and start again'];
  const why = code === undefined ? cause : `${cause} (${code})`;
  if (linked) {
    // The key file is whole (written and synced before it was named); only its name may not survive a power cut.
    return new KeyFileError(keyFile, code, `could not make the master key file ${keyFile} durable: ${why}; ${action}; no token was written`);
  }
  return new KeyFileError(keyFile, code, `could not write the master key file ${keyFile}: ${why}; ${action}; nothing was written`);
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
