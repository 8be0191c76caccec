/**
 * The docs read in order (docs/production.md links to the depth): every long page opens with a short
 * "In five minutes" section, and a local-testing switch that lets the vault reach loopback and
 * private addresses is named near the top of each page that needs it, not buried in the reference.
 * Plain file reads: no build, no vault.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const DOCS = join(import.meta.dirname, '..', '..', 'docs');
const LONG_PAGE_LINES = 150;
const FIVE_MINUTES_WITHIN = 25;
const SWITCH_WITHIN = 60;
const SWITCH = '--allow-private-network';

const PAGES = readdirSync(DOCS)
  .filter((name) => name.endsWith('.md'))
  .sort()
  .map((name) => ({ name, lines: readFileSync(join(DOCS, name), 'utf8').split('\n') }));

/** 1-based line of the first line matching, or undefined. */
function firstLine(lines: string[], test: (line: string) => boolean): number | undefined {
  const index = lines.findIndex(test);
  return index === -1 ? undefined : index + 1;
}

describe('docs/*.md read in order', () => {
  it('finds the pages', () => {
    expect(PAGES.length).toBeGreaterThan(10);
  });

  it(`every page longer than ${LONG_PAGE_LINES} lines has "## In five minutes" within its first ${FIVE_MINUTES_WITHIN} lines`, () => {
    const late = PAGES.filter((page) => page.lines.length > LONG_PAGE_LINES)
      .map((page) => ({ page: page.name, at: firstLine(page.lines, (line) => line.trim() === '## In five minutes') }))
      .filter(({ at }) => at === undefined || at > FIVE_MINUTES_WITHIN);
    expect(late).toEqual([]);
  });

  it(`every page that mentions ${SWITCH} mentions it within its first ${SWITCH_WITHIN} lines`, () => {
    const late = PAGES.map((page) => ({ page: page.name, at: firstLine(page.lines, (line) => line.includes(SWITCH)) })).filter(({ at }) => at !== undefined && at > SWITCH_WITHIN);
    expect(late).toEqual([]);
  });
});
