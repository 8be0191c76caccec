#!/usr/bin/env node
// `npm start`: builds dist/ if a source is newer, then runs `tokenvault serve` in this same process
// (no shell or second node in between), so SIGTERM and SIGINT from npm, Docker or systemd reach the
// server, which drains and frees its port and database. Arguments after `npm start --` are serve's.
import { buildIfStale } from './build-if-stale.mjs';

buildIfStale();
const { main } = await import('../dist/cli.js');
await main(['serve', ...process.argv.slice(2)]);
