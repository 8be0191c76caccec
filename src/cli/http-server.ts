/** Listening and draining a node:http server for `serve`. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CliError } from './io.js';

/** Starts listening; a port in use (or any listen error) is a CliError naming it. */
export function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(new CliError(`cannot listen on ${host}:${port}: ${error.code ?? error.name}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** The URL of a listening address (IPv6 in brackets). */
export function urlOf(address: AddressInfo, scheme: 'http' | 'https' = 'http'): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${scheme}://${host}:${address.port}`;
}

/** Resolves when the signal aborts (never without one). */
export function aborted(signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return new Promise(() => undefined);
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** Stops accepting, lets in-flight requests finish (closing idle keep-alive sockets), then closes. */
export async function shutdown(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Requests still running after the grace period are cut off.
  const timer = setTimeout(() => server.closeAllConnections(), 10_000);
  timer.unref();
  // Keep-alive sockets that finish a response while draining become idle: close those too.
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  sweep.unref();
  try {
    await closed;
  } finally {
    clearTimeout(timer);
    clearInterval(sweep);
  }
}
