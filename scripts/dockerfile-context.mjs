// deploy/Dockerfile read as scripts/dockerfile-drill.mjs needs it: its instructions, its ENV
// pairs, and the build context that `COPY . .` receives (the repository less .dockerignore).
import { cpSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join, posix } from 'node:path';

/** The Dockerfile's instructions: continuation lines joined, comments dropped. */
export function instructions(text) {
  const out = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    if (pending === '' && /^\s*(#|$)/.test(raw)) continue;
    const line = raw.trimEnd();
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    const [, keyword, rest] = /^(\S+)\s*(.*)$/.exec(full);
    out.push({ keyword: keyword.toUpperCase(), rest });
  }
  return out;
}

/** ENV k=v k2=v2 (values without spaces, as deploy/Dockerfile writes them). */
export const envPairs = (rest) => Object.fromEntries(rest.split(/\s+/).map((pair) => pair.split(/=(.*)/s).slice(0, 2)));

/** .dockerignore patterns as matchers (Docker's syntax: `*`, `?`, `**`, `!` exceptions; last match wins). */
function ignoreRules(root) {
  const file = join(root, '.dockerignore');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = posix.normalize(line.slice(negate ? 1 : 0).replace(/^\/+/, ''));
      const source = pattern
        .split('**')
        .map((part) =>
          part
            .replace(/[.+^${}()|[\]\\]/g, '\\$&')
            .replace(/\*/g, '[^/]*')
            .replace(/\?/g, '[^/]'),
        )
        .join('.*');
      return { negate, regex: new RegExp(`^${source}$`) };
    });
}
function ignored(rules, path) {
  let out = false;
  const parts = path.split('/');
  for (const { negate, regex } of rules) {
    for (let i = 1; i <= parts.length; i++) if (regex.test(parts.slice(0, i).join('/'))) out = !negate;
  }
  return out;
}

/** Copies the build context `root` (the repository, less .dockerignore's entries) into `to`. */
export function copyContext(root, to) {
  const rules = ignoreRules(root);
  const walk = (rel) => {
    for (const name of readdirSync(join(root, rel))) {
      const path = rel === '' ? name : `${rel}/${name}`;
      if (ignored(rules, path)) continue;
      const stat = lstatSync(join(root, path));
      if (stat.isDirectory()) walk(path);
      else {
        mkdirSync(join(to, rel), { recursive: true });
        cpSync(join(root, path), join(to, path), { verbatimSymlinks: true });
      }
    }
  };
  walk('');
}

/**
 * The lockfile's packages a production tree must not hold: those only the development tree needs
 * (`dev`), and those npm counts in both trees (`devOptional`) that no production package names as
 * an optional dependency, that is which production packages name only as an optional peer (npm
 * installs no optional peer by itself, but `npm prune --omit=dev` keeps one the dev tree brought).
 */
export function developmentOnly(lock) {
  const optionalOfProduction = new Set();
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (!entry.dev && !entry.devOptional) for (const name of Object.keys(entry.optionalDependencies ?? {})) optionalOfProduction.add(name);
    if (path === '') for (const name of Object.keys(entry.optionalDependencies ?? {})) optionalOfProduction.add(name);
  }
  return Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && (entry.dev || (entry.devOptional && !optionalOfProduction.has(path.replace(/^.*node_modules\//, '')))))
    .map(([path]) => path);
}
