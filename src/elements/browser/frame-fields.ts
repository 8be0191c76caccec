/*
 * The inputs of each element type, inside the frame: formatting as the user types, autocomplete
 * attributes, the state a change event reports, and how a revealed token is shown.
 */
import {
  type FieldState,
  cardBrand,
  cardNumberState,
  cvcState,
  digitsOf,
  expirationState,
  formatCardNumber,
  formatExpiration,
  maxCardDigits,
  parseExpiration,
} from '../card-rules.js';
import type { ElementType } from '../protocol.js';

export interface Field {
  /** Which input this is (a card element has three). */
  name: 'cardNumber' | 'cardExpirationDate' | 'cardVerificationCode' | 'text';
  input: HTMLInputElement;
  /** This input's placeholder in an `update`'s options, when they set one. */
  placeholderOf(options: Record<string, unknown>): string | undefined;
  /** The named parts this field holds (`number`; `month` and `year`; `cvc`; `text`). */
  parts(): Record<string, string | number>;
  state(): FieldState;
  clear(): void;
  /** Shows a token's data (what GET /tokens/{id} answered) in this field. */
  show(data: unknown): void;
}

export interface FieldOptions {
  /** A string; for a card element, one per input (`{ cardNumber, cardExpirationDate, cardSecurityCode }`). */
  placeholder?: string | Record<string, string>;
  ariaLabel?: string;
  /** Read-only (tokenvault's page API); Basis Theory's sets readOnly and disabled apart. */
  disabled?: boolean;
  readOnly?: boolean;
  inputDisabled?: boolean;
  /** A text element's pattern (a RegExp's source and flags): valid when it matches. */
  validation?: { source: string; flags: string };
  /** A text element typed as a password. */
  password?: boolean;
  maxLength?: number;
}

/** The placeholder a card element's input takes from a per-input placeholder object. */
const CARD_PLACEHOLDER_KEYS: Record<Field['name'], string> = {
  cardNumber: 'cardNumber',
  cardExpirationDate: 'cardExpirationDate',
  cardVerificationCode: 'cardSecurityCode',
  text: 'text',
};

function placeholderFor(name: Field['name'], placeholder: unknown): string | undefined {
  if (typeof placeholder === 'string') return placeholder;
  if (typeof placeholder === 'object' && placeholder !== null) {
    const own = (placeholder as Record<string, unknown>)[CARD_PLACEHOLDER_KEYS[name]];
    if (typeof own === 'string') return own;
  }
  return undefined;
}

function makeInput(host: HTMLElement, attributes: Record<string, string>, options: FieldOptions, onInput: () => void): HTMLInputElement {
  const input = document.createElement('input');
  input.type = 'text';
  for (const [name, value] of Object.entries(attributes)) input.setAttribute(name, value);
  if (options.disabled === true || options.readOnly === true) input.readOnly = true;
  if (options.inputDisabled === true) input.disabled = true;
  input.spellcheck = false;
  input.addEventListener('input', onInput);
  host.appendChild(input);
  return input;
}

function now(): { month: number; year: number } {
  const date = new Date();
  return { month: date.getMonth() + 1, year: date.getFullYear() };
}

const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '');

function numberField(host: HTMLElement, options: FieldOptions, placeholder: string, changed: () => void): Field {
  const input = makeInput(
    host,
    { autocomplete: 'cc-number', inputmode: 'numeric', name: 'cardnumber', placeholder, 'aria-label': options.ariaLabel ?? 'Card number' },
    options,
    () => {
      input.value = formatCardNumber(input.value);
      input.maxLength = maxCardDigits(input.value) + 4;
      changed();
    },
  );
  return {
    name: 'cardNumber',
    placeholderOf: (o) => placeholderFor('cardNumber', o['placeholder']),
    input,
    parts: () => ({ number: digitsOf(input.value) }),
    state: () => cardNumberState(input.value),
    clear: () => void (input.value = ''),
    show: (data) => void (input.value = formatCardNumber(str(typeof data === 'object' && data !== null ? (data as { number?: unknown }).number : data))),
  };
}

function expirationField(host: HTMLElement, options: FieldOptions, placeholder: string, changed: () => void): Field {
  const input = makeInput(
    host,
    { autocomplete: 'cc-exp', inputmode: 'numeric', name: 'exp-date', placeholder, maxlength: '9', 'aria-label': options.ariaLabel ?? 'Expiration date' },
    options,
    () => {
      // Deleting the separator deletes the month's last digit too, as users expect.
      input.value = formatExpiration(input.value);
      changed();
    },
  );
  return {
    name: 'cardExpirationDate',
    placeholderOf: (o) => placeholderFor('cardExpirationDate', o['placeholder']),
    input,
    parts: (): Record<string, number> => {
      const parsed = parseExpiration(input.value);
      return parsed === null ? {} : { month: parsed.month, year: parsed.year };
    },
    state: () => expirationState(input.value, now()),
    clear: () => void (input.value = ''),
    show: (data) => {
      const d = (typeof data === 'object' && data !== null ? data : {}) as { expiration_month?: unknown; expiration_year?: unknown };
      input.value = formatExpiration(`${str(d.expiration_month).padStart(2, '0')}${str(d.expiration_year).slice(-2)}`);
    },
  };
}

function cvcField(host: HTMLElement, options: FieldOptions, placeholder: string, changed: () => void, brand: () => ReturnType<typeof cardBrand>): Field {
  const input = makeInput(
    host,
    { autocomplete: 'cc-csc', inputmode: 'numeric', name: 'cvc', placeholder, maxlength: '4', 'aria-label': options.ariaLabel ?? 'Security code' },
    options,
    () => {
      input.value = digitsOf(input.value).slice(0, 4);
      changed();
    },
  );
  return {
    name: 'cardVerificationCode',
    placeholderOf: (o) => placeholderFor('cardVerificationCode', o['placeholder']),
    input,
    parts: () => ({ cvc: digitsOf(input.value) }),
    state: () => cvcState(input.value, brand()),
    clear: () => void (input.value = ''),
    show: (data) => void (input.value = str(typeof data === 'object' && data !== null ? (data as { cvc?: unknown }).cvc : data)),
  };
}

function textField(host: HTMLElement, options: FieldOptions, changed: () => void): Field {
  const maxLength = typeof options.maxLength === 'number' && options.maxLength > 0 && options.maxLength < 2000 ? options.maxLength : 2000;
  const input = makeInput(
    host,
    { autocomplete: 'off', placeholder: placeholderFor('text', options.placeholder) ?? '', 'aria-label': options.ariaLabel ?? 'Secure field', maxlength: String(maxLength) },
    options,
    changed,
  );
  if (options.password === true) input.type = 'password';
  let pattern: RegExp | null = null;
  try {
    if (options.validation !== undefined) pattern = new RegExp(String(options.validation.source), String(options.validation.flags ?? '').replace(/[gy]/g, ''));
  } catch {
    pattern = null;
  }
  return {
    name: 'text',
    placeholderOf: (o) => placeholderFor('text', o['placeholder']),
    input,
    parts: () => ({ text: input.value }),
    state: () => {
      const empty = input.value.length === 0;
      if (empty) return { empty, complete: false, valid: false, errors: ['required'] };
      const valid = pattern === null || pattern.test(input.value);
      return { empty, complete: valid, valid, errors: valid ? [] : ['invalid'] };
    },
    clear: () => void (input.value = ''),
    show: (data) => void (input.value = typeof data === 'string' ? data : JSON.stringify(data ?? null)),
  };
}

/** Builds the fields of an element type inside `host`; `changed` runs after every edit. */
export function buildFields(type: ElementType, options: FieldOptions, host: HTMLElement, changed: () => void): Field[] {
  const placeholder = (fallback: string) => (typeof options.placeholder === 'string' ? options.placeholder : fallback);
  switch (type) {
    case 'cardNumber':
      return [numberField(host, options, placeholder('1234 1234 1234 1234'), changed)];
    case 'cardExpirationDate':
      return [expirationField(host, options, placeholder('MM / YY'), changed)];
    case 'cardVerificationCode':
      return [cvcField(host, options, placeholder('CVC'), changed, () => 'unknown')];
    case 'text':
      return [textField(host, options, changed)];
    case 'card': {
      host.classList.add('card');
      // Only a per-input object names a card element's placeholders (one string cannot fit three inputs).
      const own = (name: Field['name'], fallback: string) => (typeof options.placeholder === 'object' ? placeholderFor(name, options.placeholder) : undefined) ?? fallback;
      const number = numberField(host, { ...options, ariaLabel: 'Card number' }, own('cardNumber', '1234 1234 1234 1234'), changed);
      const expiration = expirationField(host, { ...options, ariaLabel: 'Expiration date' }, own('cardExpirationDate', 'MM / YY'), changed);
      const cvc = cvcField(host, { ...options, ariaLabel: 'Security code' }, own('cardVerificationCode', 'CVC'), changed, () => cardBrand(number.input.value));
      return [number, expiration, cvc];
    }
  }
}

/** The element's whole value as the vault's card type (or a string) wants it. */
export function wholeValue(type: ElementType, parts: Record<string, string | number>): unknown {
  switch (type) {
    case 'cardNumber':
      return parts['number'];
    case 'cardVerificationCode':
      return parts['cvc'];
    case 'text':
      return parts['text'];
    case 'cardExpirationDate':
      return { expiration_month: parts['month'], expiration_year: parts['year'] };
    case 'card':
      return { number: parts['number'], expiration_month: parts['month'], expiration_year: parts['year'], cvc: parts['cvc'] };
  }
}
