import { expect, it } from 'vitest';
import { main } from '../../examples/reactor-payment.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('reactor-payment example', (store) => {
  it('charges a card token through a local payment API and tokenizes the response', async () => {
    const printed: unknown[][] = [];
    const result = await main((...items) => printed.push(items), store.factory());

    expect(result.charge.raw).toEqual({ id: 'ch_1001', status: 'succeeded', amount: 1999, currency: 'eur' });
    const tokens = result.charge.tokens as { receipt: { id: string; type: string }; payout_account: { id: string; type: string } };
    expect(tokens.receipt).toMatchObject({ type: 'token' });
    expect(tokens.payout_account).toMatchObject({ type: 'bank' });
    expect(typeof tokens.receipt.id).toBe('string');
    // The API got the detokenized cards; the response carries tokens, not the bank data or the receipt.
    expect(result.apiSawCards).toEqual(['4242', '0002']);
    const text = JSON.stringify(result.charge);
    expect(text).not.toContain('000123456789');
    expect(text).not.toContain('rcpt_8812');
    expect(result.declined).toEqual({ status: 402, kind: 'InvalidPaymentMethodError' });
    expect(printed.length).toBe(2);
  });
});
