import { describe, expect, it } from 'vitest';
import { isAncestorOrSelf, normalizeContainer, normalizeContainers } from '../../src/auth/containers.js';
import { errorsOf } from '../support/field-errors.js';

describe('normalizeContainer', () => {
  it('accepts paths of [a-z0-9_-] segments and lower-cases them', () => {
    expect(normalizeContainer('/pci/high/', 'c')).toBe('/pci/high/');
    expect(normalizeContainer('/PCI/High/', 'c')).toBe('/pci/high/');
    expect(normalizeContainer('/a_b-c/0/', 'c')).toBe('/a_b-c/0/');
    expect(normalizeContainer('/', 'c')).toBe('/');
  });
  it.each([
    ['missing leading slash', 'pci/high/'],
    ['missing trailing slash', '/pci/high'],
    ['empty segment', '/pci//high/'],
    ['double root', '//'],
    ['space', '/pci high/'],
    ['dot', '/pci.high/'],
    ['dot-dot', '/pci/../'],
    ['non-ASCII', '/pcí/'],
    ['backslash', '\\pci\\'],
    ['empty', ''],
  ])('rejects a path with %s, naming the field', (_label, path) => {
    const errors = errorsOf(() => normalizeContainer(path, 'containers[3]'));
    expect(Object.keys(errors)).toEqual(['containers[3]']);
  });
  it('rejects non-strings and over-long paths', () => {
    expect(errorsOf(() => normalizeContainer(42, 'c'))).toEqual({ c: ['must be a string'] });
    expect(errorsOf(() => normalizeContainer(null, 'c'))).toEqual({ c: ['must be a string'] });
    expect(normalizeContainer('/' + 'a/'.repeat(255), 'c')).toHaveLength(511);
    expect(errorsOf(() => normalizeContainer('/' + 'a/'.repeat(256), 'c'))).toEqual({ c: ['must be at most 512 characters'] });
  });
});

describe('normalizeContainers', () => {
  it('normalizes and deduplicates, keeping first-seen order', () => {
    expect(normalizeContainers(['/B/', '/a/', '/b/', '/A/'])).toEqual(['/b/', '/a/']);
  });
  it('requires a non-empty array', () => {
    expect(errorsOf(() => normalizeContainers([]))).toEqual({ containers: ['must name at least one container'] });
    expect(errorsOf(() => normalizeContainers('/pci/'))).toEqual({ containers: ['must be an array of container paths'] });
    expect(errorsOf(() => normalizeContainers(null, 'rules[0].containers'))).toEqual({ 'rules[0].containers': ['must be an array of container paths'] });
  });
  it('reports every bad element with its index at once', () => {
    const errors = errorsOf(() => normalizeContainers(['/ok/', 'bad', '/ok/', 7, '/x//']));
    expect(Object.keys(errors)).toEqual(['containers[1]', 'containers[3]', 'containers[4]']);
  });
  it('caps the count at 100', () => {
    const many = Array.from({ length: 101 }, (_, i) => `/c${i}/`);
    expect(errorsOf(() => normalizeContainers(many))).toEqual({ containers: ['must name at most 100 containers'] });
    expect(normalizeContainers(many.slice(1))).toHaveLength(100);
  });
});

describe('isAncestorOrSelf', () => {
  it('matches itself, its ancestors and the root', () => {
    expect(isAncestorOrSelf('/pci/high/', '/pci/high/')).toBe(true);
    expect(isAncestorOrSelf('/pci/', '/pci/high/')).toBe(true);
    expect(isAncestorOrSelf('/', '/pci/high/')).toBe(true);
  });
  it('does not match descendants, siblings or segment prefixes', () => {
    expect(isAncestorOrSelf('/pci/high/', '/pci/')).toBe(false);
    expect(isAncestorOrSelf('/pci/low/', '/pci/high/')).toBe(false);
    expect(isAncestorOrSelf('/pci/', '/pcie/')).toBe(false);
    expect(isAncestorOrSelf('/pci/hi/', '/pci/high/')).toBe(false);
  });
  it('ignores case', () => {
    expect(isAncestorOrSelf('/PCI/', '/pci/high/')).toBe(true);
  });
});
