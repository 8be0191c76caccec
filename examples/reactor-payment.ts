/**
 * Example: a reactor that charges a card token through a payment API and tokenizes the response.
 *
 * 1. A stand-in "payment API" is started on 127.0.0.1 (any free port).
 * 2. A test vault is opened whose reactors may reach 127.0.0.1 (egress is deny-by-default, and
 *    loopback is a private address, so both allowHosts and allowPrivateNetwork are needed).
 * 3. A formula POSTs the detokenized card to the API with `fetch` and returns `{ raw, tokenize }`:
 *    the receipt and the payout bank account come back as tokens, never as plaintext.
 * 4. The checkout application invokes the reactor with `{{ <card token id> }}` in its args.
 */
import { once } from 'node:events';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { createTestVault, type TestVaultOptions } from 'tokenvault/testing';
import { statusOf } from 'tokenvault/http';

const FORMULA_CODE = `
module.exports = async function (req) {
  const { card, amount, currency } = req.args;
  const response = await fetch(req.configuration.api_url + '/charges', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer ' + req.configuration.api_key },
    body: JSON.stringify({
      amount,
      currency: currency || 'usd',
      card: { number: card.number, exp_month: card.expiration_month, exp_year: card.expiration_year, cvc: card.cvc },
    }),
  });
  const charge = await response.json();
  if (response.status === 402) throw new InvalidPaymentMethodError(charge.error);
  if (!response.ok) throw new ServiceUnavailableError('The payment API answered ' + response.status);
  console.log('charged', charge.id);
  return {
    raw: { id: charge.id, status: charge.status, amount: charge.amount, currency: charge.currency },
    tokenize: {
      receipt: { type: 'token', data: charge.receipt },
      payout_account: { type: 'bank', data: charge.payout_account },
    },
  };
};
`;

export interface PaymentExampleResult {
  /** What the reactor returned for a good card. */
  charge: { raw?: unknown; tokens?: unknown };
  /** The status and error class of a declined card. */
  declined: { status: number; kind: string };
  /** Last four digits of each card number the payment API received (it got the full numbers). */
  apiSawCards: string[];
}

/** Runs the example; prints with `log` (default console.log) and returns what happened. */
/** `store`: where the vault keeps its data (default SQLite in memory; the tests pass each store). */
export async function main(log: (...items: unknown[]) => void = console.log, store?: TestVaultOptions['store']): Promise<PaymentExampleResult> {
  const apiSawCards: string[] = [];
  const api = createServer((req, res) => void handleCharge(req, res, apiSawCards));
  api.listen(0, '127.0.0.1');
  await once(api, 'listening');
  const { port } = api.address() as AddressInfo;

  const vault = await createTestVault({ store, reactors: { egress: { allowHosts: ['127.0.0.1'], allowPrivateNetwork: true } } });
  try {
    const admin = await vault.authenticate(vault.adminKey);
    // The checkout app stores cards and invokes reactors; the reactor's app only creates tokens.
    const checkout = await vault.caller({ name: 'checkout', permissions: ['token:create', 'token:use'] });
    const payments = await vault.caller({ name: 'payments reactor', permissions: ['token:create'] });

    const formula = await vault.formulas.create(admin, {
      name: 'Charge a card',
      code: FORMULA_CODE,
      configuration: [
        { name: 'api_url', type: 'string' },
        { name: 'api_key', type: 'string' },
      ],
      request_parameters: [
        { name: 'card', type: 'object' },
        { name: 'card.number', type: 'string' },
        { name: 'amount', type: 'number' },
        { name: 'currency', type: 'string', optional: true },
      ],
    });
    const reactor = await vault.reactors.create(admin, {
      name: 'Local PSP charge',
      formula: { id: formula.id },
      configuration: { api_url: `http://127.0.0.1:${port}`, api_key: 'sk_test_example' },
      application: { id: payments.applicationId },
    });

    const good = await vault.tokens.create(checkout, { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' } });
    const charge = await vault.reactors.react(checkout, reactor.id, { args: { card: `{{ ${good.id} }}`, amount: '1999', currency: 'eur' } });
    log('charge:', JSON.stringify(charge, null, 2));

    const bad = await vault.tokens.create(checkout, { type: 'card', data: { number: '4000000000000002', expiration_month: 1, expiration_year: 2032 } });
    let declined = { status: 0, kind: '' };
    try {
      await vault.reactors.react(checkout, reactor.id, { args: { card: `{{ ${bad.id} }}`, amount: 500 } });
    } catch (error) {
      declined = { status: statusOf(error), kind: (error as { kind?: string }).kind ?? (error as Error).name };
      log('declined:', declined.status, declined.kind, (error as Error).message);
    }
    return { charge, declined, apiSawCards };
  } finally {
    await vault.close();
    api.close();
    await once(api, 'close');
  }
}

/** The stand-in payment API: POST /charges declines 4000000000000002 and approves other cards. */
async function handleCharge(req: IncomingMessage, res: ServerResponse, seen: string[]): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const reply = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method !== 'POST' || req.url !== '/charges') return reply(404, { error: 'not found' });
  if (req.headers.authorization !== 'Bearer sk_test_example') return reply(401, { error: 'bad key' });
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { amount: number; currency: string; card: { number: string } };
  seen.push(body.card.number.slice(-4));
  if (body.card.number === '4000000000000002') return reply(402, { error: 'Your card was declined.' });
  reply(200, {
    id: 'ch_1001',
    status: 'succeeded',
    amount: body.amount,
    currency: body.currency,
    receipt: { number: 'rcpt_8812', authorization_code: 'A1B2C3' },
    payout_account: { routing_number: '021000021', account_number: '000123456789' },
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
