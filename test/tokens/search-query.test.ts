import { describe, expect, it } from 'vitest';
import { parseSearchQuery } from '../../src/tokens/search-query.js';
import { errorsOf } from '../support/field-errors.js';

const messageOf = (query: unknown): string => {
  const errors = errorsOf(() => parseSearchQuery(query));
  expect(Object.keys(errors)).toEqual(['query']);
  return errors['query']![0]!;
};

describe('parseSearchQuery', () => {
  it('parses every field', () => {
    expect(parseSearchQuery('data:4242 type:card container:/pci/high/ fingerprint:abc id:tok_1 metadata.customer:42')).toEqual([
      { field: 'data', value: '4242' },
      { field: 'type', value: 'card' },
      { field: 'container', value: '/pci/high/' },
      { field: 'fingerprint', value: 'abc' },
      { field: 'id', value: 'tok_1' },
      { field: 'metadata', key: 'customer', value: '42' },
    ]);
  });
  it('joins terms with AND in any case, or with whitespace alone', () => {
    const expected = [
      { field: 'type', value: 'card' },
      { field: 'id', value: 'x' },
      { field: 'data', value: 'y' },
    ];
    expect(parseSearchQuery('type:card AND id:x and data:y')).toEqual(expected);
    expect(parseSearchQuery('  type:card \t id:x\ndata:y  ')).toEqual(expected);
    expect(parseSearchQuery('type:card And id:x data:y')).toEqual(expected);
  });
  it('reads quoted values with spaces, colons and escapes', () => {
    expect(parseSearchQuery('metadata.name:"ACME Inc: HQ" AND data:"say \\"hi\\" \\\\ ok"')).toEqual([
      { field: 'metadata', key: 'name', value: 'ACME Inc: HQ' },
      { field: 'data', value: 'say "hi" \\ ok' },
    ]);
    expect(parseSearchQuery('data:"a\\b"')).toEqual([{ field: 'data', value: 'a\\b' }]);
    expect(parseSearchQuery('data:"AND"')).toEqual([{ field: 'data', value: 'AND' }]);
  });
  it('keeps colons after the first in an unquoted value', () => {
    expect(parseSearchQuery('id:urn:tok:1')).toEqual([{ field: 'id', value: 'urn:tok:1' }]);
  });
  it('reads field names in any case and keeps metadata keys as written', () => {
    expect(parseSearchQuery('TYPE:card Metadata.Customer:Acme')).toEqual([
      { field: 'type', value: 'card' },
      { field: 'metadata', key: 'Customer', value: 'Acme' },
    ]);
  });
  it('normalizes container values and rejects bad container paths', () => {
    expect(parseSearchQuery('container:/PCI/High/')).toEqual([{ field: 'container', value: '/pci/high/' }]);
    expect(messageOf('container:pci')).toContain('term 1: container must be a path');
  });

  it.each([
    ['empty', ''],
    ['blank', '   '],
    ['not a string', 42],
    ['OR', 'type:card OR type:bank'],
    ['NOT', 'NOT type:card'],
    ['unknown field', 'name:bob'],
    ['metadata without key', 'metadata:x'],
    ['metadata with empty key', 'metadata.:x'],
    ['empty value', 'type:'],
    ['empty quoted value', 'type:""'],
    ['no colon', 'card'],
    ['unclosed quote', 'data:"abc'],
    ['stray quote', 'data:ab"c'],
    ['text after quote', 'data:"ab"c'],
    ['quoted field', '"type":card'],
    ['leading AND', 'AND type:card'],
    ['trailing AND', 'type:card AND'],
    ['double AND', 'type:card AND AND id:x'],
    ['parentheses', '(type:card)'],
  ])('rejects %s on the field query with the allowed syntax', (_label, query) => {
    expect(messageOf(query)).toContain('fields: data, type, container, fingerprint, id, metadata.<key>');
  });

  it('says what is wrong', () => {
    expect(messageOf('type:card OR id:x')).toContain('OR is not supported');
    expect(messageOf('type:card name:x')).toContain('term 2 has an unknown field');
    expect(messageOf('data:"abc')).toContain('term 1 has an unclosed quote');
    expect(messageOf('type:')).toContain('term 1 has an empty value');
    expect(messageOf('')).toContain('must not be empty');
  });

  it('never repeats the query text in its messages', () => {
    expect(messageOf('data:"4242424242424242')).not.toContain('4242');
    expect(messageOf('4242424242424242:x')).not.toContain('4242');
  });
});
