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
  input: HTMLInputElement;
  /** The named parts this field holds (`number`; `month` and `year`; `cvc`; `text`). */
  parts(): Record<string, string | number>;
  state(): FieldState;
  clear(): void;
  /** Shows a token's data (what GET /tokens/{id} answered) in this field. */
  show(data: unknown): void;
}

interface FieldOptions {
  placeholder?: string;
  ariaLabel?: string;
  disabled?: boolean;
}

function makeInput(host: HTMLElement, attributes: Record<string, string>, options: FieldOptions, onInput: () => void): HTMLInputElement {
  const input = document.createElement('input');
  input.type = 'text';
  for (const [name, value] of Object.entries(attributes)) input.setAttribute(name, value);
  if (options.disabled === true) input.readOnly = true;
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
    input,
    parts: () => ({ cvc: digitsOf(input.value) }),
    state: () => cvcState(input.value, brand()),
    clear: () => void (input.value = ''),
    show: (data) => void (input.value = str(typeof data === 'object' && data !== null ? (data as { cvc?: unknown }).cvc : data)),
  };
}

function textField(host: HTMLElement, options: FieldOptions, changed: () => void): Field {
  const input = makeInput(
    host,
    { autocomplete: 'off', placeholder: options.placeholder ?? '', 'aria-label': options.ariaLabel ?? 'Secure field', maxlength: '2000' },
    options,
    changed,
  );
  return {
    input,
    parts: () => ({ text: input.value }),
    state: () => {
      const empty = input.value.length === 0;
      return { empty, complete: !empty, valid: !empty, errors: empty ? ['required'] : [] };
    },
    clear: () => void (input.value = ''),
    show: (data) => void (input.value = typeof data === 'string' ? data : JSON.stringify(data ?? null)),
  };
}

/** Builds the fields of an element type inside `host`; `changed` runs after every edit. */
export function buildFields(type: ElementType, options: FieldOptions, host: HTMLElement, changed: () => void): Field[] {
  const placeholder = (fallback: string) => options.placeholder ?? fallback;
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
      const number = numberField(host, { ...options, ariaLabel: 'Card number' }, '1234 1234 1234 1234', changed);
      const expiration = expirationField(host, { ...options, ariaLabel: 'Expiration date' }, 'MM / YY', changed);
      const cvc = cvcField(host, { ...options, ariaLabel: 'Security code' }, 'CVC', changed, () => cardBrand(number.input.value));
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
