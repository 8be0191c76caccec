/** The vault filters (ARCHITECTURE.md, Reference facts), registered on the liquid instance beside the standard ones. */
import { aliasArgs, bytesOf, hmac } from './alias-hmac-filters.js';
import { aliasCard, aliasPreserveFormat, aliasPreserveLength } from './aliases.js';
import { cardBin, cardExp, cardMask, digitsOf } from './card-filters.js';
import { jsonFilter, stringify, toBoolean, toNumber, toStringFilter } from './conversion-filters.js';
import { type FilterThis, type VaultFilter, charged } from './filter-values.js';
import { last4, pad, reveal, revealLast } from './mask-filters.js';

/** The vault filters by name. */
export const vaultFilters: Readonly<Record<string, VaultFilter>> = Object.freeze({
  stringify(this: FilterThis, value: unknown) {
    return stringify(this, 'stringify', value);
  },
  json_stringify(this: FilterThis, value: unknown) {
    return stringify(this, 'json_stringify', value);
  },
  json: jsonFilter,
  last4,
  reveal_last: revealLast,
  reveal,
  card_bin: cardBin,
  card_exp: cardExp,
  card_mask: cardMask,
  pad_left(this: FilterThis, value: unknown, width?: unknown, char?: unknown) {
    return pad(this, 'pad_left', value, width, char, false);
  },
  pad_right(this: FilterThis, value: unknown, width?: unknown, char?: unknown) {
    return pad(this, 'pad_right', value, width, char, true);
  },
  to_number: toNumber,
  to_string: toStringFilter,
  to_boolean: toBoolean,
  alias_preserve_format(this: FilterThis, value: unknown, first?: unknown, last?: unknown) {
    return aliasPreserveFormat(...aliasArgs(this, 'alias_preserve_format', value, first, last));
  },
  alias_preserve_length(this: FilterThis, value: unknown, first?: unknown, last?: unknown) {
    return aliasPreserveLength(...aliasArgs(this, 'alias_preserve_length', value, first, last));
  },
  alias_card(value: unknown) {
    return aliasCard(digitsOf('alias_card', value, ''));
  },
  hmac,
  to_base64(this: FilterThis, value: unknown) {
    return charged(this, bytesOf(this, 'to_base64', value).toString('base64'));
  },
  to_base16(this: FilterThis, value: unknown) {
    return charged(this, bytesOf(this, 'to_base16', value).toString('hex'));
  },
} satisfies Record<string, VaultFilter>);
