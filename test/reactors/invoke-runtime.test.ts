/** What a running reactor sees and does: req.bt, tokenize, errors, nesting, console, audit. */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, ReactorError, ValidationError, statusOf } from '../../src/errors/errors.js';
import { type Fixture, VISA, fixture, rejection } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('reactor runtime', (store) => {
  // One vault per block, not per test: each test makes its own reactors, applications and tokens
  // and looks only at those, so sharing the vault (a fresh PostgreSQL schema each) checks the same.
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture({}, store);
  });

  describe('req', () => {
    it('holds args, configuration, and bt null without an application', async () => {
      const id = await f.reactor('module.exports = (req) => ({ raw: { args: req.args, configuration: req.configuration, bt: req.bt } })', {
        declarations: { configuration: [{ name: 'key', type: 'string' }] },
        configuration: { key: 'k1' },
      });
      await expect(f.vault.reactors.react(f.user, id, { args: { a: 1 } })).resolves.toEqual({ raw: { args: { a: 1 }, configuration: { key: 'k1' }, bt: null } });
    });

    it('returns an empty response when the code returns nothing, and refuses other shapes', async () => {
      await expect(f.vault.reactors.react(f.user, await f.reactor('module.exports = () => {}'), {})).resolves.toEqual({});
      const wrongId = await f.reactor('module.exports = () => ({ data: 1 })');
      const wrong = await rejection(() => f.vault.reactors.react(f.user, wrongId, {}));
      expect(wrong).toBeInstanceOf(ReactorError);
      expect(wrong).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
      expect(wrong.message).toMatch(/\{ raw, tokenize \}.*'data'/);
      const scalarId = await f.reactor('module.exports = () => 42');
      const scalar = await rejection(() => f.vault.reactors.react(f.user, scalarId, {}));
      expect(scalar).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
    });
  });

  describe('req.bt acts as the reactor application, with exactly its permissions and rules', () => {
    const RETRIEVE = `module.exports = async (req) => {
    try {
      const token = await req.bt.tokens.retrieve(req.args.id);
      return { raw: { ok: true, data: token.data } };
    } catch (e) {
      return { raw: { ok: false, name: e.name, status: e.status } };
    }
  }`;

    it("a public application's bt cannot read tokens: the reactor sees a 403", async () => {
      const pub = await f.vault.caller({ permissions: ['token:create', 'token:update'], type: 'public' });
      const id = await f.reactor(RETRIEVE, { application: pub.applicationId });
      const token = await f.vault.tokens.create(f.user, { type: 'token', data: 'secret' });
      await expect(f.vault.reactors.react(f.user, id, { args: { id: token.id } })).resolves.toEqual({ raw: { ok: false, name: 'AuthorizationError', status: 403 } });
    });

    it('a private application reads through its own rules (reveal here, mask there, nothing elsewhere)', async () => {
      const app = await f.vault.caller({
        permissions: ['token:read'],
        rules: [
          { priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:read'] },
          { priority: 2, container: '/pci/', transform: 'mask', permissions: ['token:read'] },
        ],
      });
      const id = await f.reactor(RETRIEVE, { application: app.applicationId });
      const general = await f.vault.tokens.create(f.user, { type: 'token', data: 'plain' });
      const card = await f.vault.tokens.create(f.user, { type: 'card', data: VISA });
      const ssn = await f.vault.tokens.create(f.user, { type: 'social_security_number', data: '123-45-6789' });
      await expect(f.vault.reactors.react(f.user, id, { args: { id: general.id } })).resolves.toEqual({ raw: { ok: true, data: 'plain' } });
      const masked = (await f.vault.reactors.react(f.user, id, { args: { id: card.id } })) as { raw: { data: { number: string } } };
      expect(masked.raw.data.number).toBe('XXXXXXXXXXXX4242');
      // No grant at all on the ssn: the reactor's application is told what it would be told of a missing id.
      await expect(f.vault.reactors.react(f.user, id, { args: { id: ssn.id } })).resolves.toEqual({ raw: { ok: false, name: 'NotFoundError', status: 404 } });
      await expect(f.vault.reactors.react(f.user, id, { args: { id: 'no-such-token' } })).resolves.toEqual({ raw: { ok: false, name: 'NotFoundError', status: 404 } });
    });

    it('uses the application as it is at invoke time', async () => {
      const app = await f.vault.caller({ name: 'later', permissions: ['token:create'], type: 'private' });
      const id = await f.reactor(RETRIEVE, { application: app.applicationId });
      const token = await f.vault.tokens.create(f.user, { type: 'token', data: 'secret' });
      await expect(f.vault.reactors.react(f.user, id, { args: { id: token.id } })).resolves.toMatchObject({ raw: { ok: false, status: 403 } });
      await f.vault.applications.update(f.admin, app.applicationId, {
        name: 'later',
        permissions: ['token:create', 'token:read'],
        rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:read'] }],
      });
      await expect(f.vault.reactors.react(f.user, id, { args: { id: token.id } })).resolves.toEqual({ raw: { ok: true, data: 'secret' } });
    });

    it('exposes tokens.create/retrieve/update/delete/list and tokenize', async () => {
      const app = await f.vault.caller({
        permissions: ['token:create', 'token:read', 'token:update', 'token:delete'],
        rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:update', 'token:delete'] }],
      });
      const id = await f.reactor(
        `module.exports = async ({ bt }) => {
        const created = await bt.tokens.create({ type: 'token', data: { a: 1 }, metadata: { via: 'bt' } });
        const updated = await bt.tokens.update(created.id, { data: { b: 2 } });
        const read = await bt.tokens.retrieve(created.id);
        const listed = await bt.tokens.list({ metadata: { via: 'bt' } });
        const bulk = await bt.tokenize({ x: { type: 'token', data: 'bulk' } });
        const removed = await bt.tokens.delete(created.id);
        let gone;
        try { await bt.tokens.retrieve(created.id); } catch (e) { gone = e.status; }
        return { raw: { created: created.created_by, updated: updated.data, read: read.data, listed: listed.data.length, bulk: typeof bulk.x.id, removed, gone } };
      }`,
        { application: app.applicationId },
      );
      await expect(f.vault.reactors.react(f.user, id, {})).resolves.toEqual({
        raw: { created: app.applicationId, updated: { a: 1, b: 2 }, read: { a: 1, b: 2 }, listed: 1, bulk: 'string', removed: null, gone: 404 },
      });
    });

    it('cannot pollute host prototypes through bt results', async () => {
      const app = await f.vault.caller({ permissions: ['token:create'] });
      const id = await f.reactor(
        `module.exports = async ({ bt }) => {
        const t = await bt.tokens.create({ type: 'token', data: JSON.parse('{"__proto__": {"polluted": true}}') });
        t.__proto__.polluted = true;
        Object.prototype.polluted = true;
        return { raw: { ok: true } };
      }`,
        { application: app.applicationId },
      );
      await expect(f.vault.reactors.react(f.user, id, {})).resolves.toEqual({ raw: { ok: true } });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });

  describe('tokenize block', () => {
    it('creates the tokens as the reactor application and mirrors the shape', async () => {
      const app = await f.vault.caller({ permissions: ['token:create', 'token:read'] });
      const id = await f.reactor(
        `module.exports = async (req) => ({
        raw: { status: 'ok' },
        tokenize: {
          receipt: { type: 'token', data: { id: 'rcpt_1', amount: 10 } },
          bank: [{ type: 'bank', data: { routing_number: '021000021', account_number: '12345678' } }],
          note: 'kept as is',
        },
      })`,
        { application: app.applicationId },
      );
      const result = (await f.vault.reactors.react(f.user, id, {})) as {
        raw: unknown;
        tokens: { receipt: { id: string; created_by: string }; bank: { id: string; type: string }[]; note: string };
      };
      expect(result.raw).toEqual({ status: 'ok' });
      expect(result.tokens.note).toBe('kept as is');
      expect(result.tokens.receipt.created_by).toBe(app.applicationId);
      expect(result.tokens.bank[0]?.type).toBe('bank');
      // The response never carries the tokenized data back (mask transform; token type has no mask).
      expect(JSON.stringify(result.tokens)).not.toContain('rcpt_1');
      const stored = await f.vault.tokens.get(app, result.tokens.receipt.id);
      expect(stored.created_by).toBe(app.applicationId);
      const revealer = await f.vault.caller({ permissions: ['token:read'], rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:read'] }] });
      expect((await f.vault.tokens.get(revealer, result.tokens.receipt.id)).data).toEqual({ id: 'rcpt_1', amount: 10 });
    });

    it('is a clear 400 without an application', async () => {
      const id = await f.reactor("module.exports = () => ({ raw: 1, tokenize: { a: { type: 'token', data: 'x' } } })");
      const error = await rejection(() => f.vault.reactors.react(f.user, id, {}));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as unknown as ValidationError).errors.tokenize?.[0]).toMatch(/no application/);
    });

    it('reports invalid token bodies under tokenize, and an application without token:create as 403', async () => {
      const app = await f.vault.caller({ permissions: ['token:create'] });
      const bad = await f.reactor("module.exports = () => ({ tokenize: { card: { type: 'card', data: { number: '1234' } } } })", { application: app.applicationId });
      const error = await rejection(() => f.vault.reactors.react(f.user, bad, {}));
      expect(Object.keys((error as unknown as ValidationError).errors).every((k) => k.startsWith('tokenize.card.'))).toBe(true);
      const reader = await f.vault.caller({ permissions: ['token:read'] });
      const denied = await f.reactor("module.exports = () => ({ tokenize: { a: { type: 'token', data: 'x' } } })", { application: reader.applicationId });
      expect(statusOf(await rejection(() => f.vault.reactors.react(f.user, denied, {})))).toBe(403);
    });
  });

  describe('reactor errors map to their status end to end', () => {
    const cases: [string, string, number][] = [
      ['AuthenticationError', 'AuthenticationError', 401],
      ['AuthorizationError', 'AuthorizationError', 403],
      ['BadRequestError', 'BadRequestError', 400],
      ['InvalidPaymentMethodError', 'InvalidPaymentMethodError', 402],
      ['RateLimitError', 'RateLimitError', 429],
      ['ReactorRuntimeError', 'ReactorRuntimeError', 500],
      ['ServiceUnavailableError', 'ServiceUnavailableError', 503],
      ['TypeError', 'ReactorRuntimeError', 500],
    ];
    for (const [thrown, kind, status] of cases) {
      it(`${thrown} → ${status}`, async () => {
        const id = await f.reactor(`module.exports = async () => { throw new ${thrown}('went wrong: ${thrown}'); }`);
        const error = await rejection(() => f.vault.reactors.react(f.user, id, {}));
        expect(error).toBeInstanceOf(ReactorError);
        expect(error).toMatchObject({ kind, status });
        expect(statusOf(error)).toBe(status);
        expect(error.message).toContain(`went wrong: ${thrown}`);
        expect(error.message).not.toMatch(/at .*\.js:\d+/);
      });
    }

    it('CustomHttpResponseError → its own status, headers and body', async () => {
      const id = await f.reactor("module.exports = () => { throw new CustomHttpResponseError({ status: 418, headers: { 'X-Teapot': 'yes' }, body: { brewed: false } }); }");
      const error = await rejection(() => f.vault.reactors.react(f.user, id, {}));
      expect(error).toMatchObject({ kind: 'CustomHttpResponseError', status: 418, body: { brewed: false }, headers: { 'x-teapot': 'yes' } });
    });

    it('an unexpected error names the line of the reactor code it came from', async () => {
      const id = await f.reactor('module.exports = async (req) => {\n  const card = req.args.card;\n  return card.number;\n}');
      const error = await rejection(() => f.vault.reactors.react(f.user, id, {}));
      expect(error).toMatchObject({ kind: 'ReactorRuntimeError', status: 500, message: "cannot read property 'number' of undefined (line 3)" });
    });

    it('a thrown non-Error value → 500 ReactorRuntimeError', async () => {
      const id = await f.reactor("module.exports = () => { throw 'just a string'; }");
      expect(await rejection(() => f.vault.reactors.react(f.user, id, {}))).toMatchObject({ kind: 'ReactorRuntimeError', status: 500 });
    });

    it('audits the failed invocation with its code', async () => {
      const id = await f.reactor("module.exports = () => { throw new RateLimitError('slow down'); }");
      await rejection(() => f.vault.reactors.react(f.user, id, {}));
      const entries = (await f.vault.logs.list(f.admin, { resource_id: id, operation: 'reactor:invoke' })).data;
      expect(entries.map((e) => [e.actor, e.outcome, e.detail])).toEqual([[f.user.applicationId, 'failure', 'reactor_error']]);
    });
  });

  describe('nested reactors', () => {
    it('bt.reactors.react runs another reactor as the application', async () => {
      const app = await f.vault.caller({ permissions: ['token:use'] });
      const inner = await f.reactor('module.exports = (req) => ({ raw: { doubled: req.args.n * 2 } })', { name: 'inner' });
      const outer = await f.reactor(`module.exports = async (req) => ({ raw: await req.bt.reactors.react('${inner}', { args: { n: req.args.n } }) })`, {
        application: app.applicationId,
        name: 'outer',
      });
      await expect(f.vault.reactors.react(f.user, outer, { args: { n: 21 } })).resolves.toEqual({ raw: { raw: { doubled: 42 } } });
    });

    it('stops unbounded recursion with a clear 400', async () => {
      const app = await f.vault.caller({ permissions: ['token:use'] });
      const formula = await f.vault.formulas.create(f.admin, {
        name: 'self',
        code: 'module.exports = async (req) => ({ raw: await req.bt.reactors.react(req.args.self, { args: req.args }) })',
      });
      const reactor = await f.vault.reactors.create(f.admin, { name: 'self', formula: { id: formula.id }, configuration: {}, application: { id: app.applicationId } });
      const error = await rejection(() => f.vault.reactors.react(f.user, reactor.id, { args: { self: reactor.id } }));
      expect(statusOf(error)).toBe(400);
      expect(error.message).toMatch(/nests more than 3 reactor runs deep/);
    });
  });

  // The lines reach the logger only with consoleOutput 'redacted' (the default logs their size only:
  // test/reactors/console-output.test.ts).
  describe('console output', () => {
    let c: Fixture;
    beforeAll(async () => {
      c = await fixture({ reactors: { consoleOutput: 'redacted' } }, store);
    });
    // Each test finds the first console line logged: only its own.
    beforeEach(() => {
      c.logs.length = 0;
    });

    it('goes to the vault logger at info level with the reactor id, not to stdout', async () => {
      const id = await c.reactor("module.exports = () => { console.log('hello', { a: 1 }); console.error('oops'); return { raw: 1 }; }");
      await c.vault.reactors.react(c.user, id, {});
      const line = c.logs.find((l) => l.message === 'reactor console output');
      expect(line?.level).toBe('info');
      expect(line?.fields).toMatchObject({ reactorId: id, tenantId: c.vault.tenantId, truncated: false });
      expect((line?.fields?.lines as string[]).join('\n')).toMatch(/hello[\s\S]*oops/);
    });

    it('is kept when the run fails: what the reactor printed before throwing or timing out reaches the logger', async () => {
      const thrower = await c.reactor("module.exports = () => { console.log('about to fail'); throw new BadRequestError('nope'); }");
      const error = await c.vault.reactors.react(c.user, thrower, {}).catch((e: unknown) => e);
      expect(statusOf(error)).toBe(400);
      expect(c.logs.find((l) => l.message === 'reactor console output')?.fields).toMatchObject({ reactorId: thrower, lines: ['about to fail'] });
      // A deadline the print before the loop always beats, even on a loaded machine (200 ms did not).
      const g = await fixture({ reactors: { limits: { timeoutMs: 2_000 }, consoleOutput: 'redacted' } }, store);
      try {
        const slow = await g.reactor("module.exports = () => { console.log('spinning'); for (;;) {} }");
        expect(statusOf(await g.vault.reactors.react(g.user, slow, {}).catch((e: unknown) => e))).toBe(500);
        expect(g.logs.find((l) => l.message === 'reactor console output')?.fields).toMatchObject({ reactorId: slow, lines: ['spinning'] });
      } finally {
        await g.vault.close();
      }
    });

    it('is bounded by the maxLogBytes limit', async () => {
      const g = await fixture({ reactors: { limits: { maxLogBytes: 64 }, consoleOutput: 'redacted' } }, store);
      try {
        const id = await g.reactor("module.exports = () => { for (let i = 0; i < 100; i++) console.log('line ' + i); return {}; }");
        await g.vault.reactors.react(g.user, id, {});
        const fields = g.logs.find((l) => l.message === 'reactor console output')?.fields;
        expect(fields?.truncated).toBe(true);
        expect((fields?.lines as string[]).join('').length).toBeLessThanOrEqual(64);
      } finally {
        await g.vault.close();
      }
    });
  });

  describe('state that changed since the reactor was configured', () => {
    it('a configuration that no longer matches the formula is a 409 until the reactor is updated', async () => {
      const formula = await f.vault.formulas.create(f.admin, {
        name: 'f',
        code: 'module.exports = (req) => ({ raw: req.configuration })',
        configuration: [{ name: 'a', type: 'string' }],
      });
      const reactor = await f.vault.reactors.create(f.admin, { name: 'r', formula: { id: formula.id }, configuration: { a: 'x' } });
      await f.vault.formulas.update(f.admin, formula.id, { name: 'f', code: formula.code, configuration: [{ name: 'b', type: 'number' }] });
      await expect(f.vault.reactors.react(f.user, reactor.id, {})).rejects.toBeInstanceOf(ConflictError);
      await f.vault.reactors.update(f.admin, reactor.id, { name: 'r', configuration: { b: 2 } });
      await expect(f.vault.reactors.react(f.user, reactor.id, {})).resolves.toEqual({ raw: { b: 2 } });
    });

    it('a deleted application is a 409', async () => {
      const app = await f.vault.caller({ permissions: ['token:create'] });
      const id = await f.reactor('module.exports = () => ({ raw: 1 })', { application: app.applicationId });
      await f.vault.applications.delete(f.admin, app.applicationId);
      await expect(f.vault.reactors.react(f.user, id, {})).rejects.toBeInstanceOf(ConflictError);
    });
  });

  describe('vault options', () => {
    it('validates the reactor options', async () => {
      await expect(store.vault({ reactors: { egress: { allowHosts: [''] } } })).rejects.toBeInstanceOf(ValidationError);
      await expect(store.vault({ reactors: { limits: { memoryBytes: 1 } } })).rejects.toBeInstanceOf(ValidationError);
      await expect(store.vault({ reactors: { unknown: true } as never })).rejects.toBeInstanceOf(ValidationError);
    });

    it('uses a given sandbox', async () => {
      const calls: string[] = [];
      const g = await fixture(
        {
          reactors: {
            sandbox: {
              check: (code) => void calls.push(`check ${code}`),
              run: async (input) => {
                calls.push(`run ${JSON.stringify(input.req.args)}`);
                // Saved code is loaded once (args null) to check that it exports a function (code-check.ts).
                return { result: input.req.args === null ? 'function' : { raw: 'fake' }, logs: [], logsTruncated: false };
              },
            },
          },
        },
        store,
      );
      try {
        const id = await g.reactor('anything');
        await expect(g.vault.reactors.react(g.user, id, { args: { a: 1 } })).resolves.toEqual({ raw: 'fake' });
        expect(calls).toEqual(['check anything', 'run null', 'run {"a":1}']);
      } finally {
        await g.vault.close();
      }
    });
  });

  describe('fetch egress', () => {
    async function server(): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
      const { createServer } = await import('node:http');
      let hits = 0;
      const srv = createServer((_req, res) => {
        hits++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"pong":true}');
      });
      await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
      const { port } = srv.address() as { port: number };
      return { url: `http://127.0.0.1:${port}/ping`, hits: () => hits, close: () => new Promise((resolve) => srv.close(() => resolve())) };
    }
    const PING = 'module.exports = async (req) => { const r = await fetch(req.args.url); return { raw: await r.json() }; }';

    it('is refused by default (loopback is private and no host is allowed), and nothing is sent', async () => {
      const api = await server();
      try {
        const id = await f.reactor(PING);
        const error = await rejection(() => f.vault.reactors.react(f.user, id, { args: { url: api.url } }));
        expect(statusOf(error)).toBeGreaterThanOrEqual(400);
        expect(api.hits()).toBe(0);
      } finally {
        await api.close();
      }
    });

    it('reaches a host the egress options allow', async () => {
      const api = await server();
      const g = await fixture({ reactors: { egress: { allowHosts: ['127.0.0.1'], allowPrivateNetwork: true } } }, store);
      try {
        const id = await g.reactor(PING);
        await expect(g.vault.reactors.react(g.user, id, { args: { url: api.url } })).resolves.toEqual({ raw: { pong: true } });
        expect(api.hits()).toBe(1);
      } finally {
        await g.vault.close();
        await api.close();
      }
    });
  });
});
