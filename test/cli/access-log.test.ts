import { once } from 'node:events';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { asyncLogSink } from '../../src/cli/log-sink.js';
import { cliLogger, isoTimeByMillisecond } from '../../src/cli/logging.js';
import { accessLog } from '../../src/observability/access-log.js';
import { observeAtTurnEnd } from '../../src/observability/turn-end-observer.js';
import { ensureBuilt } from '../support/ensure-built.js';
import { ADMIN_KEY, api, startCli } from './helpers.js';

let dir: string;
beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'tokenvault-log-'));
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the asynchronous access log', () => {
  it('flush() resolves once every line written so far is in the file, writes in flight included', async () => {
    const file = join(dir, 'lines.log');
    const fd = openSync(file, 'w');
    try {
      const sink = asyncLogSink(fd);
      const lines = Array.from({ length: 5000 }, (_, i) => `${JSON.stringify({ msg: 'request', i })}\n`);
      for (const line of lines) sink.write(line);
      await sink.flush();
      expect(readFileSync(file, 'utf8')).toBe(lines.join(''));
      // Nothing pending: resolves at once, and lines written later are drained by the next flush.
      await sink.flush();
      sink.write('last\n');
      await sink.flush();
      expect(readFileSync(file, 'utf8').endsWith('last\n')).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  it('flushSync() writes the lines still held before it returns (exit and fatal-error handlers cannot wait)', () => {
    const file = join(dir, 'sync.log');
    const fd = openSync(file, 'w');
    try {
      const sink = asyncLogSink(fd);
      sink.write('first\n');
      sink.write('second\n');
      sink.flushSync();
      expect(readFileSync(file, 'utf8')).toBe('first\nsecond\n');
    } finally {
      closeSync(fd);
    }
  });

  it("flushSync() and flush() first log the access lines still held to the turn's end (exit handlers run mid-turn)", async () => {
    const file = join(dir, 'held.log');
    const fd = openSync(file, 'w');
    try {
      const sink = asyncLogSink(fd);
      // As serve composes them: the access log's events held to the turn's end, produced before any flush.
      const access = observeAtTurnEnd(accessLog(cliLogger({ env: {}, stdout() {}, stderr() {}, log: sink })));
      const stop = sink.beforeFlush(access.flush);
      access.observe({ method: 'GET', route: '/tokens/{id}', status: 200, durationMs: 1.5, applicationId: 'app-1' });
      sink.flushSync();
      const lines = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(lines).toMatchObject([{ msg: 'request', route: '/tokens/{id}', status: 200, duration_ms: 1.5, application_id: 'app-1' }]);
      access.observe({ method: 'POST', route: '/tokens', status: 201, durationMs: 2, applicationId: 'app-1' });
      await sink.flush();
      expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(2);
      // Removed: flushing no longer produces them (they wait for the turn's end).
      stop();
      access.observe({ method: 'GET', route: '/tokens', status: 200, durationMs: 1, applicationId: 'app-1' });
      sink.flushSync();
      expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(2);
      await new Promise((resolve) => setImmediate(resolve));
      await sink.flush();
      expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(3);
    } finally {
      closeSync(fd);
    }
  });

  it("the log's time is pino's isoTime, formatted again whenever the millisecond changes", () => {
    const now = vi.spyOn(Date, 'now').mockReturnValue(Date.UTC(2026, 0, 2, 3, 4, 5, 6));
    try {
      const time = isoTimeByMillisecond();
      expect(time()).toBe(',"time":"2026-01-02T03:04:05.006Z"');
      expect(time()).toBe(',"time":"2026-01-02T03:04:05.006Z"');
      now.mockReturnValue(Date.UTC(2026, 0, 2, 3, 4, 5, 7));
      expect(time()).toBe(',"time":"2026-01-02T03:04:05.007Z"');
    } finally {
      now.mockRestore();
    }
  });

  it('tokenvault serve logs by default and every request line reaches stderr before it exits on SIGTERM', async () => {
    const cli = await startCli(['serve', '--port', '0', '--db', ':memory:'], { TOKENVAULT_ADMIN_KEY: ADMIN_KEY });
    // 'close' comes after the process exits and its stderr pipe has been read to the end.
    const closed = once(cli.child, 'close');
    try {
      const app = await api(cli.url, ADMIN_KEY, 'POST', '/applications', { name: 'log', type: 'private', permissions: ['token:create', 'token:read'] });
      expect(app.status).toBe(201);
      const token = await api(cli.url, app.body.key, 'POST', '/tokens', { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 } });
      // Many requests in flight, so that lines pile up behind writes under way when the signal comes.
      const reads = await Promise.all(Array.from({ length: 200 }, () => api(cli.url, app.body.key, 'GET', `/tokens/${token.body.id}`)));
      expect(reads.every((r) => r.status === 200)).toBe(true);
      cli.child.kill('SIGTERM');
      const [code] = await closed;
      expect(code).toBe(0);
      const entries = cli
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line));
      const requests = entries.filter((e) => e.msg === 'request');
      expect(requests).toHaveLength(202);
      expect(requests.filter((e) => e.route === '/tokens/{id}' && e.status === 200)).toHaveLength(200);
      // Ids and templates only: the token id and the card never reach the log.
      expect(cli.stderr()).not.toContain(token.body.id);
      expect(cli.stderr()).not.toContain('4242424242424242');
    } finally {
      if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    }
  });
});
