/**
 * The invocation rules of docs/reactors.md ("Invocation", `request_parameters`), numbered 1-10 here,
 * each with its passing and failing case.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { AuthorizationError, ValidationError } from '../../src/errors/errors.js';
import { type Fixture, VISA, fixture, rejection } from './helpers.js';
import { describeEachStore } from '../support/stores.js';

const ECHO = 'module.exports = async function (req) { return { raw: req.args }; }';
/** Proves whether the code ran: it creates a marker token as its application first. */
const MARKING_ECHO = `module.exports = async function (req) {
  await req.bt.tokens.create({ type: 'token', data: 'ran', metadata: { ran: 'yes' } });
  return { raw: req.args };
}`;

describeEachStore('reactor invoke rules', (store) => {
  let f: Fixture;
  beforeEach(async () => {
    f = await fixture({}, store);
  });

  async function errorsOf(promise: () => Promise<unknown>): Promise<Record<string, string[]>> {
    const error = await rejection(promise);
    expect(error).toBeInstanceOf(ValidationError);
    return (error as unknown as ValidationError).errors;
  }

  const params = (...list: [string, string, boolean?][]) => ({ request_parameters: list.map(([name, type, optional]) => ({ name, type, optional: optional ?? false })) });

  describe('rule 1: token:use to invoke, and on every container of a detokenized token', () => {
    it('needs token:use to invoke at all', async () => {
      const id = await f.reactor(ECHO);
      const reader = await f.vault.caller({ permissions: ['token:read', 'reactor:read'] });
      await expect(f.vault.reactors.react(reader, id, { args: { a: 1 } })).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.reactors.react(f.user, id, { args: { a: 1 } })).resolves.toEqual({ raw: { a: 1 } });
    });

    it('fails the whole call with 403 before running anything when a container is not granted', async () => {
      const marker = await f.vault.caller({ permissions: ['token:create', 'token:read'] });
      const id = await f.reactor(MARKING_ECHO, { application: marker.applicationId });
      const general = await f.vault.tokens.create(f.user, { type: 'token', data: 'general secret' });
      const card = await f.vault.tokens.create(f.user, { type: 'card', data: VISA });
      // token:read on every container: the caller may see the card exists, so the refusal is a 403.
      const generalOnly = await f.vault.caller({
        permissions: ['token:use', 'token:read'],
        rules: [
          { priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:use'] },
          { priority: 2, container: '/', transform: 'mask', permissions: ['token:read'] },
        ],
      });
      const ran = async () => (await f.vault.tokens.list(f.user, { metadata: { ran: 'yes' } })).data.length;

      const error = await rejection(() => f.vault.reactors.react(generalOnly, id, { args: { g: `{{ ${general.id} }}`, c: `{{ ${card.id} }}` } }));
      expect(error).toBeInstanceOf(AuthorizationError);
      expect(error.message).toMatch(/token:use/);
      expect(await ran()).toBe(0);

      // The granted container alone works, and the code runs.
      await expect(f.vault.reactors.react(generalOnly, id, { args: { g: `{{ ${general.id} }}` } })).resolves.toEqual({ raw: { g: 'general secret' } });
      expect(await ran()).toBe(1);
    });

    it('answers for a token the caller holds no grant on as for a missing one, before running anything', async () => {
      const marker = await f.vault.caller({ permissions: ['token:create', 'token:read'] });
      const id = await f.reactor(MARKING_ECHO, { application: marker.applicationId });
      const general = await f.vault.tokens.create(f.user, { type: 'token', data: 'general secret' });
      const card = await f.vault.tokens.create(f.user, { type: 'card', data: VISA, id: 'cust-10042-card' });
      const generalOnly = await f.vault.caller({ permissions: ['token:use'], rules: [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:use'] }] });
      const hidden = await errorsOf(() => f.vault.reactors.react(generalOnly, id, { args: { g: `{{ ${general.id} }}`, c: `{{ ${card.id} }}` } }));
      const missing = await errorsOf(() => f.vault.reactors.react(generalOnly, id, { args: { g: `{{ ${general.id} }}`, c: '{{ cust-10043-card }}' } }));
      expect(hidden).toEqual({ 'args.c': ["names the token 'cust-10042-card', which does not exist"] });
      expect(missing).toEqual({ 'args.c': ["names the token 'cust-10043-card', which does not exist"] });
      expect((await f.vault.tokens.list(f.user, { metadata: { ran: 'yes' } })).data).toEqual([]);
    });

    it('requires a grant on each container of a token in several', async () => {
      const id = await f.reactor(ECHO);
      const both = await f.vault.tokens.create(f.user, { type: 'token', data: 'x', containers: ['/a/', '/b/'] });
      const onlyA = await f.vault.caller({ permissions: ['token:use'], rules: [{ priority: 1, container: '/a/', transform: 'reveal', permissions: ['token:use'] }] });
      const onlyAReadingBoth = await f.vault.caller({
        permissions: ['token:use', 'token:read'],
        rules: [
          { priority: 1, container: '/a/', transform: 'reveal', permissions: ['token:use'] },
          { priority: 2, container: '/', transform: 'mask', permissions: ['token:read'] },
        ],
      });
      const aAndB = await f.vault.caller({
        permissions: ['token:use'],
        rules: [
          { priority: 1, container: '/a/', transform: 'reveal', permissions: ['token:use'] },
          { priority: 2, container: '/b/', transform: 'reveal', permissions: ['token:use'] },
        ],
      });
      // A grant on one container of two is no grant on the token: it is answered as missing.
      expect(await errorsOf(() => f.vault.reactors.react(onlyA, id, { args: { v: `{{ ${both.id} }}` } }))).toEqual({
        'args.v': [`names the token '${both.id}', which does not exist`],
      });
      await expect(f.vault.reactors.react(onlyAReadingBoth, id, { args: { v: `{{ ${both.id} }}` } })).rejects.toBeInstanceOf(AuthorizationError);
      await expect(f.vault.reactors.react(aAndB, id, { args: { v: `{{ ${both.id} }}` } })).resolves.toEqual({ raw: { v: 'x' } });
    });

    it("gives the reactor the data as the caller's token:use transform shows it", async () => {
      const id = await f.reactor(ECHO);
      const card = await f.vault.tokens.create(f.user, { type: 'card', data: VISA });
      const masked = await f.vault.caller({ permissions: ['token:use'], rules: [{ priority: 1, container: '/', transform: 'mask', permissions: ['token:use'] }] });
      const result = (await f.vault.reactors.react(masked, id, { args: { card: `{{ ${card.id} }}` } })) as { raw: { card: { number: string } } };
      expect(result.raw.card.number).toBe('XXXXXXXXXXXX4242');
    });
  });

  describe('rule 2: no declared request_parameters → any args', () => {
    it('accepts anything, and refuses args that are not an object', async () => {
      const id = await f.reactor(ECHO);
      const args = { a: '1', b: [true, null, { c: 'd' }], 'Any-Name': 2 };
      await expect(f.vault.reactors.react(f.user, id, { args })).resolves.toEqual({ raw: args });
      await expect(f.vault.reactors.react(f.user, id, {})).resolves.toEqual({ raw: {} });
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { args: [1, 2] }))).toHaveProperty(['args']);
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { args: 'x' }))).toHaveProperty(['args']);
    });
  });

  describe('rule 3: exact, case-sensitive names; dot paths for nested objects', () => {
    it('validates the exact name and nested paths', async () => {
      const id = await f.reactor(ECHO, { declarations: params(['amount', 'number'], ['customer.id', 'string']) });
      await expect(f.vault.reactors.react(f.user, id, { args: { amount: 5, customer: { id: 'c1' } } })).resolves.toEqual({ raw: { amount: 5, customer: { id: 'c1' } } });
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { args: { Amount: 5, customer: { id: 'c1' } } }))).toEqual({ 'args.amount': ['is required'] });
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { args: { amount: 5, 'customer.id': 'c1' } }))).toEqual({ 'args.customer.id': ['is required'] });
    });
  });

  describe('rule 4: required parameters must be present; optional ones may be omitted', () => {
    it('is a 400 naming each missing parameter', async () => {
      const id = await f.reactor(ECHO, { declarations: params(['a', 'string'], ['b', 'string'], ['c', 'string', true]) });
      await expect(f.vault.reactors.react(f.user, id, { args: { a: 'x', b: 'y' } })).resolves.toEqual({ raw: { a: 'x', b: 'y' } });
      const error = await rejection(() => f.vault.reactors.react(f.user, id, { args: { a: 'x' } }));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as unknown as ValidationError).errors).toEqual({ 'args.b': ['is required'] });
      expect(error.message).toContain('args.b');
      // No args at all, with required parameters declared.
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, {}))).toEqual({ 'args.a': ['is required'], 'args.b': ['is required'] });
    });
  });

  describe('rule 5: cast to the declared type first; impossible cast → 400', () => {
    it('casts numeric strings and "true"/"false", and refuses the rest', async () => {
      const id = await f.reactor(ECHO, { declarations: params(['amount', 'number'], ['capture', 'boolean'], ['memo', 'string', true]) });
      await expect(f.vault.reactors.react(f.user, id, { args: { amount: '12.50', capture: 'true', memo: 7 } })).resolves.toEqual({
        raw: { amount: 12.5, capture: true, memo: '7' },
      });
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { args: { amount: 'twelve', capture: 'yes' } }))).toEqual({
        'args.amount': ['must be a number (got a string that cannot be cast)'],
        'args.capture': ['must be a boolean (got a string that cannot be cast)'],
      });
    });

    it('casts after detokenization', async () => {
      const id = await f.reactor(ECHO, { declarations: params(['amount', 'number']) });
      const numeric = await f.vault.tokens.create(f.user, { type: 'token', data: '42' });
      const text = await f.vault.tokens.create(f.user, { type: 'token', data: 'forty-two' });
      await expect(f.vault.reactors.react(f.user, id, { args: { amount: `{{ ${numeric.id} }}` } })).resolves.toEqual({ raw: { amount: 42 } });
      const errors = await errorsOf(() => f.vault.reactors.react(f.user, id, { args: { amount: `{{ ${text.id} }}` } }));
      expect(errors['args.amount']?.[0]).toMatch(/must be a number/);
      // The message never carries the detokenized value.
      expect(JSON.stringify(errors)).not.toContain('forty-two');
    });
  });

  describe('rule 6: {{ token_id }} in any string, alone or mixed with text, at any depth', () => {
    it('replaces expressions with the raw data', async () => {
      const id = await f.reactor(ECHO);
      const ssn = await f.vault.tokens.create(f.user, { type: 'social_security_number', data: '123-45-6789' });
      const result = await f.vault.reactors.react(f.user, id, {
        args: { whole: `{{${ssn.id}}}`, mixed: `SSN: {{ ${ssn.id} }}!`, deep: { list: [{ v: `{{ ${ssn.id} | last4 }}` }] }, plain: 'no expression' },
      });
      expect(result).toEqual({ raw: { whole: '123-45-6789', mixed: 'SSN: 123-45-6789!', deep: { list: [{ v: '6789' }] }, plain: 'no expression' } });
    });

    it('is a 400 naming an unknown token id, and runs nothing', async () => {
      const marker = await f.vault.caller({ permissions: ['token:create', 'token:read'] });
      const id = await f.reactor(MARKING_ECHO, { application: marker.applicationId });
      const known = await f.vault.tokens.create(f.user, { type: 'token', data: 'x' });
      const errors = await errorsOf(() => f.vault.reactors.react(f.user, id, { args: { ok: `{{ ${known.id} }}`, nested: { bad: 'pay {{ no-such-token }}' } } }));
      expect(errors).toEqual({ 'args.nested.bad': ["names the token 'no-such-token', which does not exist"] });
      expect((await f.vault.tokens.list(f.user, { metadata: { ran: 'yes' } })).data).toEqual([]);
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { args: { bad: 'x {{ unclosed' } }))).toHaveProperty(['args.bad']);
    });
  });

  describe('rule 7: complex tokens detokenize as their whole JSON payload', () => {
    it('gives card and bank objects, or their JSON text when mixed', async () => {
      const id = await f.reactor(ECHO);
      const card = await f.vault.tokens.create(f.user, { type: 'card', data: VISA });
      const bank = await f.vault.tokens.create(f.user, { type: 'bank', data: { routing_number: '021000021', account_number: '1234567890' } });
      const result = (await f.vault.reactors.react(f.user, id, { args: { card: `{{ ${card.id} }}`, bank: `{{ ${bank.id} }}`, text: `card={{ ${card.id} }}` } })) as {
        raw: Record<string, unknown>;
      };
      expect(result.raw.card).toEqual(VISA);
      expect(result.raw.bank).toEqual({ routing_number: '021000021', account_number: '1234567890' });
      expect(JSON.parse((result.raw.text as string).slice('card='.length))).toEqual(VISA);
    });
  });

  describe('rule 8: validation after detokenization: one complex token supplies several parameters', () => {
    it('validates the nested fields of a card token', async () => {
      const id = await f.reactor(ECHO, { declarations: params(['card.number', 'string'], ['card.expiration_month', 'number'], ['card.cvc', 'string']) });
      const card = await f.vault.tokens.create(f.user, { type: 'card', data: VISA });
      await expect(f.vault.reactors.react(f.user, id, { args: { card: `{{ ${card.id} }}` } })).resolves.toEqual({ raw: { card: VISA } });
      // Without a cvc the token cannot supply card.cvc.
      const noCvc = await f.vault.tokens.create(f.user, { type: 'card', data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2032 } });
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { args: { card: `{{ ${noCvc.id} }}` } }))).toEqual({ 'args.card.cvc': ['is required'] });
    });
  });

  describe('rule 9: at most 100 tokens per invocation', () => {
    it('detokenizes 100 and refuses 101', async () => {
      const id = await f.reactor('module.exports = (req) => ({ raw: Object.keys(req.args).length })');
      const tokens: string[] = [];
      for (let i = 0; i < 101; i++) tokens.push((await f.vault.tokens.create(f.user, { type: 'token', data: `v${i}` })).id);
      const args = (n: number) => Object.fromEntries(tokens.slice(0, n).map((t, i) => [`a${i}`, `{{ ${t} }}`]));
      await expect(f.vault.reactors.react(f.user, id, { args: args(100) })).resolves.toEqual({ raw: 100 });
      const errors = await errorsOf(() => f.vault.reactors.react(f.user, id, { args: args(101) }));
      expect(errors.args?.[0]).toMatch(/101 distinct tokens; at most 100/);
    });
  });

  describe('rule 10 (decided): undeclared args pass through unvalidated', () => {
    it('forwards args that are not declared', async () => {
      const id = await f.reactor(ECHO, { declarations: params(['amount', 'number']) });
      await expect(f.vault.reactors.react(f.user, id, { args: { amount: '1', note: { free: ['form'] } } })).resolves.toEqual({ raw: { amount: 1, note: { free: ['form'] } } });
    });
  });

  describe('invoke body', () => {
    it('react refuses callback_url (that is reactAsync or invoke) and checks timeout_ms', async () => {
      const id = await f.reactor(ECHO);
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { callback_url: 'https://example.com/hook' }))).toEqual({
        callback_url: ['asks for an asynchronous run: call reactAsync (or invoke) instead of react'],
      });
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { timeout_ms: 9999 }))).toHaveProperty(['timeout_ms']);
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { timeout_ms: 210_001 }))).toHaveProperty(['timeout_ms']);
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { timeout_ms: 10_000.5 }))).toHaveProperty(['timeout_ms']);
      expect(await errorsOf(() => f.vault.reactors.react(f.user, id, { unknown: 1 } as never))).toHaveProperty(['unknown']);
      await expect(f.vault.reactors.react(f.user, id, { timeout_ms: 210_000, args: { a: 1 } })).resolves.toEqual({ raw: { a: 1 } });
      await expect(f.vault.reactors.react(f.user, id, undefined)).resolves.toEqual({ raw: {} });
    });
  });
});
