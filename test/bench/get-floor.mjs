// GET /tokens/{id} (a card, masked, defaults, access log on): server CPU per request of `tokenvault
// serve` builds beside the floor server (../shared/bench/floor.mjs, unchanged), interleaved round by
// round in one run. Prints each server's median CPU per request and its ratio to the floor's.
//   node test/bench/get-floor.mjs <rounds> <seconds> <name>=<dist> [<name>=<dist> ...]
// e.g. before and after a change: node test/bench/get-floor.mjs 6 3 before=/path/to/old/dist after=dist
// FLOOR overrides the floor server's path (default ../shared/bench/floor.mjs beside the checkout).
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { floorFile as defaultFloorFile, startFloor } from './floor-table.mjs';
import { startServe } from './http.mjs';
import { cpuSeconds } from './table.mjs';

const [rounds = '6', seconds = '3', ...specs] = process.argv.slice(2);
const floorFile = process.env.FLOOR ? resolve(process.env.FLOOR) : defaultFloorFile();
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const temp = () => join(mkdtempSync(join(tmpdir(), 'tokenvault-get-floor-')), 'bench.db');

const servers = [{ name: 'floor', ...(await startFloor(floorFile, temp())) }];
for (const spec of specs) {
  const [name, dist] = spec.split('=');
  servers.push({ name, ...(await startServe(join(resolve(dist), 'cli.js'), ['--db', temp()])) });
}
for (const server of servers) server.cpu = [];
try {
  for (let round = 0; round <= Number(rounds); round++) {
    for (const server of servers) {
      const before = cpuSeconds([server.child.pid]);
      const result = await autocannon({ url: server.url + server.path, connections: 32, duration: round === 0 ? 1 : Number(seconds), headers: { 'SVC-API-KEY': server.key } });
      if (result.non2xx > 0) throw new Error(`${server.name}: ${result.non2xx} answers were not 2xx`);
      if (round > 0) server.cpu.push(((cpuSeconds([server.child.pid]) - before) * 1e6) / result.requests.total);
    }
  }
  const floor = median(servers[0].cpu);
  for (const s of servers) {
    console.log(
      `GET ${s.name.padEnd(10)} ${median(s.cpu).toFixed(1).padStart(6)} µs/request  ${(median(s.cpu) / floor).toFixed(2)}x the floor  (by round: ${s.cpu.map((x) => x.toFixed(0)).join(', ')})`,
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
