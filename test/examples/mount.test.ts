import { describe, expect, it } from 'vitest';
import { main as express } from '../../examples/mount-express.js';
import { main as hono } from '../../examples/mount-hono.js';
import { main as nodeHttp } from '../../examples/mount-node-http.js';

const quiet = () => undefined;

describe('mounting examples', () => {
  it('node:http: creates a card token over HTTP and reads it back masked', async () => {
    const result = await nodeHttp(quiet);
    expect(result.created.status).toBe(201);
    expect(result.fetched.status).toBe(200);
    expect(result.fetched.body.id).toBe(result.created.body.id);
    expect(result.fetched.body.data.number).toBe('XXXXXXXXXXXX4242');
  });

  it('Express: mounted under /vault beside the app’s own routes', async () => {
    const result = await express(quiet);
    expect([result.created.status, result.fetched.status]).toEqual([201, 200]);
    expect(result.fetched.body.data.number).toBe('XXXXXXXXXXXX4242');
    expect(JSON.parse(result.own)).toEqual({ hello: 'world' });
  });

  it('Hono: mounted under /vault beside the app’s own routes', async () => {
    const result = await hono(quiet);
    expect([result.created.status, result.fetched.status]).toEqual([201, 200]);
    expect(result.fetched.body.data.number).toBe('XXXXXXXXXXXX4242');
    expect(JSON.parse(result.own)).toEqual({ hello: 'world' });
  });
});
