// Server CPU per request of several `tokenvault serve` processes (and a bare node:http server),
// interleaved round by round, as users start them (defaults unless flags are given). For changes
// smaller than this shared machine's noise, where table.mjs's one run per build is not enough.
// Not part of `npm run bench`.
//   node test/bench/compare-serve.mjs GET|POST <rounds> <seconds> <server> [<server> ...]
// where a server is `bare` or `<name>=<dist>[:<flag>,<flag>...]`, e.g. the access-log row before and after:
//   node test/bench/compare-serve.mjs GET 6 3 old=/tmp/old/dist old-quiet=/tmp/old/dist:--access-log,off new=dist new-quiet=dist:--access-log,off
// (a dist copied outside the repository needs a package.json with "type": "module" and a
// node_modules link beside it). Prints each server's median CPU (user + system, /proc) per request.
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { startServe } from './http.mjs';
import { cpuSeconds, startBare } from './table.mjs';

const [method = 'GET', rounds = '6', seconds = '3', ...specs] = process.argv.slice(2);
if (!['GET', 'POST'].includes(method) || specs.length === 0) {
  console.error('usage: node test/bench/compare-serve.mjs GET|POST <rounds> <seconds> bare|<name>=<dist>[:<flags>] ...');
  process.exit(2);
}
const CARD = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031 };
const cpuMs = (pid) => cpuSeconds([pid]) * 1000;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function start(spec) {
  if (spec === 'bare') return { name: 'bare', ...(await startBare()) };
  const [name, rest] = spec.split('=');
  const [dist, flags = ''] = rest.split(':');
  const db = join(mkdtempSync(join(tmpdir(), 'tokenvault-compare-serve-')), 'bench.db');
  return { name, ...(await startServe(join(resolve(dist), 'cli.js'), ['--db', db, ...flags.split(',').filter(Boolean)])) };
}

const servers = [];
for (const spec of specs) servers.push({ ...(await start(spec)), cpu: [], rps: [] });
try {
  // Round 0 warms every server up and is not counted.
  for (let round = 0; round <= Number(rounds); round++) {
    for (const server of servers) {
      const options = {
        url: server.url + (method === 'GET' ? server.path : '/tokens'),
        connections: 32,
        method,
        duration: round === 0 ? 1 : Number(seconds),
        headers: { 'SVC-API-KEY': server.key, 'content-type': 'application/json' },
      };
      if (method === 'POST') options.body = JSON.stringify({ type: 'card', data: CARD, deduplicate_token: false });
      const before = cpuMs(server.child.pid);
      const result = await autocannon(options);
      if (round === 0) continue;
      server.cpu.push(((cpuMs(server.child.pid) - before) * 1000) / result.requests.total);
      server.rps.push(result.requests.total / Number(seconds));
    }
  }
  for (const s of servers) {
    console.log(
      `${method} ${s.name.padEnd(16)} server CPU ${median(s.cpu).toFixed(1).padStart(6)} µs/request  ${median(s.rps).toFixed(0).padStart(6)} req/s  (by round: ${s.cpu.map((x) => x.toFixed(0)).join(', ')})`,
    );
  }
} finally {
  for (const { child } of servers) {
    if (child.exitCode !== null) continue;
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}
process.exit(0);
