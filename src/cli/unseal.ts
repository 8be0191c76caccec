/** `tokenvault unseal` and `tokenvault seal`: a sealed server's local admin socket (docs/key-custody.md). */
import { parseArgs } from 'node:util';
import { CliError, type CliIo, UsageError, parse } from './io.js';
import { callAdminSocket } from './admin-socket.js';
import { readLines } from './stdin-lines.js';

export const UNSEAL_HELP = `Usage: tokenvault unseal [--db <file> | --admin-socket <path>]
       tokenvault seal   [--db <file> | --admin-socket <path>]

unseal reads shares printed by 'tokenvault keys split' from standard input, one per line (each
custodian may run it with their own share), and gives them to the running server on its admin
socket. The server opens once the threshold of distinct shares of its split has been given.
seal closes it again: the master key and every tenant key leave its memory; requests answer 503
sealed until it is unsealed again. Shares are never printed or logged.

Options:
  --db <file>                The SQLite database the server serves: its socket is <file>.admin.sock
  --admin-socket <path>      The server's admin socket (serve --admin-socket), e.g. with PostgreSQL
  -h, --help                 Show this help
`;

/** The admin socket a server on this database listens on (serve's default). */
export function defaultAdminSocket(db: string): string {
  return `${db}.admin.sock`;
}

function socketOf(args: readonly string[]): string | null {
  const { values } = parse(() =>
    parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: { db: { type: 'string' }, 'admin-socket': { type: 'string' }, help: { type: 'boolean', short: 'h', default: false } },
    }),
  );
  if (values.help) return null;
  if (values.db !== undefined && values['admin-socket'] !== undefined) throw new UsageError('give --db or --admin-socket, not both');
  return values['admin-socket'] ?? defaultAdminSocket(values.db ?? './tokenvault.db');
}

function describe(status: Record<string, unknown>): string {
  return status['sealed'] === false ? 'unsealed: the vault serves\n' : `sealed: ${String(status['given'])} of ${String(status['threshold'])} shares given\n`;
}

export async function unseal(args: readonly string[], io: CliIo, lines: AsyncIterable<string> = readLines(process.stdin)): Promise<number> {
  const socket = socketOf(args);
  if (socket === null) {
    io.stdout(UNSEAL_HELP);
    return 0;
  }
  let given = 0;
  let refused = 0;
  let last: Record<string, unknown> | undefined;
  for await (const line of lines) {
    if (line.trim() === '') continue;
    given++;
    const answer = await callAdminSocket(socket, 'POST', '/unseal', { share: line.trim() });
    last = answer.body;
    if (answer.status !== 200) {
      refused++;
      // The server's reason names the share by its position only.
      io.stderr(`tokenvault: share ${given} refused: ${String(answer.body['error'])}\n`);
      continue;
    }
    if (answer.body['sealed'] === false) break;
  }
  if (given === 0) throw new CliError('no share on standard input (one share per line, as tokenvault keys split printed them)');
  if (last !== undefined && typeof last['threshold'] === 'number') io.stdout(describe(last));
  return refused > 0 ? 1 : 0;
}

export async function seal(args: readonly string[], io: CliIo): Promise<number> {
  const socket = socketOf(args);
  if (socket === null) {
    io.stdout(UNSEAL_HELP);
    return 0;
  }
  const answer = await callAdminSocket(socket, 'POST', '/seal');
  if (answer.status !== 200) throw new CliError(`the server refused to seal: ${String(answer.body['error'])}`);
  io.stdout(describe(answer.body));
  return 0;
}
