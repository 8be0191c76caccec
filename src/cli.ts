#!/usr/bin/env node
/**
 * The `tokenvault` command (one module per command under ./cli/): `serve` runs the HTTP API on
 * embedded SQLite or on PostgreSQL; `keys rotate`, `migrate` and `recover-admin` maintain a
 * database. The CLI is the only part that reads environment variables (the pg driver also reads
 * the standard PG* ones, e.g. PGPASSWORD).
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { asyncLogSink } from './cli/log-sink.js';
import { launchedByNpm, watchParent } from './cli/parent-watch.js';
import { runCli } from './cli/run.js';

export type { CliIo } from './cli/io.js';
export { runCli };

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

/**
 * Runs the CLI as a process: signals end `serve` gracefully (a second one exits at once), and the
 * process exits with the command's code. `npm start` (scripts/start.mjs) calls it in its own
 * process, so the signals a supervisor sends reach the server (docs/embedding.md).
 */
export async function main(argv: readonly string[]): Promise<never> {
  // Log lines are written asynchronously (src/cli/log-sink.ts): drained before a normal exit, and
  // written at once on any other exit (a second signal, process.exit) and on a fatal error.
  const log = asyncLogSink(2);
  process.on('exit', () => log.flushSync());
  process.on('uncaughtExceptionMonitor', () => log.flushSync());
  const controller = new AbortController();
  let signals = 0;
  const onSignal = () => {
    signals++;
    if (signals > 1) process.exit(1);
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Under npx, a supervisor's SIGTERM may end npm alone: the server then stops as if it got it (src/cli/parent-watch.ts).
  if (argv[0] === 'serve' && launchedByNpm(process.env)) {
    watchParent(() => {
      process.stderr.write('tokenvault: the npm process that started this server is gone; stopping\n');
      onSignal();
    });
  }
  const code = await runCli(argv, {
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    log,
    signal: controller.signal,
  });
  await log.flush();
  process.exit(code);
}

if (isMain()) await main(process.argv.slice(2));
