/**
 * What a maintainer who clones the repository can follow: comments in src/ give reasons, not
 * one-off figures (those live in docs/performance.md with how they were taken), and neither the
 * comments nor the docs cite issue numbers or numbered findings, which only the team that filed
 * them could look up. Plain file reads: no build, no vault.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** Every file below `dir` whose name ends with `suffix`. */
function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(suffix))
    .map((name) => join(dir, name));
}

/** The comment text of each line of a TypeScript file: whole comment lines, and what follows a trailing `// `. */
export function commentLines(text: string): { line: number; comment: string }[] {
  const out: { line: number; comment: string }[] = [];
  text.split('\n').forEach((raw, i) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith('//') || trimmed.startsWith('*') || trimmed.startsWith('/*')) out.push({ line: i + 1, comment: trimmed });
    else if (raw.includes(' // ')) out.push({ line: i + 1, comment: raw.slice(raw.indexOf(' // ')) });
  });
  return out;
}

/** A figure measured once: microseconds or nanoseconds, a percentage, an "N x slower". */
export const FIGURE = /\b\d+(?:\.\d+)?\s?(?:µs|ns)\b|\b\d+(?:\.\d+)?\s?%(?=[\s,.;:)]|$)|\b\d+(?:\.\d+)?x (?:slower|faster|cheaper|dearer)\b/;
/** An issue number or a numbered finding: `issue 35`, `issue #35`, `finding 4`. */
export const CITATION = /\b(?:issues?|findings?)\s+#?\d+/i;

const where = (file: string, line: number, text: string) => `${relative(ROOT, file)}:${line}: ${text}`;

describe('what a maintainer can follow', () => {
  const sources = filesUnder(join(ROOT, 'src'), '.ts').map((file) => ({ file, comments: commentLines(readFileSync(file, 'utf8')) }));
  const docs = [...filesUnder(join(ROOT, 'docs'), '.md'), join(ROOT, 'README.md'), join(ROOT, 'ARCHITECTURE.md')];

  it('reads the sources', () => {
    expect(sources.length).toBeGreaterThan(100);
    expect(sources.some(({ comments }) => comments.length > 0)).toBe(true);
  });

  it('no comment in src/ gives a one-off figure (docs/performance.md holds them, with how they were taken)', () => {
    const found = sources.flatMap(({ file, comments }) => comments.filter(({ comment }) => FIGURE.test(comment)).map(({ line, comment }) => where(file, line, comment)));
    expect(found).toEqual([]);
  });

  it('no comment in src/ and no page of the docs cites an issue number or a numbered finding', () => {
    const inSources = sources.flatMap(({ file, comments }) => comments.filter(({ comment }) => CITATION.test(comment)).map(({ line, comment }) => where(file, line, comment)));
    const inDocs = docs.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((text, i) => (CITATION.test(text) ? [where(file, i + 1, text)] : [])),
    );
    expect([...inSources, ...inDocs]).toEqual([]);
  });

  it('the patterns catch what they are for, and not the reasons around them', () => {
    expect(FIGURE.test('// this took the CPU per read from 85 to 52 µs')).toBe(true);
    expect(FIGURE.test(' * the prepared context was there for 15% of runs')).toBe(true);
    expect(FIGURE.test(' * a loop runs about 1.3x slower')).toBe(true);
    expect(FIGURE.test(' * a flush every 50 ms, at most 64 K characters')).toBe(false);
    expect(FIGURE.test(" * @example likeSubstringPattern('Pay*100%') // '%pay%100\\%%'")).toBe(false);
    expect(CITATION.test('// see issue #35')).toBe(true);
    expect(CITATION.test('(finding 4)')).toBe(true);
    expect(CITATION.test('// an issue with the 3 settings')).toBe(false);
    expect(commentLines('const a = 1; // 3 µs\n/**\n * text\n */\nconst b = "50%";')).toEqual([
      { line: 1, comment: ' // 3 µs' },
      { line: 2, comment: '/**' },
      { line: 3, comment: '* text' },
      { line: 4, comment: '*/' },
    ]);
  });
});
