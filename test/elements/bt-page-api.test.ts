import { describe, expect, it } from 'vitest';
import { frameOptions } from '../../src/elements/browser/bt-element.js';
import { BasisTheoryApiError, BasisTheoryValidationError, frameStyle, toBtError, toCamel, toSnake } from '../../src/elements/browser/bt-shape.js';
import { RetrievedValues, isDataRef } from '../../src/elements/browser/frame-retrieved.js';
import { ElementsError } from '../../src/elements/browser/page.js';
import { createFetchHandler } from '../../src/http/index.js';
import { describeEachStore } from '../support/stores.js';

/*
 * The pure parts of Basis Theory's page API (docs/elements.md, "Basis Theory Web Elements and React
 * Elements"), in node: their options and style as the frame reads them, camelCase models, errors,
 * and the references a frame hands out for what it retrieved. The browser tests
 * (bt-web-elements.test.ts, bt-react-elements.test.ts) drive the whole.
 */

describe("Basis Theory's page API: shapes", () => {
  it('reads their options as the frame does: never targetId (an event name there, a token to show here), never a page-given value', () => {
    expect(
      frameOptions({
        targetId: 'tok_123',
        value: '4242424242424242',
        placeholder: { cardNumber: 'Number' },
        'aria-label': 'Card',
        disabled: true,
        readOnly: false,
        validation: /^\d{3}-\d{2}$/i,
        password: true,
        maxLength: 12,
        enableCopy: true,
        mask: [/\d/],
        autoComplete: 'off',
      }),
    ).toEqual({
      placeholder: { cardNumber: 'Number' },
      ariaLabel: 'Card',
      inputDisabled: true,
      readOnly: false,
      validation: { source: '^\\d{3}-\\d{2}$', flags: 'i' },
      password: true,
      maxLength: 12,
      enableCopy: true,
    });
  });

  it("turns their style into the frame's: base with :focus and ::placeholder, invalid, complete; other variants and properties dropped", () => {
    expect(
      frameStyle({
        base: { color: 'red', fontSize: '15px', textShadow: '1px 1px red', ':focus': { color: 'blue' }, '::placeholder': { color: 'gray' }, ':hover': { color: 'pink' } },
        invalid: { color: 'crimson' },
        complete: { color: 'green' },
        empty: { color: 'white' },
        fonts: ['https://fonts.example/a.css'],
      }),
    ).toEqual({ base: { color: 'red', fontSize: '15px' }, focus: { color: 'blue' }, invalid: { color: 'crimson' }, complete: { color: 'green' }, placeholderColor: 'gray' });
    expect(frameStyle(undefined)).toBeUndefined();
  });

  it('renames model keys both ways, leaving data and metadata as written', () => {
    expect(toSnake({ type: 'token', searchIndexes: ['{{ data }}'], privacy: { impactLevel: 'high' }, data: { cardNumber: 1 }, metadata: { orderId: 'x' } })).toEqual({
      type: 'token',
      search_indexes: ['{{ data }}'],
      privacy: { impact_level: 'high' },
      data: { cardNumber: 1 },
      metadata: { orderId: 'x' },
    });
    expect(toCamel({ tenant_id: 't', created_at: 'now', data: { expiration_month: 1 }, metadata: { order_id: 'x' }, card: { expiration_year: 2030 } })).toEqual({
      tenantId: 't',
      createdAt: 'now',
      data: { expiration_month: 1 },
      metadata: { order_id: 'x' },
      card: { expirationYear: 2030 },
    });
  });

  it('throws the vault refusals as BasisTheoryApiError and the frames own as BasisTheoryValidationError, codes kept', () => {
    const api = toBtError(new ElementsError({ code: 'authorization_error', message: 'no', status: 403 })) as BasisTheoryApiError;
    expect([api.name, api.status, api.data, api.message]).toEqual(['BasisTheoryApiError', 403, { code: 'authorization_error', detail: 'no' }, 'no']);
    const own = toBtError(new ElementsError({ code: 'element_outside_data', message: 'outside' })) as BasisTheoryValidationError;
    expect([own.name, own.details]).toEqual(['BasisTheoryValidationError', { code: 'element_outside_data' }]);
  });

  it('hands out references for retrieved data, each naming its value, and keeps at most 100 tokens', () => {
    const kept = new RetrievedValues();
    const refs = kept.keep({ number: '4242', nested: { cvc: '123' }, list: ['a'] }, 'el1') as any;
    expect(isDataRef(refs.number) && refs.number.elementId === 'el1' && refs.number.path === 'number').toBe(true);
    expect([kept.value(refs.number.correlationId, 'number'), kept.value(refs.nested.cvc.correlationId, 'nested.cvc'), kept.value(refs.list[0].correlationId, 'list.0')]).toEqual([
      '4242',
      '123',
      'a',
    ]);
    expect(JSON.stringify(refs)).not.toMatch(/4242|123/);
    const whole = kept.keep('4111', 'el1') as any;
    expect([whole.path, kept.value(whole.correlationId, '')]).toEqual(['', '4111']);
    expect([kept.value(whole.correlationId, 'x'), kept.value('other', ''), kept.value(refs.number.correlationId, '__proto__')]).toEqual([undefined, undefined, undefined]);
    for (let i = 0; i < 100; i++) kept.keep(String(i), 'el1');
    expect(kept.value(refs.number.correlationId, 'number')).toBeUndefined();
  });
});

describeEachStore("Basis Theory's page API: the proxy checks the frame's page origin", (store) => {
  it("a proxied call naming a page origin the public application does not allow is refused as the API's calls are", async () => {
    const vault = await store.vault();
    const handler = createFetchHandler(vault, { headerPrefix: 'BT' });
    const call = async (path: string, key: string, body: unknown, headers: Record<string, string> = {}) => {
      const response = await handler(
        new Request(`https://vault.test${path}`, { method: 'POST', headers: { 'BT-API-KEY': key, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }),
      );
      return { status: response.status, body: await response.text() };
    };
    const app = JSON.parse(
      (await call('/applications', vault.adminKey, { name: 'c', type: 'public', permissions: ['token:create'], allowed_origins: ['https://shop.example'] })).body,
    );
    const refused = await call('/proxy/charges', app.key, { a: 1 }, { 'BT-PROXY-URL': 'https://psp.example', 'BT-PAGE-ORIGIN': 'https://evil.example' });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatch(/does not allow browser elements on pages of \\"https:\/\/evil\.example\\"/);
  });
});
