import { createFetchHandler, type FetchHandler, type FetchHandlerOptions } from '../../src/http/index.js';
import type { Logger } from '../../src/common/logger.js';
import type { Permission } from '../../src/permissions/permissions.js';
import { createTestVault, type TestVault } from '../../src/testing/index.js';
import type { TestStore } from '../support/stores.js';
import { SUITE_START } from '../support/suite-start.js';

export const VISA = { number: '4242424242424242', expiration_month: 12, expiration_year: 2031, cvc: '123' };
export const BASE = 'http://vault.test';

export interface Sent {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or null when there is none. */
  body: any;
  text: string;
}

export interface CallOptions {
  key?: string | null;
  /** A JSON value to send (serialized), or a string sent as is. */
  body?: unknown;
  /** Content-Type; default application/json (application/merge-patch+json for PATCH) when a body is given. */
  contentType?: string | null;
  headers?: Record<string, string>;
}

export interface Harness {
  vault: TestVault;
  handler: FetchHandler;
  /** The management application's key. */
  adminKey: string;
  /** A private application holding every private permission. */
  userKey: string;
  errors: { message: string; fields: Record<string, unknown> | undefined }[];
  call(method: string, path: string, options?: CallOptions): Promise<Sent>;
  /** Creates an application with these permissions and returns its key. */
  key(permissions: Permission[], type?: 'public' | 'private' | 'management'): Promise<string>;
}

export const PRIVATE_PERMISSIONS: Permission[] = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:search',
  'token:use',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
];

/** A vault behind a fetch handler; on `store` (closed after the test) when given, else SQLite. */
export async function harness(options: FetchHandlerOptions & { prefix?: string } = {}, store?: TestStore): Promise<Harness> {
  const errors: Harness['errors'] = [];
  const logger: Logger = { info() {}, warn() {}, error: (message, fields) => errors.push({ message, fields }) };
  const vault = store ? await store.vault() : await createTestVault({ start: SUITE_START });
  const handler = createFetchHandler(vault, { logger, ...options });
  const prefix = options.headerPrefix ?? 'SVC';
  const user = await vault.caller({ name: 'user', permissions: PRIVATE_PERMISSIONS });
  const call = async (method: string, path: string, { key, body, contentType, headers = {} }: CallOptions = {}) => {
    const h = new Headers(headers);
    if (key !== undefined && key !== null) h.set(`${prefix}-API-KEY`, key);
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      const type = contentType === undefined ? (method === 'PATCH' ? 'application/merge-patch+json' : 'application/json') : contentType;
      if (type !== null) h.set('content-type', type);
    } else if (contentType) h.set('content-type', contentType);
    const response = await handler(new Request(BASE + path, { method, headers: h, ...(payload === undefined ? {} : { body: payload }) }));
    return read(response);
  };
  return {
    vault,
    handler,
    adminKey: vault.adminKey,
    userKey: user.key,
    errors,
    call,
    async key(permissions, type) {
      const caller = await vault.caller({ permissions, ...(type ? { type } : {}) });
      return caller.key;
    },
  };
}

export async function read(response: Response): Promise<Sent> {
  const text = await response.text();
  let body: unknown = null;
  if (text !== '') body = JSON.parse(text);
  return { status: response.status, headers: response.headers, body, text };
}

/** Asserts a problem document of this status; returns it. */
export function expectProblem(sent: Sent, status: number): any {
  if (sent.status !== status) throw new Error(`expected ${status}, got ${sent.status}: ${sent.text}`);
  if (sent.headers.get('content-type') !== 'application/problem+json') throw new Error(`not a problem document: ${sent.headers.get('content-type')}`);
  const body = sent.body;
  if (typeof body.type !== 'string' || typeof body.title !== 'string' || body.status !== status || typeof body.detail !== 'string') {
    throw new Error(`malformed problem: ${sent.text}`);
  }
  if (sent.text.includes('    at ') || /stack/i.test(sent.text)) throw new Error('problem leaks a stack trace');
  return body;
}
