import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

/** What a local destination received. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The client's port: which connection of the vault's pool carried the request. */
  remotePort: number;
}

export interface Receiver {
  /** `http://localhost:PORT` (or 127.0.0.1 with `host`). */
  url: string;
  port: number;
  received: Received[];
  /** How the next requests are answered (default 201 with a JSON echo of the body). */
  answer: (request: Received, res: ServerResponse) => void;
}

/** A local HTTP destination that records each request; closed when the current test ends. */
export async function startReceiver(host = 'localhost'): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    answer: (request, res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'x-destination': 'yes', 'set-cookie': 'sid=1', 'bt-proxy-destination-status': '999' });
      res.end(JSON.stringify({ echoed: request.body.length }));
    },
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), remotePort: req.socket.remotePort ?? 0 };
      receiver.received.push(request);
      receiver.answer(request, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://${host}:${receiver.port}`;
  return receiver;
}
