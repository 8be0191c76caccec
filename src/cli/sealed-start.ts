/** A server whose master key is split: its admin socket, shares on standard input, what it prints (docs/key-custody.md). */
import type { Server } from 'node:http';
import type { Logger } from '../common/logger.js';
import type { SealableKeyProvider } from '../crypto/sealable-key-provider.js';
import { ValidationError } from '../errors/errors.js';
import { listenAdminSocket } from './admin-socket.js';
import { CliError, type CliIo, UsageError } from './io.js';
import { readLines } from './stdin-lines.js';
import type { StoreTarget } from './store-target.js';
import { defaultAdminSocket } from './unseal.js';

/**
 * Listens on the admin socket and, with `fromStdin`, first takes shares from standard input (a
 * refused one is reported by its line number and the reading goes on). Seal and unseal are logged
 * with the counts only.
 */
export async function sealedStart(
  provider: SealableKeyProvider,
  target: StoreTarget,
  io: CliIo,
  logger: Logger,
  socketFlag: string | undefined,
  fromStdin: boolean,
  isEmpty: () => Promise<boolean>,
): Promise<{ close(): Promise<void> }> {
  const socket = socketFlag ?? (target.kind === 'sqlite' && target.db !== ':memory:' ? defaultAdminSocket(target.db) : undefined);
  if (socket === undefined && !fromStdin) throw new UsageError('a sealed server on PostgreSQL needs --admin-socket <path> (or --unseal-stdin)');
  const { threshold } = provider.status();
  if (fromStdin) await takeShares(provider, readLines(process.stdin), io);
  // The first start on an empty database creates its tenant and administrator, whose keys the master
  // key wraps: that cannot wait for custodians on the socket (the start would have nothing to serve).
  if (provider.status().sealed && (await isEmpty())) {
    throw new CliError(
      'the database holds no tenant yet: its first start creates one, which needs the master key. Start it with --unseal-stdin and ' +
        `${threshold} shares on standard input (one per line), then unseal later starts on the admin socket as usual`,
    );
  }
  let server: Server | undefined;
  if (socket !== undefined) {
    server = await listenAdminSocket(socket, provider, (status, what) => {
      logger.info(`vault ${what}`, { threshold: status.threshold });
      io.stderr(`tokenvault: ${what}\n`);
    });
  }
  const status = provider.status();
  if (status.sealed) {
    io.stderr(
      `tokenvault: sealed: requests answer 503 until ${threshold} shares of the master key are given (${status.given} so far)` +
        (socket === undefined ? '\n' : `: tokenvault unseal ${socketFlag === undefined && target.kind === 'sqlite' ? `--db ${target.db}` : `--admin-socket ${socket}`}\n`),
    );
  } else io.stderr('tokenvault: unsealed\n');
  return {
    async close() {
      provider.seal();
      if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Gives the provider shares read from `lines` until it opens (a refused line is reported by its
 * number, never quoted, and the reading goes on). Used by `serve --unseal-stdin` and by
 * `keys rotate --unseal-stdin`.
 */
export async function takeShares(provider: SealableKeyProvider, lines: AsyncIterable<string>, io: CliIo): Promise<void> {
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    try {
      if (!(await provider.submit(text)).sealed) return;
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      io.stderr(`tokenvault: share on line ${line} of standard input ${error.errors['share']?.[0] ?? 'is refused'}\n`);
    }
  }
}
