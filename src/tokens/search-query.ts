import { ValidationError } from '../errors/errors.js';
import { normalizeContainer } from '../auth/containers.js';

/** One condition of a token search; a query is the AND of its terms. */
export type SearchTerm = { field: 'data' | 'type' | 'container' | 'fingerprint' | 'id'; value: string } | { field: 'metadata'; key: string; value: string };

type PlainField = Exclude<SearchTerm['field'], 'metadata'>;
const PLAIN_FIELDS: ReadonlySet<string> = new Set<PlainField>(['data', 'type', 'container', 'fingerprint', 'id']);

const SYNTAX =
  'expected terms field:value joined by AND or spaces, e.g. type:card AND metadata.customer:"ACME Inc"; ' +
  'fields: data, type, container, fingerprint, id, metadata.<key>; quote a value with "…" to include spaces, \\" for a quote';

/**
 * Parses a search query into terms. Syntax: `field:value` terms joined by `AND` (any case) or plain
 * whitespace, both meaning AND; `metadata.<key>:value` for metadata; a value may be double-quoted to
 * include spaces (`\"` and `\\` escape inside quotes). Field names are case-insensitive; container
 * values are normalized like container paths. `OR`, `NOT`, unknown fields, empty values, unclosed
 * quotes and empty queries are ValidationErrors on `query`. Messages refer to terms by position and
 * never repeat the query, which may hold sensitive values.
 * @example parseSearchQuery('type:card AND metadata.customer:"ACME Inc"')
 * // [{ field: 'type', value: 'card' }, { field: 'metadata', key: 'customer', value: 'ACME Inc' }]
 */
export function parseSearchQuery(query: unknown): SearchTerm[] {
  if (typeof query !== 'string') throw fail('must be a string; ' + SYNTAX);
  return new QueryParser(query).parse();
}

function fail(message: string): ValidationError {
  return ValidationError.field('query', message);
}

class QueryParser {
  readonly #text: string;
  #pos = 0;
  readonly #terms: SearchTerm[] = [];

  constructor(text: string) {
    this.#text = text;
  }

  parse(): SearchTerm[] {
    let afterAnd = false;
    for (this.#skipSpace(); this.#pos < this.#text.length; this.#skipSpace()) {
      const word = this.#peekWord();
      const keyword = word.toUpperCase();
      if (keyword === 'AND') {
        if (this.#terms.length === 0) throw fail('must not start with AND; ' + SYNTAX);
        if (afterAnd) throw fail('has AND twice in a row; ' + SYNTAX);
        this.#pos += word.length;
        afterAnd = true;
        continue;
      }
      if (keyword === 'OR' || keyword === 'NOT') throw fail(`${keyword} is not supported: terms are always combined with AND; ` + SYNTAX);
      this.#terms.push(this.#term());
      afterAnd = false;
    }
    if (this.#terms.length === 0) throw fail('must not be empty; ' + SYNTAX);
    if (afterAnd) throw fail('must not end with AND; ' + SYNTAX);
    return this.#terms;
  }

  #term(): SearchTerm {
    const n = this.#terms.length + 1;
    const colon = this.#text.indexOf(':', this.#pos);
    const word = this.#peekWord();
    // The field runs to the first colon, which must come before any space or quote.
    if (colon < 0 || colon >= this.#pos + word.length || this.#text.slice(this.#pos, colon).includes('"')) {
      throw fail(`term ${n} is not field:value; ` + SYNTAX);
    }
    const name = this.#text.slice(this.#pos, colon);
    this.#pos = colon + 1;
    const value = this.#value(n);
    if (value.length === 0) throw fail(`term ${n} has an empty value; ` + SYNTAX);

    const lower = name.toLowerCase();
    if (lower.startsWith('metadata.')) {
      const key = name.slice('metadata.'.length);
      if (key.length === 0) throw fail(`term ${n} names no metadata key (metadata.<key>:value); ` + SYNTAX);
      return { field: 'metadata', key, value };
    }
    if (!PLAIN_FIELDS.has(lower)) {
      if (lower === 'metadata') throw fail(`term ${n} names no metadata key (metadata.<key>:value); ` + SYNTAX);
      throw fail(`term ${n} has an unknown field; ` + SYNTAX);
    }
    if (lower === 'container') return { field: 'container', value: this.#container(value, n) };
    return { field: lower as PlainField, value };
  }

  #value(n: number): string {
    if (this.#text[this.#pos] !== '"') {
      const raw = this.#peekWord();
      if (raw.includes('"')) throw fail(`term ${n} has a stray quote; quote the whole value; ` + SYNTAX);
      this.#pos += raw.length;
      return raw;
    }
    let out = '';
    for (let i = this.#pos + 1; i < this.#text.length; i++) {
      const ch = this.#text[i]!;
      if (ch === '"') {
        const next = this.#text[i + 1];
        if (next !== undefined && !/\s/.test(next)) throw fail(`term ${n} has text right after its closing quote; ` + SYNTAX);
        this.#pos = i + 1;
        return out;
      }
      // Only \" and \\ are escapes; any other backslash is kept as written.
      if (ch === '\\' && (this.#text[i + 1] === '"' || this.#text[i + 1] === '\\')) {
        out += this.#text[i + 1];
        i++;
      } else {
        out += ch;
      }
    }
    throw fail(`term ${n} has an unclosed quote; ` + SYNTAX);
  }

  #container(value: string, n: number): string {
    try {
      return normalizeContainer(value, 'query');
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      throw fail(`term ${n}: container ${error.errors['query']?.join('; ') ?? 'is invalid'}`);
    }
  }

  /** The run of non-space characters at the cursor. */
  #peekWord(): string {
    const match = /^\S*/.exec(this.#text.slice(this.#pos));
    return match?.[0] ?? '';
  }

  #skipSpace(): void {
    while (this.#pos < this.#text.length && /\s/.test(this.#text[this.#pos]!)) this.#pos++;
  }
}
