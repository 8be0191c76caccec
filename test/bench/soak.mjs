// Soak benchmark (not part of `npm run bench`: it runs 30 minutes): the real server (`tokenvault
// serve` from dist/, on a SQLite file) under paced mixed load: creates and deletes (the live set
// stays near BENCH_SOAK_LIVE tokens), reads, metadata lists, updates, and one reactor call every
// second. Paced, not saturating: BENCH_SOAK_RATE requests per second in all (default 200), at most
// 32 in flight; a tick that finds 32 still in flight skips its share and counts it as "behind".
// Every 10 s it samples the server's RSS (/proc/<pid>/status) and V8 heap, and prints a row.
// The heap comes from the server's own --trace-gc lines (the size after each collection, per
// isolate), which changes nothing in the server but adds a short line per GC on its stdout: the
// CLI's /metrics has no Node.js default metrics, and --inspect would change what is measured.
// At the end it compares the RSS slope of the last third with the first third, and how much of the
// growth SQLite's page cache can explain (it fills up to min(database size, cache_size); serve sets
// cache_size to 64 MiB on its one connection).
// Run after a build: `node test/bench/soak.mjs`; BENCH_SOAK_SECONDS (default 1800) sets the length,
// BENCH_SOAK_RATE the pace, BENCH_DIST another build's dist/.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 1800);
const RATE = Number(process.env.BENCH_SOAK_RATE ?? 200);
const LIVE = Number(process.env.BENCH_SOAK_LIVE ?? 5000);
const SAMPLE_MS = 10_000;
const TICK_MS = 50;
const MAX_IN_FLIGHT = 32;
/** serve's SQLite cache_size (DEFAULT_CACHE_SIZE_MIB in src/storage/sqlite/sqlite-options.ts). */
const CACHE_MIB = 64;
const DIST = process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : fileURLToPath(new URL('../../dist', import.meta.url));
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const MB = 1024 * 1024;

// --- the server ----------------------------------------------------------------------------------

/** The heap after the latest collections, per isolate, from --trace-gc lines: `[pid:0xISOLATE] … Scavenge 12.3 (14.0) -> 11.9 (15.0) MB`. */
function gcTracker() {
  const isolates = new Map();
  let pending = '';
  const line = /^\[\d+:(0x[0-9a-f]+)\]\s+[\d.]+ ms: ([\w-]+)[^\d]*([\d.]+) \(([\d.]+)\) -> ([\d.]+) \(([\d.]+)\) MB/;
  return {
    isolates,
    feed(chunk) {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const text of lines) {
        const m = line.exec(text);
        if (!m) continue;
        const [, isolate, kind, , , after, committed] = m;
        const entry = isolates.get(isolate) ?? { after: 0, committed: 0, live: undefined, order: isolates.size };
        entry.after = Number(after);
        entry.committed = Number(committed);
        // A mark-compact leaves (about) the live heap: the figure that shows a leak.
        if (/Mark/.test(kind)) entry.live = Number(after);
        isolates.set(isolate, entry);
      }
    },
  };
}

async function startServer(dir) {
  const adminKey = `soak-admin-${randomBytes(16).toString('hex')}`;
  const db = join(dir, 'soak.db');
  const child = spawn(process.execPath, ['--trace-gc', join(DIST, 'cli.js'), 'serve', '--port', '0', '--db', db, '--access-log', 'off'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TOKENVAULT_ADMIN_KEY: adminKey, TOKENVAULT_MASTER_KEY: randomBytes(32).toString('base64') },
  });
  const gc = gcTracker();
  let out = '';
  let errors = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    if (errors.length < 65536) errors += chunk;
  });
  child.stdout.setEncoding('utf8');
  const url = await new Promise((resolveUrl, reject) => {
    child.stdout.on('data', (chunk) => {
      gc.feed(chunk);
      if (out.length < 65536) out += chunk;
      const found = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (found) resolveUrl(found);
    });
    child.once('exit', (code) => reject(new Error(`tokenvault serve exited (${code}) before listening:\n${errors}`)));
  });
  return { child, url, adminKey, db, gc, errors: () => errors };
}

function processMemory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile') + field('RssShmem') };
}

function fileSize(path) {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

// --- the load ------------------------------------------------------------------------------------

async function setUp(url, adminKey) {
  const call = async (key, path, body) => {
    const response = await fetch(url + path, { method: 'POST', headers: { 'SVC-API-KEY': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const permissions = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'];
  const app = await call(adminKey, '/applications', { name: 'soak', type: 'private', permissions });
  const formula = await call(adminKey, '/reactor-formulas', {
    name: 'soak',
    code: 'module.exports = async function (req) { return { raw: { last4: String(req.args.card.number).slice(-4) } }; };',
    configuration: [],
    request_parameters: [{ name: 'card', type: 'object' }],
  });
  const reactor = await call(adminKey, '/reactors', { name: 'soak', formula: { id: formula.id }, configuration: {} });
  const card = await call(app.key, '/tokens', { type: 'card', data: CARD });
  return { key: app.key, reactorId: reactor.id, cardId: card.id };
}

/** Counters of one sampling window, and of the whole run. */
function counters() {
  return { requests: 0, failed: 0, behind: 0, statuses: new Map(), latencies: [] };
}

/** A card number that passes the Luhn check: 4242, eleven digits of `n`, a check digit. */
function cardNumber(n) {
  const body = `4242${String(n).padStart(11, '0').slice(-11)}`;
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    // From the right, the check digit's neighbour is doubled first.
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return body + String((10 - (sum % 10)) % 10);
}

function percentile(sorted, p) {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

function fit(points) {
  // Least-squares slope of (minutes, MB).
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

export async function run() {
  const dir = mkdtempSync(join(tmpdir(), 'tokenvault-soak-'));
  const server = await startServer(dir);
  const { child, url, db, gc } = server;
  let exited = false;
  child.once('exit', () => (exited = true));
  try {
    const { key, reactorId, cardId } = await setUp(url, server.adminKey);
    const headers = { 'SVC-API-KEY': key, 'content-type': 'application/json' };
    const live = [];
    let serial = 0;
    let inFlight = 0;
    let window = counters();
    const total = counters();
    const kinds = new Map();

    const patchHeaders = { ...headers, 'content-type': 'application/merge-patch+json' };
    /** The first failure's answer per kind and status (the vault's own problem text, no token data). */
    const firstFailures = new Map();
    const request = async (kind, method, path, body) => {
      inFlight++;
      const started = performance.now();
      let status = 0;
      let json;
      try {
        const response = await fetch(url + path, { method, headers: method === 'PATCH' ? patchHeaders : headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
        status = response.status;
        const text = await response.text();
        if (!response.ok && !firstFailures.has(`${kind} ${status}`)) firstFailures.set(`${kind} ${status}`, text.slice(0, 300));
        if (response.ok && text !== '') json = JSON.parse(text);
      } catch {
        status = -1;
      } finally {
        inFlight--;
      }
      const ms = performance.now() - started;
      for (const c of [window, total]) {
        c.requests++;
        if (status < 200 || status >= 300) {
          c.failed++;
          c.statuses.set(`${kind} ${status}`, (c.statuses.get(`${kind} ${status}`) ?? 0) + 1);
        }
      }
      window.latencies.push(ms);
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      return json;
    };

    const create = async () => {
      const n = serial++;
      const token = await request('create', 'POST', '/tokens', {
        type: 'card',
        data: { ...CARD, number: cardNumber(n) },
        metadata: { soak: 'yes', bucket: String(n % 50), n: String(n) },
        deduplicate_token: false,
      });
      if (token?.id) live.push(token.id);
    };
    const pick = () => live[Math.floor(Math.random() * live.length)];
    const one = () => {
      const r = Math.random();
      if (live.length < 50 || r < 0.2) return create();
      if (r < 0.4) return live.length > LIVE ? request('delete', 'DELETE', `/tokens/${live.shift()}`) : create();
      if (r < 0.75) return request('get', 'GET', `/tokens/${pick()}`);
      if (r < 0.85) return request('list', 'GET', `/tokens?metadata.bucket=${Math.floor(Math.random() * 50)}&size=20`);
      return request('update', 'PATCH', `/tokens/${pick()}`, { metadata: { soak: 'yes', touched: String(serial) } });
    };

    // The unawaited calls below end in request()'s catch: none can reject.
    const started = performance.now();
    let issued = 0;
    let nextReactor = 0;
    const samples = [];
    let nextSample = 0;
    console.log(
      `\n== soak: tokenvault serve on SQLite, ${SECONDS} s at ${RATE} req/s (live set ~${LIVE} tokens), a reactor call each second; sampled every ${SAMPLE_MS / 1000} s ==`,
    );
    console.log('  heap: the server main isolate after its latest GC (live: after its latest mark-compact); workers: the sum over worker isolates');
    console.log(
      `  ${'t s'.padStart(6)} ${'RSS MB'.padStart(7)} ${'anon'.padStart(6)} ${'file'.padStart(6)} ${'heap'.padStart(6)} ${'live'.padStart(6)} ${'commit'.padStart(6)} ${'workers'.padStart(7)} ${'db MB'.padStart(6)} ${'req/s'.padStart(6)} ${'p50 ms'.padStart(6)} ${'p99 ms'.padStart(6)} ${'fail'.padStart(5)} ${'behind'.padStart(6)}`,
    );
    const sample = (elapsedMs) => {
      const mem = processMemory(child.pid);
      const isolates = [...gc.isolates.values()].sort((a, b) => a.order - b.order);
      const main = isolates[0] ?? { after: NaN, committed: NaN, live: undefined };
      const workers = isolates.slice(1).reduce((s, i) => s + i.after, 0);
      const dbBytes = fileSize(db) + fileSize(`${db}-wal`);
      const lat = window.latencies.sort((a, b) => a - b);
      const row = {
        t: elapsedMs / 1000,
        rss: mem.rss / MB,
        anon: mem.anon / MB,
        file: mem.file / MB,
        heap: main.after,
        live: main.live,
        committed: main.committed,
        workers,
        db: dbBytes / MB,
      };
      samples.push(row);
      const f = (v, w = 6, d = 1) => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(d)).padStart(w);
      console.log(
        `  ${f(row.t, 6, 0)} ${f(row.rss, 7)} ${f(row.anon)} ${f(row.file)} ${f(row.heap)} ${f(row.live)} ${f(row.committed)} ${f(row.workers, 7)} ${f(row.db)} ${f(window.requests / (SAMPLE_MS / 1000), 6, 0)} ${f(percentile(lat, 50))} ${f(percentile(lat, 99))} ${String(window.failed).padStart(5)} ${String(window.behind).padStart(6)}`,
      );
      window = counters();
    };

    await new Promise((done) => {
      const tick = () => {
        if (exited) return done();
        const elapsed = performance.now() - started;
        if (elapsed >= nextSample) {
          sample(elapsed);
          nextSample += SAMPLE_MS;
        }
        if (elapsed >= SECONDS * 1000) return done();
        if (elapsed >= nextReactor) {
          void request('react', 'POST', `/reactors/${reactorId}/react`, { args: { card: `{{ ${cardId} }}` } });
          nextReactor += 1000;
        }
        const due = Math.floor((elapsed / 1000) * RATE) - issued;
        for (let i = 0; i < due; i++) {
          issued++;
          if (inFlight >= MAX_IN_FLIGHT) {
            window.behind++;
            total.behind++;
            continue;
          }
          void one();
        }
        setTimeout(tick, TICK_MS);
      };
      tick();
    });
    while (inFlight > 0 && !exited) await new Promise((r) => setTimeout(r, 20));
    if (exited) console.log(`  the server exited during the soak:\n${server.errors()}`);
    report(samples, total, kinds);
    for (const [what, text] of firstFailures) console.log(`  first ${what}: ${text}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (exited ? r() : child.once('exit', r)));
    rmSync(dir, { recursive: true, force: true });
  }
}

const signed = (mb) => `${mb >= 0 ? '+' : ''}${mb.toFixed(1)}`;

function report(samples, total, kinds) {
  console.log(
    `\n  requests: ${total.requests} (${[...kinds].map(([k, n]) => `${k} ${n}`).join(', ')}); failed ${total.failed}${total.failed ? ` (${[...total.statuses].map(([k, n]) => `${k}: ${n}`).join(', ')})` : ''}; skipped while ${MAX_IN_FLIGHT} were in flight: ${total.behind}`,
  );
  if (samples.length < 6) {
    console.log('  too few samples for a trend (run at least a minute)');
    return;
  }
  // The first sample is taken before any load: growth is measured from the second (warm) one.
  const warm = samples.slice(1);
  const third = Math.max(2, Math.floor(warm.length / 3));
  const slope = (rows, key) => fit(rows.filter((r) => r[key] !== undefined).map((r) => [r.t / 60, r[key]]));
  const first = warm.slice(0, third);
  const last = warm.slice(-third);
  const [a, z] = [warm[0], warm.at(-1)];
  const firstSlope = slope(first, 'rss');
  const lastSlope = slope(last, 'rss');
  const levelled = lastSlope <= Math.max(0.1, firstSlope * 0.25);
  // The same slopes less the page cache's filling (below): what would still grow once it is full.
  const net = (rows) => fit(rows.map((r) => [r.t / 60, r.rss - Math.min(r.db, CACHE_MIB) * 1.05]));
  console.log(`  RSS ${a.rss.toFixed(1)} → ${z.rss.toFixed(1)} MB from t=${a.t.toFixed(0)} s to t=${z.t.toFixed(0)} s (peak ${Math.max(...warm.map((r) => r.rss)).toFixed(1)} MB)`);
  console.log(
    `  RSS slope: first third ${firstSlope.toFixed(2)} MB/min, last third ${lastSlope.toFixed(2)} MB/min → ${levelled ? 'levelled off' : 'STILL GROWING'} (levelled = last ≤ max(0.1, ¼ of first))`,
  );
  console.log(`  RSS slope less the page cache's fill: first third ${net(first).toFixed(2)} MB/min, last third ${net(last).toFixed(2)} MB/min`);
  const heapLive = warm.filter((r) => r.live !== undefined);
  if (heapLive.length > 1) {
    console.log(`  main heap after mark-compact: ${heapLive[0].live.toFixed(1)} → ${heapLive.at(-1).live.toFixed(1)} MB (last third ${slope(last, 'live').toFixed(2)} MB/min)`);
  }
  // SQLite's page cache (one connection, cache_size 64 MiB) holds at most the pages of the database
  // it touched: it grows with the file until 64 MiB, then stays. Its growth over the run is then at
  // most min(db, 64) at the end less min(db, 64) at the start, plus ~5% of page headers.
  const cache = (db) => Math.min(db, CACHE_MIB) * 1.05;
  const explained = cache(z.db) - cache(a.db);
  const growth = z.rss - a.rss;
  const anonGrowth = z.anon - a.anon;
  console.log(
    `  database (file + WAL) ${a.db.toFixed(1)} → ${z.db.toFixed(1)} MB: the page cache can explain at most ${explained.toFixed(1)} MB of the ${signed(growth)} MB change in RSS (anonymous memory ${signed(anonGrowth)} MB, file/shared ${signed(z.file - a.file)} MB)`,
  );
  const rest = growth - Math.max(0, explained);
  console.log(
    `  not explained by the page cache: ${signed(rest)} MB${z.live !== undefined && a.live !== undefined ? ` (the main JS heap's live size moved ${signed(z.live - a.live)} MB)` : ''}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await run();
