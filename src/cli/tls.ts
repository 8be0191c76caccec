/**
 * `serve --tls-cert <pem> --tls-key <pem>`: HTTPS on the API port, TLS 1.2 at least, the files read
 * again on SIGHUP (a renewed certificate) without dropping a connection: new handshakes use the new
 * pair, open connections keep theirs. A plain-HTTP request to the port gets a 400 that says so,
 * rather than a reset (docs/production.md, TLS).
 */
import { readFileSync } from 'node:fs';
import type { RequestListener } from 'node:http';
import { type Server, createServer } from 'node:https';
import type { Socket } from 'node:net';
import { createSecureContext } from 'node:tls';
import type { Logger } from '../common/logger.js';
import { CliError, UsageError } from './io.js';

const MIN_VERSION = 'TLSv1.2';
/** A connection that sends nothing this long after connecting is closed (no handshake, no request). */
const FIRST_BYTE_TIMEOUT_MS = 10_000;
/** The first byte of a TLS record carrying a handshake (a ClientHello). */
const TLS_HANDSHAKE = 0x16;

export interface TlsFiles {
  cert: string;
  key: string;
}

/** Both flags or neither; undefined: plain HTTP. */
export function tlsFiles(cert: string | undefined, key: string | undefined): TlsFiles | undefined {
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) throw new UsageError('--tls-cert and --tls-key go together (a PEM certificate chain and its private key)');
  return { cert, key };
}

/** Reads and checks the pair (the key matches the certificate): a CliError naming the file otherwise. */
export function readTls(files: TlsFiles): { cert: Buffer; key: Buffer; minVersion: typeof MIN_VERSION } {
  const read = (file: string, flag: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new CliError(`--${flag}: cannot read ${file} (${(error as { code?: string }).code ?? 'error'})`);
    }
  };
  const material = { cert: read(files.cert, 'tls-cert'), key: read(files.key, 'tls-key'), minVersion: MIN_VERSION } as const;
  try {
    createSecureContext(material);
  } catch (error) {
    // OpenSSL's reason (no secret in it): a key that is not PEM, or not the certificate's.
    throw new CliError(`--tls-cert ${files.cert} / --tls-key ${files.key}: not a usable PEM certificate and key (${(error as Error).message})`);
  }
  return material;
}

/** An HTTPS server for the listener; `reload()` reads the files again (a failure keeps the pair in use and is logged). */
export function createTlsServer(listener: RequestListener, files: TlsFiles, logger: Logger): { server: Server; reload: () => void } {
  const server = createServer(readTls(files), listener);
  // The TLS layer's own handler of new connections runs only once the first byte shows a handshake.
  const startTls = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    socket.setTimeout(FIRST_BYTE_TIMEOUT_MS, () => socket.destroy());
    socket.once('data', (chunk: Buffer) => {
      socket.setTimeout(0);
      socket.pause();
      // Put back: the TLS socket reads what the plain socket already holds.
      socket.unshift(chunk);
      if (chunk[0] === TLS_HANDSHAKE) {
        for (const handler of startTls) handler.call(server, socket);
      } else {
        refusePlainHttp(socket);
      }
    });
  });
  const reload = () => {
    try {
      server.setSecureContext(readTls(files));
      logger.info('TLS certificate reloaded', { cert: files.cert });
    } catch (error) {
      logger.error('TLS certificate reload failed; the previous certificate stays in use', { cert: files.cert, reason: (error as Error).message });
    }
  };
  return { server, reload };
}

function refusePlainHttp(socket: Socket): void {
  const body = 'This port serves HTTPS only: use https:// (the server was started with --tls-cert and --tls-key).\n';
  socket.on('error', () => undefined);
  socket.end(`HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  socket.resume();
}
