// One request could chain hundreds of expression renders (a create's 100 search
// indexes, a tokenize call's 100 creates, a list page's masks) and block the server for a minute.
// Templates are bounded when saved, and the renders of one service call share one time budget.
// The budget reads an injected time source that advances 1 ms per read: every render costs exactly
// one "ms", so the cap is exercised deterministically, without timing anything.
import { expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import type { AccessRule } from '../../src/permissions/permissions.js';
import { describeEachStore } from '../support/stores.js';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL, snapshot } from '../support/tokens.js';

const BUDGET_MS = 50;
const EXHAUSTED = /^was not rendered: the expressions of this request used up their 50 ms of rendering time$/;
/** A public key that may write masks and indexes (reveal on its writes, so it passes the disclosure rules). */
const PUBLIC_WRITER: AccessRule[] = [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:update'] }];

/** A time source that moves `step` ms (1 unless changed) each time it is read. */
function ticking(): { now: () => number; step: number } {
  let t = 0;
  const source = { now: () => (t += source.step), step: 1 };
  return source;
}

async function rejection(promise: Promise<unknown>): Promise<ValidationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  return error as ValidationError;
}

describeEachStore('expression budget per request', (store) => {
  async function setup() {
    const time = ticking();
    const vault = await store.vault({ expressions: { requestBudgetMs: BUDGET_MS, now: time.now } });
    const attacker = await vault.caller({ permissions: ['token:create', 'token:update'], rules: PUBLIC_WRITER, name: 'public' });
    const revealer = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL, name: 'revealer' });
    const masker = await vault.caller({ permissions: ['token:read', 'token:search'], name: 'masker' });
    return { vault, attacker, revealer, masker, time };
  }

  it('stops a create whose search indexes use up the budget, with a 400 naming the index, and stores nothing', async () => {
    const { vault, attacker, revealer } = await setup();
    const search_indexes = Array.from({ length: 100 }, (_, i) => `{{ data | append: '${i}' }}`);
    const error = await rejection(vault.tokens.create(attacker, { type: 'token', data: 'value', search_indexes }));
    const [field, ...others] = Object.keys(error.errors);
    expect(others).toEqual([]);
    expect(field).toMatch(/^search_indexes\[\d+\]$/);
    expect(error.errors[field!]?.[0]).toMatch(EXHAUSTED);
    expect(await snapshot(vault, revealer)).toEqual([]);
    // The same create with a handful of indexes is well within the budget.
    await expect(vault.tokens.create(attacker, { type: 'token', data: 'value', search_indexes: search_indexes.slice(0, 5) })).resolves.toMatchObject({ type: 'token' });
  });

  it('charges the parsing of a saved mask to the same budget', async () => {
    const { vault, attacker, revealer } = await setup();
    const mask = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, `{{ data | append: '${i}' }}`]));
    const error = await rejection(vault.tokens.create(attacker, { type: 'token', data: 'value', mask }));
    expect(Object.keys(error.errors)).toEqual(['mask.k50']);
    expect(error.errors['mask.k50']?.[0]).toMatch(EXHAUSTED);
    expect(await snapshot(vault, revealer)).toEqual([]);
  });

  it('gives a tokenize call one budget for all its items, and stores none of them when it runs out', async () => {
    const { vault, attacker, revealer } = await setup();
    // Each item renders its fingerprint and one index: 2 renders, 200 in all, against a budget of 50.
    const body = { items: Array.from({ length: 100 }, (_, i) => ({ type: 'token', data: `v${i}`, search_indexes: ['{{ data | upcase }}'] })) };
    const error = await rejection(vault.tokens.tokenize(attacker, body));
    const fields = Object.keys(error.errors);
    expect(fields).toHaveLength(1);
    expect(fields[0]).toMatch(/^items\[\d+\]\.(fingerprint_expression|search_indexes\[0\])$/);
    expect(error.errors[fields[0]!]?.[0]).toMatch(EXHAUSTED);
    expect(await snapshot(vault, revealer)).toEqual([]);
    // Ten of them fit.
    const small = await vault.tokens.tokenize(attacker, { items: body.items.slice(0, 10) });
    expect((small as { items: unknown[] }).items).toHaveLength(10);
  });

  it('renders the masks of a list or search page within one budget: a page that uses it up is a 400, a smaller page works', async () => {
    const { vault, revealer, masker } = await setup();
    const mask = { a: '{{ data.a | reveal_last: 1 }}', b: '{{ data.b | upcase }}', c: '{{ data.a | size }}' };
    for (let i = 0; i < 30; i++) {
      await vault.tokens.create(revealer, { type: 'token', data: { a: `secret${i}`, b: 'x' }, mask, metadata: { group: 'g' }, search_indexes: ['{{ data.b }}'] });
    }
    // 30 tokens × 3 mask leaves = 90 renders.
    const listed = await rejection(vault.tokens.list(masker, { size: 30 }));
    expect(Object.keys(listed.errors)).toHaveLength(1);
    expect(Object.keys(listed.errors)[0]).toMatch(/^mask\.[abc]$/);
    expect(Object.values(listed.errors)[0]?.[0]).toMatch(EXHAUSTED);
    // (A data: term matches only where the searcher reveals: search the masked page by metadata.)
    const searched = await rejection(vault.tokens.search(masker, { query: 'metadata.group:g', size: 30 }));
    expect(Object.values(searched.errors)[0]?.[0]).toMatch(EXHAUSTED);
    const page = await vault.tokens.list(masker, { size: 10 });
    expect(page.data).toHaveLength(10);
    expect(page.data[0]?.data).toMatchObject({ a: expect.stringMatching(/^X+\d$/), b: 'X' });
  });

  it('gives each get its own budget', async () => {
    const { vault, revealer, masker, time } = await setup();
    const mask = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, '{{ data | last4 }}']));
    // Saving a 60-template mask also charges 60 parses: let time stand still while saving.
    time.step = 0;
    const heavy = await vault.tokens.create(revealer, { type: 'token', data: 'abcdef', mask });
    const light = await vault.tokens.create(revealer, { type: 'token', data: 'abcdef', mask: { k: '{{ data | last4 }}' } });
    time.step = 1;
    expect(Object.values((await rejection(vault.tokens.get(masker, heavy.id))).errors)[0]?.[0]).toMatch(EXHAUSTED);
    for (let i = 0; i < 100; i++) expect((await vault.tokens.get(masker, light.id)).data).toEqual({ k: 'cdef' });
  });
});

describeEachStore('expression limits when a template is saved', (store) => {
  it('refuses the hostile templates on create and update with a 400 naming the field, and changes nothing', async () => {
    const vault = await store.vault();
    const attacker = await vault.caller({ permissions: ['token:create', 'token:update'], rules: PUBLIC_WRITER, name: 'public' });
    const revealer = await vault.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL, name: 'revealer' });
    const loop = '{% for a in (1..100000) %}{% for b in (1..100000) %}{% endfor %}{% endfor %}';
    const pad = '{{ data | pad_left: 100000000 }}';
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ mask: { number: loop } }, 'mask.number', /tag 'for'/],
      [{ mask: { a: '{{ data }}', b: [pad] } }, 'mask.b[0]', /pad_left: width/],
      [{ fingerprint_expression: '{% capture s %}{{ data }}{% endcapture %}{{ s }}' }, 'fingerprint_expression', /tag 'capture'/],
      [{ search_indexes: ['{{ data }}', '{{ data }}', '{{ data }}', "{{ (1..100000000) | join: 'x' }}"] }, 'search_indexes[3]', /range/],
      [{ id: '{% for a in (1..1000) %}{% endfor %}id-x' }, 'id', /tag 'for'/],
    ];
    for (const [extra, field, message] of cases) {
      const error = await rejection(vault.tokens.create(attacker, { type: 'token', data: 'value', ...extra }));
      expect(Object.keys(error.errors), field).toEqual([field]);
      expect(error.errors[field]?.[0]).toMatch(message);
    }
    expect(await snapshot(vault, revealer)).toEqual([]);
    const token = await vault.tokens.create(attacker, { type: 'token', data: 'value', search_indexes: ['{{ data }}'] });
    const before = await snapshot(vault, revealer);
    // Changing what a token discloses needs reveal (the disclosure rules): the revealer tries.
    for (const [patch, field, message] of cases.filter(([extra]) => !('id' in extra))) {
      const error = await rejection(vault.tokens.update(revealer, token.id, patch));
      expect(Object.keys(error.errors), field).toEqual([field]);
      expect(error.errors[field]?.[0]).toMatch(message);
    }
    expect(await snapshot(vault, revealer)).toEqual(before);
  });
});

describeEachStore('expression budget of a reactor invocation', (store) => {
  it("renders every filtered expression of a reactor's args within one budget: past it the call is a 400", async () => {
    const time = ticking();
    const vault = await store.vault({ expressions: { requestBudgetMs: BUDGET_MS, now: time.now } });
    const admin = await vault.authenticate(vault.adminKey);
    const user = await vault.caller({ permissions: ['token:create', 'token:use'], name: 'user' });
    const token = await vault.tokens.create(user, { type: 'token', data: 'abcdefgh' });
    const formula = await vault.formulas.create(admin, { name: 'echo', code: 'module.exports = async (req) => ({ raw: { n: req.args.items.length } });' });
    const reactor = await vault.reactors.create(admin, { name: 'echo', formula: { id: formula.id }, configuration: {} });
    // One id, many filtered expressions (the 100-token limit counts ids): each render costs 1 "ms".
    const items = Array.from({ length: 200 }, () => `{{ ${token.id} | last4 }}`);
    const error = await rejection(vault.reactors.react(user, reactor.id, { args: { items } }));
    expect(Object.values(error.errors)[0]?.[0]).toMatch(EXHAUSTED);
    const small = await vault.reactors.react(user, reactor.id, { args: { items: items.slice(0, 10) } });
    expect(small.raw).toEqual({ n: 10 });
  });
});
