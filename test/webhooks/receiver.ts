import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { vi } from 'vitest';
import type { Clock } from '../../src/common/clock.js';

/** One request the receiver got. */
export interface Received {
  headers: Record<string, string>;
  body: string;
  /** The answer it gave. */
  status: number;
}

/**
 * A real HTTP receiver on 127.0.0.1 (a free port), answering `failures` requests with 500 first and
 * 204 after. Every request is recorded; wait for none: the worker's runDue resolves after the POST.
 */
export interface Receiver {
  url: string;
  received: Received[];
  /** Answers the next n requests with this status. */
  fail(n: number, status?: number): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  let failures = 0;
  let failStatus = 500;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const status = failures > 0 ? failStatus : 204;
      if (failures > 0) failures--;
      received.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8'), status });
      res.statusCode = status;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    fail(n, status = 500) {
      failures = n;
      failStatus = status;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Verifies a received webhook with the standardwebhooks verifier and `secret`, its clock set to the
 * vault's (the verifier refuses timestamps more than 5 minutes from its own now). Returns the parsed
 * payload; throws WebhookVerificationError when no signature matches.
 */
export function verify(received: Received, secret: string, clock: Clock): any {
  const spy = vi.spyOn(Date, 'now').mockReturnValue(clock.now());
  try {
    return new Webhook(secret).verify(received.body, received.headers);
  } finally {
    spy.mockRestore();
  }
}
