import { expect, it } from 'vitest';
import { ValidationError } from '../../src/errors/errors.js';
import type { Logger } from '../../src/common/logger.js';
import type { ConsoleOutputMode } from '../../src/reactors/console-output.js';
import { SensitiveValues } from '../../src/reactors/console-output.js';
import { createTestVault } from '../../src/testing/index.js';
import { describeEachStore, type TestStore } from '../support/stores.js';
import { VISA, rejection } from './helpers.js';
import { SUITE_START } from '../support/suite-start.js';

const CARD = { ...VISA, number: '4111111111111111', cvc: '987' };
/** Prints the detokenized card whole, and its number and cvc alone. */
const PRINT_ARGS = "module.exports = (req) => { console.log(req.args.card); console.log('card', req.args.card.number, 'cvc', req.args.card.cvc); return {}; }";
/** Prints a token it read through bt (the id is a plain arg, not detokenized). */
const PRINT_RETRIEVED = "module.exports = async (req) => { const t = await req.bt.tokens.retrieve(req.args.id); console.log('got', t.data.number, t.data.cvc); return {}; }";

interface Logged {
  message: string;
  fields: Record<string, unknown> | undefined;
}

async function setup(store: TestStore, consoleOutput?: ConsoleOutputMode, limits?: Record<string, number>) {
  const logs: Logged[] = [];
  const push = (message: string, fields?: Record<string, unknown>) => logs.push({ message, fields });
  const logger: Logger = { info: push, warn: push, error: push };
  const vault = await store.vault({ logger, reactors: { ...(consoleOutput ? { consoleOutput } : {}), ...(limits ? { limits } : {}) } });
  const admin = await vault.authenticate(vault.adminKey);
  const app = await vault.caller({
    name: 'payments',
    permissions: ['token:create', 'token:read', 'token:use'],
    rules: [{ priority: 0, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }],
  });
  const card = await vault.tokens.create(app, { type: 'card', data: CARD });
  const reactor = async (code: string) => {
    const formula = await vault.formulas.create(admin, { name: 'f', code });
    return (await vault.reactors.create(admin, { name: 'r', formula: { id: formula.id }, configuration: {}, application: { id: app.applicationId } })).id;
  };
  const consoleEntries = () => logs.filter((l) => l.message === 'reactor console output');
  return { vault, app, cardId: card.id!, reactor, logs, consoleEntries };
}

describeEachStore('reactor console output', (store) => {
  it('by default is discarded: the logger gets its size only, nothing of the detokenized card', async () => {
    const s = await setup(store);
    const id = await s.reactor(PRINT_ARGS);
    await s.vault.reactors.react(s.app, id, { args: { card: `{{ ${s.cardId} }}` } });
    expect(s.consoleEntries()).toHaveLength(1);
    const fields = s.consoleEntries()[0]!.fields!;
    expect(Object.keys(fields).sort()).toEqual(['bytes', 'lineCount', 'mode', 'reactorId', 'tenantId', 'truncated']);
    expect(fields).toMatchObject({ mode: 'summary', lineCount: 2, truncated: false, reactorId: id });
    expect(JSON.stringify(s.logs)).not.toContain(CARD.number);
  });

  it("with consoleOutput 'redacted', the lines are logged with every detokenized value (cvc included) redacted", async () => {
    const s = await setup(store, 'redacted');
    const id = await s.reactor(PRINT_ARGS);
    await s.vault.reactors.react(s.app, id, { args: { card: `{{ ${s.cardId} }}` } });
    const lines = s.consoleEntries()[0]!.fields!.lines as string[];
    expect(lines[1]).toBe('card [REDACTED] cvc [REDACTED]');
    expect(lines[0]).toContain('[REDACTED]');
    for (const line of lines) {
      expect(line).not.toContain(CARD.number);
      expect(line).not.toContain(CARD.cvc);
    }
    expect(JSON.stringify(s.logs)).not.toContain(CARD.number);
  });

  it("with consoleOutput 'redacted', values read through req.bt are redacted too", async () => {
    const s = await setup(store, 'redacted');
    const id = await s.reactor(PRINT_RETRIEVED);
    await s.vault.reactors.react(s.app, id, { args: { id: s.cardId } });
    expect(s.consoleEntries()[0]!.fields!.lines).toEqual(['got [REDACTED] [REDACTED]']);
  });

  it('a line cut at the output limit in the middle of a card number does not keep its beginning', async () => {
    const s = await setup(store, 'redacted', { maxLogBytes: 20 });
    const id = await s.reactor("module.exports = (req) => { console.log('card ' + req.args.card.number); return {}; }");
    await s.vault.reactors.react(s.app, id, { args: { card: `{{ ${s.cardId} }}` } });
    const fields = s.consoleEntries()[0]!.fields!;
    expect(fields.truncated).toBe(true);
    expect(fields.lines).toEqual(['card [REDACTED]']);
  });
});

it('consoleOutput is validated when the vault is created', async () => {
  const error = await rejection(() => createTestVault({ start: SUITE_START, reactors: { consoleOutput: 'everything' as ConsoleOutputMode } }));
  expect(error).toBeInstanceOf(ValidationError);
  expect(JSON.stringify((error as unknown as ValidationError).errors)).toContain('consoleOutput');
});

it('SensitiveValues redacts 4+ character leaves, cvcs of any length, JSON-escaped forms, and not short non-cvc leaves', () => {
  const values = new SensitiveValues();
  values.addTokenData({ name: 'Zoë "Q"', month: 12, cvc: '12', nested: [{ account: 12345678 }] });
  expect(values.redact('name Zoë "Q" json "Zoë \\"Q\\"" 12345678 month 12')).toBe('name [REDACTED] json "[REDACTED]" [REDACTED] month [REDACTED]');
  // The cvc '12' is a secret at any length; so month 12 is redacted through it (over-redaction is the safe side).
  const plain = new SensitiveValues();
  plain.addTokenData({ month: 12, name: 'abc' });
  expect(plain.redact('month 12 abc')).toBe('month 12 abc');
});
