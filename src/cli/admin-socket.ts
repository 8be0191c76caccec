/**
 * The local admin endpoint of a sealed vault (docs/key-custody.md): HTTP on a Unix socket, mode
 * 0600, so only the user the server runs as (and root) can reach it. Shares never cross a network,
 * need no TLS, and the API's own listener has no route that takes one. Nothing here is logged but
 * the outcome's counts; a share is never echoed, in an answer or an error.
 *
 *   GET  /seal-status  -> { sealed, threshold, given }
 *   POST /unseal       { "share": "tvshare1.…" } -> the status, or 400 naming why the share was refused
 *   POST /seal         -> the status (sealed)
 */
import { chmodSync, existsSync, lstatSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { type IncomingMessage, type Server, type ServerResponse, createServer, request } from 'node:http';
import { connect } from 'node:net';
import type { SealableKeyProvider, SealStatus } from '../crypto/sealable-key-provider.js';
import { ValidationError } from '../errors/errors.js';
import { CliError } from './io.js';

const MAX_BODY = 4096;

/** Listens on `path` (removing a stale socket left by a crashed server, never a live one or another file). */
export async function listenAdminSocket(path: string, provider: SealableKeyProvider, onChange: (status: SealStatus, what: 'unsealed' | 'sealed') => void): Promise<Server> {
  const shared = sharedDirectory(path);
  if (shared) throw new CliError(shared);
  if (existsSync(path)) {
    if (!lstatSync(path).isSocket()) throw new CliError(`${path} exists and is not a socket: choose another --admin-socket`);
    if (await answers(path)) throw new CliError(`another server is listening on the admin socket ${path}`);
    unlinkSync(path);
  }
  const server = createServer((req, res) => {
    handle(req, res, provider, onChange).catch(() => {
      res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      // A Unix socket path is limited to about 100 bytes: a deep directory needs --admin-socket.
      reject(new CliError(`cannot listen on the admin socket ${path} (${error.code ?? 'error'}); choose another with --admin-socket`));
    });
    // Created with no access for others: the umask below keeps the socket from ever being open to them.
    const umask = process.umask(0o177);
    try {
      server.listen(path, () => resolve());
    } finally {
      process.umask(umask);
    }
  });
  chmodSync(path, 0o600);
  return server;
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  provider: SealableKeyProvider,
  onChange: (status: SealStatus, what: 'unsealed' | 'sealed') => void,
): Promise<void> {
  const send = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
  };
  const path = (req.url ?? '').split('?')[0];
  if (req.method === 'GET' && path === '/seal-status') return send(200, provider.status());
  if (req.method === 'POST' && path === '/seal') {
    const was = provider.status().sealed;
    const status = provider.seal();
    if (!was) onChange(status, 'sealed');
    return send(200, status);
  }
  if (req.method !== 'POST' || path !== '/unseal') return send(404, { error: 'GET /seal-status, POST /unseal, POST /seal' });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return send(413, { error: `the body must be at most ${MAX_BODY} bytes: one share` });
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  let share: unknown;
  try {
    share = (JSON.parse(body.toString('utf8')) as { share?: unknown } | null)?.share;
  } catch {
    share = undefined;
  } finally {
    body.fill(0);
    for (const chunk of chunks) chunk.fill(0);
  }
  if (typeof share !== 'string') return send(400, { error: 'the body must be {"share": "<one share as tokenvault keys split printed it>"}' });
  const was = provider.status().sealed;
  try {
    const status = await provider.submit(share);
    if (was && !status.sealed) onChange(status, 'unsealed');
    return send(200, status);
  } catch (error) {
    if (error instanceof ValidationError) return send(400, { error: error.errors['share']?.[0] ?? 'the share is refused', ...provider.status() });
    throw error;
  }
}

/** Whether a server answers on the socket (a stale one left by a crash does not). */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A call of the admin socket from `tokenvault unseal` / `seal`: the status, or the server's refusal. */
export function callAdminSocket(path: string, method: 'GET' | 'POST', route: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const untrusted = untrustedSocket(path);
  if (untrusted) return Promise.reject(new CliError(untrusted));
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    // agent: false, a connection per call: a kept-alive one the server has since closed would fail
    // the next call of the same process (EPIPE) after a pause longer than the server's keep-alive.
    const req = request(
      { socketPath: path, agent: false, method, path: route, headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
          } catch {
            reject(new CliError(`the admin socket ${path} answered something else than tokenvault's admin endpoint`));
          }
        });
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      reject(
        new CliError(
          error.code === 'ENOENT' || error.code === 'ECONNREFUSED'
            ? `no sealed tokenvault server listens on ${path} (is it running, and started sealed?)`
            : error.code === 'EACCES'
              ? `permission denied on ${path}: run as the user the server runs as`
              : `cannot reach the admin socket ${path} (${error.code ?? 'error'})`,
        ),
      );
    });
    req.end(payload);
  });
}

/**
 * Why `path` may be someone else's socket, or undefined when it is ours. Shares go only to a socket
 * owned by this user (or root) that no one else may open, in a directory others cannot replace it
 * in (not group- or world-writable, unless sticky): otherwise another local user could bind the
 * path first and collect every custodian's share.
 */
export function untrustedSocket(path: string): string | undefined {
  let socket;
  try {
    socket = lstatSync(path);
  } catch {
    return undefined; // nothing there: the connection fails with its own message
  }
  const me = process.getuid?.() ?? 0;
  if (!socket.isSocket()) return `${path} is not a socket: not tokenvault's admin endpoint`;
  if (socket.uid !== me && socket.uid !== 0) return `the admin socket ${path} belongs to another user (uid ${socket.uid}): shares are not sent to it`;
  if ((socket.mode & 0o077) !== 0) return `the admin socket ${path} is open to other users (mode ${(socket.mode & 0o777).toString(8)}): shares are not sent to it`;
  return sharedDirectory(path);
}

function sharedDirectory(path: string): string | undefined {
  const dir = lstatSync(dirname(path));
  if ((dir.mode & 0o022) !== 0 && (dir.mode & 0o1000) === 0)
    return `the admin socket's directory ${dirname(path)} is writable by other users: choose a private directory for --admin-socket`;
  return undefined;
}
