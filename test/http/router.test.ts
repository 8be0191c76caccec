import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import { Router } from '../../src/http/router.js';
import { logListQuery, reactorListQuery, tokenListQuery } from '../../src/http/query.js';

const router = new Router<{ method: string; path: string; name: string }>()
  .add({ method: 'GET', path: '/tokens', name: 'list' })
  .add({ method: 'POST', path: '/tokens', name: 'create' })
  .add({ method: 'GET', path: '/tokens/{id}', name: 'get' })
  .add({ method: 'DELETE', path: '/tokens/{id}', name: 'delete' })
  .add({ method: 'POST', path: '/tokens/search', name: 'search' })
  .add({ method: 'POST', path: '/reactors/{id}/react', name: 'react' });

describe('Router', () => {
  it('matches literals and parameters, percent-decoding parameters', () => {
    expect(router.match('GET', '/tokens')).toMatchObject({ kind: 'found', route: { name: 'list' } });
    expect(router.match('GET', '/tokens/a%2Fb%20c')).toMatchObject({ kind: 'found', route: { name: 'get' }, params: { id: 'a/b c' } });
    expect(router.match('POST', '/reactors/r1/react')).toMatchObject({ kind: 'found', route: { name: 'react' }, params: { id: 'r1' } });
  });

  it('a literal route wins for its method; other methods fall to the parameter route', () => {
    expect(router.match('POST', '/tokens/search')).toMatchObject({ route: { name: 'search' } });
    expect(router.match('GET', '/tokens/search')).toMatchObject({ route: { name: 'get' }, params: { id: 'search' } });
  });

  it('405 lists every method allowed on the path', () => {
    expect(router.match('PUT', '/tokens')).toEqual({ kind: 'method_not_allowed', allow: ['GET', 'POST'] });
    expect(router.match('PUT', '/tokens/search')).toEqual({ kind: 'method_not_allowed', allow: ['DELETE', 'GET', 'POST'] });
  });

  it('is exact: no empty parameter, case-sensitive, at most one trailing slash', () => {
    for (const path of ['/tokens//', '/Tokens', '/tokens/a/b', '', '/reactors//react', '/reactors/r1/react//', '//']) {
      expect(router.match('GET', path).kind, path).toBe('not_found');
    }
  });

  it('one trailing slash routes like the path without it (as the Basis Theory SDK sends collection paths)', () => {
    expect(router.match('GET', '/tokens/')).toMatchObject({ kind: 'found', route: { name: 'list' } });
    expect(router.match('POST', '/tokens/')).toMatchObject({ kind: 'found', route: { name: 'create' } });
    expect(router.match('GET', '/tokens/t1/')).toMatchObject({ kind: 'found', route: { name: 'get' }, params: { id: 't1' } });
    expect(router.match('POST', '/reactors/r1/react/')).toMatchObject({ kind: 'found', route: { name: 'react' } });
    expect(router.match('PUT', '/tokens/')).toEqual({ kind: 'method_not_allowed', allow: ['GET', 'POST'] });
  });

  it('malformed percent-encoding in a parameter is a ValidationError', () => {
    expect(() => router.match('GET', '/tokens/%E0%A4%A')).toThrow(ValidationError);
  });

  it('refuses duplicate routes', () => {
    expect(() => new Router().add({ method: 'GET', path: '/a' }).add({ method: 'GET', path: '/a' })).toThrow(/Duplicate/);
  });
});

describe('query parsing', () => {
  it('tokens: repeatable id and type, metadata.<key> keeps the first of a repeated key, paging, unknown ignored', () => {
    const params = new URLSearchParams('id=a&id=b&type=card&metadata.customer=acme&metadata.customer=other&metadata.plan=gold&page=2&size=5&colour=blue');
    expect(tokenListQuery(params)).toEqual({ id: ['a', 'b'], type: ['card'], metadata: { customer: 'acme', plan: 'gold' }, page: '2', size: '5' });
    expect(tokenListQuery(new URLSearchParams(''))).toEqual({});
    expect(tokenListQuery(new URLSearchParams('metadata.__proto__=x')).metadata).toEqual(JSON.parse('{"__proto__":"x"}'));
  });

  it('reactors: repeatable id, name, start', () => {
    expect(reactorListQuery(new URLSearchParams('id=1&id=2&name=char*&start=abc&name=ignored'))).toEqual({ id: ['1', '2'], name: 'char*', start: 'abc' });
  });

  it('logs: resource_id, actor, operation', () => {
    expect(logListQuery(new URLSearchParams('resource_id=t1&actor=a1&operation=token:read&x=1'))).toEqual({ resource_id: 't1', actor: 'a1', operation: 'token:read' });
  });
});
