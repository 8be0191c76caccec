/**
 * What a token intent shows of its data instead of the data (docs/token-intents.md): for a card,
 * the first six and last four digits (the truncation PCI DSS allows to be displayed), the brand
 * read from the number's issuer range, and the expiry; for a bank account, the routing number
 * (a bank token's default mask shows it too) and the account number's last four digits. Nothing
 * else: no BIN database is consulted, so `funding` is 'unknown'. That is the revealed summary; the
 * masked one shows only what the type's default mask shows of the data (src/tokens/token-types.ts):
 * a card's last four digits and expiry, a card number's last four, a bank account's routing number
 * and last four, so a masked reader learns no more from an intent than from a token of its data.
 */

export interface CardDetails {
  bin: string;
  last4: string;
  brand: string;
  funding: 'unknown';
  expiration_month?: number;
  expiration_year?: number;
}

/** A card's summary under mask: the card default mask shows the last four digits and the expiry. */
export type MaskedCardDetails = Pick<CardDetails, 'last4' | 'expiration_month' | 'expiration_year'>;

export interface BankDetails {
  routing_number: string;
  last4: string;
}

/** Issuer ranges by brand (Basis Theory's brand names), checked in order: the first match wins. */
const BRANDS: readonly { brand: string; ranges: readonly (readonly [number, number])[]; digits: number }[] = [
  {
    brand: 'american-express',
    digits: 2,
    ranges: [
      [34, 34],
      [37, 37],
    ],
  },
  {
    brand: 'diners-club',
    digits: 3,
    ranges: [
      [300, 305],
      [360, 369],
      [380, 399],
    ],
  },
  { brand: 'jcb', digits: 4, ranges: [[3528, 3589]] },
  {
    brand: 'discover',
    digits: 6,
    ranges: [
      [601100, 601199],
      [622126, 622925],
      [644000, 659999],
    ],
  },
  {
    brand: 'unionpay',
    digits: 2,
    ranges: [
      [62, 62],
      [81, 81],
    ],
  },
  {
    brand: 'mastercard',
    digits: 4,
    ranges: [
      [2221, 2720],
      [5100, 5599],
    ],
  },
  {
    brand: 'maestro',
    digits: 2,
    ranges: [
      [50, 50],
      [56, 58],
      [63, 63],
      [67, 67],
    ],
  },
  { brand: 'visa', digits: 1, ranges: [[4, 4]] },
];

/** The brand of a card number by its issuer range; 'unknown' when none matches. */
export function cardBrand(number: string): string {
  for (const { brand, digits, ranges } of BRANDS) {
    const prefix = Number(number.slice(0, digits));
    if (ranges.some(([low, high]) => prefix >= low && prefix <= high)) return brand;
  }
  return 'unknown';
}

function card(number: string, month?: unknown, year?: unknown): CardDetails {
  const details: CardDetails = { bin: number.slice(0, 6), last4: number.slice(-4), brand: cardBrand(number), funding: 'unknown' };
  if (typeof month === 'number') details.expiration_month = month;
  if (typeof year === 'number') details.expiration_year = year;
  return details;
}

/**
 * The summary an intent of `type` shows of its (validated) data under `transform` (reveal or
 * mask): `{ card }`, `{ bank }`, or nothing.
 */
export function intentDetails(type: string, data: unknown, transform: 'reveal' | 'mask'): { card?: CardDetails | MaskedCardDetails; bank?: BankDetails } {
  const shown = (details: CardDetails): CardDetails | MaskedCardDetails => (transform === 'reveal' ? details : masked(details));
  if (type === 'card_number' && typeof data === 'string') return { card: shown(card(data)) };
  if (typeof data !== 'object' || data === null) return {};
  const record = data as Record<string, unknown>;
  if (type === 'card' && typeof record['number'] === 'string') return { card: shown(card(record['number'], record['expiration_month'], record['expiration_year'])) };
  if (type === 'bank' && typeof record['routing_number'] === 'string' && typeof record['account_number'] === 'string') {
    // The bank default mask shows the routing number and the account's last four: the same under both.
    return { bank: { routing_number: record['routing_number'], last4: record['account_number'].slice(-4) } };
  }
  return {};
}

function masked({ last4, expiration_month, expiration_year }: CardDetails): MaskedCardDetails {
  const details: MaskedCardDetails = { last4 };
  if (expiration_month !== undefined) details.expiration_month = expiration_month;
  if (expiration_year !== undefined) details.expiration_year = expiration_year;
  return details;
}
