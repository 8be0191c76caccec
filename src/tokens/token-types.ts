import * as v from 'valibot';
import { ValidationError } from '../errors/errors.js';
import type { FieldErrors } from '../errors/errors.js';
import { addError, printableKey } from '../validation/field-errors.js';
import { issuesToFieldErrors } from '../validation/issues.js';
import { jsonProblems } from './token-input-checks.js';
import { isLuhnValid } from './luhn.js';

export { isLuhnValid };

/** A token type: how its data is validated and the defaults a token of it gets (ARCHITECTURE.md, Reference facts). */
export interface TokenTypeDefinition {
  name: string;
  /**
   * Validates the data and returns it unchanged (data is stored exactly as given). Throws a
   * ValidationError whose field paths start with `data` (`data.number`, or `data` for a primitive
   * type), with every problem of an object reported at once.
   */
  validate(data: unknown): unknown;
  /** Container a token gets when the create request names none, e.g. '/pci/high/'. */
  defaultContainer: string;
  /** Fingerprint expression used when the create request gives none, e.g. '{{ data.number }}'. */
  defaultFingerprintExpression: string;
  /** Default mask (a tree of Liquid expression strings), or null: masked reads return no data. */
  defaultMask: unknown;
  /** True for card: its cvc must be removed one hour after creation. */
  hasCvc: boolean;
}

// Every message is fixed text: a message must never quote the (sensitive) input.
const NUMBER_RULE = 'must be a string of 13 to 19 digits without spaces or separators';
const LUHN_RULE = 'is not a valid card number (Luhn check failed)';
const ROUTING_RULE = 'must be a string of exactly 9 digits';
const ABA_RULE = 'is not a valid routing number (ABA checksum failed)';
const MONTH_RULE = 'must be an integer month from 1 to 12';
const YEAR_RULE = 'must be a four-digit integer year';
const CVC_RULE = 'must be a string of 3 or 4 digits';

/** ABA routing checksum: 3(d1+d4+d7) + 7(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10), over 9 digits. */
export function isAbaRoutingValid(digits: string): boolean {
  const d = [...digits].map(Number);
  if (d.length !== 9 || d.some((n) => !(n >= 0 && n <= 9))) return false;
  const [d1, d2, d3, d4, d5, d6, d7, d8, d9] = d as [number, number, number, number, number, number, number, number, number];
  return (3 * (d1 + d4 + d7) + 7 * (d2 + d5 + d8) + (d3 + d6 + d9)) % 10 === 0;
}

const cardNumber = v.pipe(v.string(NUMBER_RULE), v.regex(/^\d{13,19}$/, NUMBER_RULE), v.check(isLuhnValid, LUHN_RULE));
const routingNumber = v.pipe(v.string(ROUTING_RULE), v.regex(/^\d{9}$/, ROUTING_RULE), v.check(isAbaRoutingValid, ABA_RULE));
const digitString = (min: number, max: number, rule: string) => v.pipe(v.string(rule), v.regex(new RegExp(`^\\d{${min},${max}}$`), rule));

const cardSchema = v.object(
  {
    number: cardNumber,
    expiration_month: v.optional(v.pipe(v.number(MONTH_RULE), v.integer(MONTH_RULE), v.minValue(1, MONTH_RULE), v.maxValue(12, MONTH_RULE))),
    expiration_year: v.optional(v.pipe(v.number(YEAR_RULE), v.integer(YEAR_RULE), v.minValue(1000, YEAR_RULE), v.maxValue(9999, YEAR_RULE))),
    cvc: v.optional(v.pipe(v.string(CVC_RULE), v.regex(/^\d{3,4}$/, CVC_RULE))),
  },
  'must be an object with number and optionally expiration_month, expiration_year and cvc',
);
const bankSchema = v.object(
  {
    routing_number: routingNumber,
    // Spec 2.2: "up to seventeen digits".
    account_number: digitString(1, 17, 'must be a string of 1 to 17 digits'),
  },
  'must be an object with routing_number and account_number',
);

/** Validates with a valibot schema; for object schemas, keys outside it are errors too. */
function validator(schema: v.GenericSchema, objectKeys?: readonly string[]): (data: unknown) => unknown {
  return (data) => {
    // valibot's object schema accepts arrays (they are objects); card and bank data never are.
    if (objectKeys !== undefined && Array.isArray(data)) {
      throw ValidationError.field('data', `must be an object with ${objectKeys.join(', ')}`);
    }
    const result = v.safeParse(schema, data, { abortPipeEarly: true });
    const errors: FieldErrors = result.success ? {} : issuesToFieldErrors(result.issues, 'data');
    if (objectKeys !== undefined && typeof data === 'object' && data !== null && !Array.isArray(data)) {
      for (const key of Object.keys(data)) {
        if (objectKeys.includes(key)) continue;
        const name = printableKey(key);
        const allowed = `allowed keys: ${objectKeys.join(', ')}`;
        if (name === null) addError(errors, 'data', `has an unrecognized key; ${allowed}`);
        else addError(errors, `data.${name}`, `is not allowed; ${allowed}`);
      }
    }
    if (Object.keys(errors).length > 0) throw new ValidationError(errors);
    return data;
  };
}

function anyJson(data: unknown): unknown {
  // null is treated as missing data: a token of nothing is almost certainly a client bug.
  if (data === undefined || data === null) throw ValidationError.field('data', 'is required');
  const errors = jsonProblems(data, 'data');
  if (Object.keys(errors).length > 0) throw new ValidationError(errors);
  return data;
}

function define(definition: TokenTypeDefinition): TokenTypeDefinition {
  return Object.freeze(definition);
}

const lastFour = '{{ data | reveal_last: 4 }}';
// reveal: first, last, mask char, characters kept as they are: shows the last four digits, keeps dashes.
const lastFourKeepDashes = "{{ data | reveal: 0, 4, 'X', '-' }}";

const DEFINITIONS: TokenTypeDefinition[] = [
  define({
    name: 'token',
    validate: anyJson,
    defaultContainer: '/general/high/',
    defaultFingerprintExpression: '{{ data | stringify }}',
    defaultMask: null,
    hasCvc: false,
  }),
  define({
    name: 'card',
    validate: validator(cardSchema, ['number', 'expiration_month', 'expiration_year', 'cvc']),
    defaultContainer: '/pci/high/',
    defaultFingerprintExpression: '{{ data.number }}',
    defaultMask: Object.freeze({
      number: '{{ data.number | reveal_last: 4 }}',
      expiration_month: '{{ data.expiration_month }}',
      expiration_year: '{{ data.expiration_year }}',
    }),
    hasCvc: true,
  }),
  define({
    name: 'bank',
    validate: validator(bankSchema, ['routing_number', 'account_number']),
    defaultContainer: '/bank/high/',
    defaultFingerprintExpression: '{{ data.account_number }}|{{ data.routing_number }}',
    defaultMask: Object.freeze({
      routing_number: '{{ data.routing_number }}',
      account_number: '{{ data.account_number | reveal_last: 4 }}',
    }),
    hasCvc: false,
  }),
  define({
    name: 'card_number',
    validate: validator(cardNumber),
    defaultContainer: '/pci/high/',
    defaultFingerprintExpression: '{{ data }}',
    defaultMask: lastFour,
    hasCvc: false,
  }),
  define({
    name: 'us_bank_routing_number',
    validate: validator(routingNumber),
    defaultContainer: '/bank/low/',
    defaultFingerprintExpression: '{{ data }}',
    defaultMask: lastFour,
    hasCvc: false,
  }),
  define({
    name: 'us_bank_account_number',
    validate: validator(digitString(3, 17, 'must be a string of 3 to 17 digits')),
    defaultContainer: '/bank/high/',
    defaultFingerprintExpression: '{{ data }}',
    defaultMask: lastFour,
    hasCvc: false,
  }),
  define({
    name: 'social_security_number',
    validate: validator(
      v.pipe(v.string('must be a string of 9 digits, optionally as 123-45-6789'), v.regex(/^(?:\d{9}|\d{3}-\d{2}-\d{4})$/, 'must be 9 digits, optionally as 123-45-6789')),
    ),
    defaultContainer: '/pii/high/',
    defaultFingerprintExpression: "{{ data | remove: '-' }}",
    defaultMask: lastFourKeepDashes,
    hasCvc: false,
  }),
  define({
    name: 'employer_id_number',
    validate: validator(
      v.pipe(v.string('must be a string of 9 digits, optionally as 12-3456789'), v.regex(/^(?:\d{9}|\d{2}-\d{7})$/, 'must be 9 digits, optionally as 12-3456789')),
    ),
    defaultContainer: '/pii/high/',
    defaultFingerprintExpression: "{{ data | remove: '-' }}",
    defaultMask: lastFourKeepDashes,
    hasCvc: false,
  }),
];

/** Every token type by name (ARCHITECTURE.md, Reference facts). */
export const TOKEN_TYPES: ReadonlyMap<string, TokenTypeDefinition> = new Map(DEFINITIONS.map((d) => [d.name, d]));

/**
 * The token type of that name (exact, case-sensitive).
 * @example getTokenType('card').validate({ number: '4242424242424242' })
 */
export function getTokenType(name: string): TokenTypeDefinition {
  const definition = TOKEN_TYPES.get(name);
  if (definition !== undefined) return definition;
  const shown = typeof name === 'string' ? printableKey(name) : null;
  throw ValidationError.field('type', `unknown token type${shown === null ? '' : ` '${shown}'`}; expected one of ${[...TOKEN_TYPES.keys()].join(', ')}`);
}
