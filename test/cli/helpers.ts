import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { runCli } from '../../src/cli.js';
import { DIST, ROOT } from '../support/ensure-built.js';

export const CLI = join(DIST, 'cli.js');
export const ADMIN_KEY = 'admin-key-for-tests-0123456789';

export interface Running {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** Starts `tokenvault <args>` from dist/ and waits for its `listening on` line. */
export function startCli(args: string[], env: Record<string, string | undefined> = {}): Promise<Running> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const onData = () => {
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        child.stdout!.off('data', onData);
        resolve({ child, url: match[1]!, stdout: () => out, stderr: () => err, exited });
      }
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => reject(new Error(`exited with ${code} before listening:\n${out}\n${err}`)));
  });
}

/** Runs `tokenvault <args>` to completion. */
export function runCliProcess(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, ...env } as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** JSON over HTTP with an API key. */
export async function api(url: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(url + path, {
    method,
    headers: { 'SVC-API-KEY': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

/**
 * `tokenvault <argv>` run in this process with its output captured; `whileUp` runs once the server
 * listens (for serve), and its end stops the server.
 */
export async function cli(argv: string[], env: Record<string, string> = {}, whileUp?: (url: string) => Promise<void>) {
  const controller = new AbortController();
  let stdout = '';
  let stderr = '';
  let failure: unknown;
  const code = await runCli(argv, {
    env,
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    signal: controller.signal,
    onListening: (url) => {
      (whileUp ?? (async () => undefined))(url)
        .catch((error: unknown) => (failure = error))
        .finally(() => controller.abort());
    },
  });
  if (failure) throw failure;
  return { code, stdout, stderr };
}
