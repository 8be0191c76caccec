import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { STORE_AREAS } from '../src/storage/store-parts.js';

// ARCHITECTURE.md's tables are the map a newcomer reads first: they must say what src/ holds.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const text = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');

/** The rows of the Markdown table whose header starts with `header`, as cells. */
function table(header: string): string[][] {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`| ${header}`));
  expect(start, `a table headed "${header}"`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

const ticked = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [relative(ROOT, path)];
  });
}

/** `test/storage/{a,b}-store.test.ts`, `src/storage/*\/x.ts`: brace alternatives and `*` within one path segment. */
function globMatches(glob: string, files: string[]): boolean {
  const braces = /\{([^}]*)\}/.exec(glob);
  if (braces !== null) return braces[1]!.split(',').some((alternative) => globMatches(glob.replace(braces[0], alternative), files));
  const pattern = new RegExp(`^${glob.replace(/[.+^$()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
  return files.some((file) => pattern.test(file));
}

describe('ARCHITECTURE.md', () => {
  it('its folder table names every folder of src/, and only folders that exist', () => {
    const named = table('Folder').flatMap(([folders]) => ticked(folders!));
    for (const path of named) expect(existsSync(join(ROOT, path)), path).toBe(true);
    const folders = readdirSync(join(ROOT, 'src')).filter((name) => statSync(join(ROOT, 'src', name)).isDirectory());
    for (const folder of folders) expect(named, `src/${folder}/ in the folder table`).toContain(`src/${folder}/`);
  });

  it("its store-area table lists STORE_AREAS in order, each area's parts files that exist", () => {
    const rows = table('Area (`STORE_AREAS`');
    expect(rows.map(([area]) => ticked(area!)[0])).toEqual(Object.keys(STORE_AREAS));
    for (const [, sqlite, postgres] of rows) {
      for (const cell of [sqlite!, postgres!]) {
        const file = cell.split(' ')[0]!;
        expect(existsSync(join(ROOT, 'src/storage', file)), file).toBe(true);
      }
    }
  });

  it('every test path or glob it names matches a file', () => {
    const files = filesUnder(join(ROOT, 'test'));
    const named = [...text.matchAll(/`(test\/[^`\s]+)`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(0);
    for (const glob of named) expect(globMatches(glob, files), glob).toBe(true);
  });
});
