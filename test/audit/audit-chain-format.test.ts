/**
 * The text an entry's hash covers is fixed (docs/audit.md): chains sealed before stay verifiable
 * only while it is exactly the previous hash followed by JSON.stringify of the entry's fields. The
 * sealer builds it field by field for speed; this pins it to that definition, tricky strings
 * included. A pure function: no store involved.
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { linkHexes, linkText } from '../../src/audit/audit-chain.js';
import type { StoredAuditEntry } from '../../src/storage/store.js';

const PREVIOUS = 'ab'.repeat(32);

function reference(index: number, e: StoredAuditEntry): string {
  return PREVIOUS + JSON.stringify([index, e.seq, e.tenantId, e.actor, e.operation, e.resourceId, e.outcome, e.detail, e.at]);
}

const entry = (overrides: Partial<StoredAuditEntry>): StoredAuditEntry => ({
  seq: 12,
  tenantId: '3b1f0c2a-1111-4222-8333-444455556666',
  actor: 'system:audit',
  operation: 'token:read',
  resourceId: null,
  outcome: 'success',
  detail: null,
  at: 1_764_690_000_123,
  ...overrides,
});

const TRICKY = [
  '',
  'plain',
  'quote"inside',
  'back\\slash',
  'new\nline',
  'tab\t',
  '\u0000nul',
  '\u001f',
  '\u007f',
  'é and ü',
  '\u2028\u2029',
  '😀 pair',
  '\ud800 lone high',
  'lone low \udc00',
  '</script>',
  '{"json":[1,2]}',
];

describe('audit chain hash text', () => {
  it('is the previous hash then JSON.stringify of the fields, for every kind of string and number', () => {
    for (const s of TRICKY) {
      for (const e of [entry({ actor: s }), entry({ resourceId: s }), entry({ detail: s }), entry({ operation: s, tenantId: s })]) {
        expect(linkText(PREVIOUS, 7, e)).toBe(reference(7, e));
      }
    }
    for (const at of [0, -1, 2 ** 53 - 1, 1.5, Number.NaN]) expect(linkText(PREVIOUS, 1, entry({ at }))).toBe(reference(1, entry({ at })));
  });

  it('matches on random strings over the whole UTF-16 range', () => {
    let seed = 42;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
    for (let n = 0; n < 2000; n++) {
      const chars = Array.from({ length: next() % 12 }, () => String.fromCharCode(next() % 4 === 0 ? next() % 0x80 : next() % 0x10000));
      const e = entry({ resourceId: chars.join(''), detail: n % 2 === 0 ? null : chars.reverse().join('') });
      expect(linkText(PREVIOUS, n, e)).toBe(reference(n, e));
    }
  });
});

describe('audit chain hashes of a batch', () => {
  it('equal SHA-256 of the reference text, entry after entry, when the repeated fields change and change back', () => {
    const fields = ['a', 'b"q', 'a'];
    const run = Array.from({ length: 9 }, (_, i) =>
      entry({ seq: 100 + i, actor: fields[i % 3]!, operation: fields[(i >> 1) % 3]!, outcome: i % 4 === 0 ? 'failure' : 'success', tenantId: i < 5 ? 't1' : 't\n2' }),
    );
    let previous = PREVIOUS;
    const expected = run.map(
      (e, i) =>
        (previous = createHash('sha256')
          .update(previous + JSON.stringify([10 + i + 1, e.seq, e.tenantId, e.actor, e.operation, e.resourceId, e.outcome, e.detail, e.at]), 'utf8')
          .digest('hex')),
    );
    expect(linkHexes(PREVIOUS, 10, run)).toEqual(expected);
  });
});
