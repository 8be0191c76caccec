import { Liquid, Output, type Template, TypeGuards } from 'liquidjs';
import { ValidationError } from '../errors/errors.js';

/**
 * The id guard: a token's id travels in URLs, logs, list pages and duplicate answers, to callers
 * that may not read the data, so it must not carry the data.
 *
 * 1. An id expression may use `data` only once, as the input of an alias filter (alias_card,
 *    alias_preserve_format, alias_preserve_length) whose output is random apart from the kept first
 *    and last characters, which are capped like alias_card's (first 6, last 4) and written as
 *    literal numbers. The cvc may not be aliased at all. Anything else (another filter, `data` in a
 *    filter argument or a tag, a computed path) is refused when the token is created.
 * 2. A literal id, and the literal text of an id expression, must not contain a data value of 4+
 *    characters after normalization (NFKC, default-ignorable and format characters such as
 *    zero-width spaces dropped, lower case); a numeric value (4+ digits, digits and separators
 *    only) must not appear in the id's digits either ('4242-4242…', full-width digits); and a
 *    card's cvc, whatever its length, must not appear in the id's letters and digits.
 */
const ALIAS_KEEPS: Readonly<Record<string, { first: number; last: number } | null>> = {
  alias_card: null,
  alias_preserve_format: { first: 6, last: 4 },
  alias_preserve_length: { first: 6, last: 4 },
};

/** Parses only (never renders): the engine renders and reports syntax errors itself. */
const analyzer = new Liquid({ ownPropertyOnly: true });

const RULE =
  'may use data only once, through alias_card, alias_preserve_format or alias_preserve_length applied first to one data field ' +
  '(keeping at most the first 6 and last 4 characters, given as literal numbers; never the cvc), so the id cannot carry the data';

/** Throws a ValidationError on `id` unless every use of `data` in the id expression is an alias. */
export function checkIdExpression(template: string): void {
  let templates: Template[];
  try {
    templates = analyzer.parse(template);
  } catch {
    return; // Not valid Liquid: the engine's render reports it in its own words.
  }
  let aliased = 0;
  for (const part of templates) {
    const uses = analyzer.analyzeSync([part]).globals['data']?.length ?? 0;
    if (uses === 0) continue;
    if (!(part instanceof Output) || uses !== 1 || !isAliasedField(part)) throw ValidationError.field('id', RULE);
    // Two aliases of one field keeping different ends would spell it out whole.
    if (++aliased > 1) throw ValidationError.field('id', RULE);
  }
}

function isAliasedField(output: Output): boolean {
  const [initial, ...rest] = output.value.initial.postfix;
  if (rest.length > 0 || !TypeGuards.isPropertyAccessToken(initial) || initial.variable !== undefined) return false;
  const [root, field] = initial.props;
  if (root === undefined || root.getText() !== 'data') return false;
  // Literal segments only: `data[x]` with `{% assign x = 'cvc' %}` would name the cvc unseen.
  if (!initial.props.every((p) => TypeGuards.isWordToken(p) || TypeGuards.isQuotedToken(p) || TypeGuards.isNumberToken(p))) return false;
  // `data` itself, or `data.cvc` / `data['cvc']`, is not an aliasable field.
  if (
    field === undefined ||
    field
      .getText()
      .replace(/^['"]|['"]$/g, '')
      .toLowerCase() === 'cvc'
  )
    return false;
  const filter = output.value.filters[0];
  if (filter === undefined || !Object.hasOwn(ALIAS_KEEPS, filter.name)) return false;
  const keeps = ALIAS_KEEPS[filter.name];
  if (keeps === null) return filter.args.length === 0;
  if (filter.args.length > 2) return false;
  const [first = '0', last = '0'] = filter.args.map((arg) => (Array.isArray(arg) ? '' : arg.getText()));
  return /^\d+$/.test(first) && /^\d+$/.test(last) && Number(first) <= keeps!.first && Number(last) <= keeps!.last;
}

/**
 * Throws a ValidationError on `id` when `text` (a literal id, or an id expression's source)
 * contains the data, as described above. `cvc` is a card's cvc, if any.
 */
export function checkIdText(text: string, data: unknown, cvc: string | null): void {
  const normal = normalize(text);
  const digits = digitsOf(normal);
  const alphanumeric = normal.replace(/[^\p{L}\p{N}]/gu, '');
  for (const leaf of leaves(data)) {
    const value = normalize(leaf);
    if (value.length >= 4 && normal.includes(value)) throw contains();
    if (isNumeric(value)) {
      const valueDigits = digitsOf(value);
      if (valueDigits.length >= 4 && digits.includes(valueDigits)) throw contains();
    }
  }
  if (cvc !== null) {
    const value = normalize(cvc).replace(/[^\p{L}\p{N}]/gu, '');
    if (value.length > 0 && alphanumeric.includes(value)) throw contains();
  }
}

function contains(): ValidationError {
  return ValidationError.field('id', 'must not contain the token data');
}

/** NFKC (full-width and other compatibility forms to plain), without invisible characters, lower case. */
export function normalize(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[\p{Default_Ignorable_Code_Point}\p{Cf}]/gu, '')
    .toLowerCase();
}

/** Digits only, every decimal digit of any script read as 0-9. */
function digitsOf(text: string): string {
  let out = '';
  for (const ch of text) if (/\p{Nd}/u.test(ch)) out += String(digitValue(ch));
  return out;
}

/** Unicode lays each script's digits out as a run 0-9: the value is the distance from the run's start. */
function digitValue(ch: string): number {
  const code = ch.codePointAt(0)!;
  let start = code;
  while (start > 0 && /\p{Nd}/u.test(String.fromCodePoint(start - 1))) start--;
  return (code - start) % 10;
}

/** Digits with separators only (spaces, '-', '.', '/', '+', parentheses). */
function isNumeric(value: string): boolean {
  return /\p{Nd}/u.test(value) && /^[\p{Nd}\s\-./+()]+$/u.test(value);
}

/** Every primitive leaf of the data (strings and numbers) as text. */
function leaves(data: unknown, out: string[] = []): string[] {
  if (typeof data === 'string' || typeof data === 'number') out.push(String(data));
  else if (Array.isArray(data)) data.forEach((item) => leaves(item, out));
  else if (data !== null && typeof data === 'object') Object.values(data).forEach((item) => leaves(item, out));
  return out;
}
