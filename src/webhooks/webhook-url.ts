import { isIP } from 'node:net';
import { ValidationError } from '../errors/errors.js';
import { hostOf, parseHttpUrl } from '../sandbox/egress/egress-target.js';
import { isRefusedAddress } from '../sandbox/egress/ip-ranges.js';

export const MAX_URL_LENGTH = 2048;

/**
 * Checks a webhook or callback URL when it is given (request time): an absolute http(s) URL of at
 * most 2,048 characters without credentials, whose host is not an IP literal of a loopback,
 * private, link-local, CGNAT, metadata or otherwise non-public address nor a `localhost` name,
 * unless the private network is allowed. Names are not resolved here (an answer may change before
 * the delivery); every delivery resolves the host again and refuses a non-public address then.
 * Throws a ValidationError on `field`; returns the URL as given.
 */
export function checkWebhookUrl(value: unknown, field: string, allowPrivateNetwork: boolean): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_URL_LENGTH) {
    throw ValidationError.field(field, `must be an absolute http or https URL of at most ${MAX_URL_LENGTH} characters`);
  }
  let url: URL;
  try {
    url = parseHttpUrl(value);
  } catch (error) {
    throw ValidationError.field(field, `must be an absolute http or https URL (${(error as Error).message})`);
  }
  if (url.username !== '' || url.password !== '') throw ValidationError.field(field, 'must not carry credentials (user:password@)');
  if (allowPrivateNetwork) return value;
  const host = hostOf(url).toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) !== 0 && isRefusedAddress(host))) {
    throw ValidationError.field(
      field,
      `must not point to a loopback, private, link-local or otherwise non-public address ('${host}'); the vault allows it only with reactors.egress.allowPrivateNetwork (tokenvault serve --allow-private-network)`,
    );
  }
  return value;
}
