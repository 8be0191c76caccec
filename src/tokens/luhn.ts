/**
 * Luhn (mod 10) check over a string of digits. Its own module so that the browser frames of
 * Elements (src/elements/card-rules.ts) check as the vault does without bundling the token types.
 */
export function isLuhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let n = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
  }
  return sum % 10 === 0;
}
