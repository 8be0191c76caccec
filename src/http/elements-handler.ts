import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ELEMENTS_PATH, ELEMENT_TYPES } from '../elements/protocol.js';
import { ORIGIN_GRAMMAR, parseOrigin } from '../elements/origin.js';
import { BT_ELEMENTS_PATH, isServedVersion, isVersion, unservedVersionMessage } from '../elements/bt-versions.js';

/*
 * Serves Elements (docs/elements.md) as a pure (Request) => Promise<Response> function: the page
 * bundle (`elements.js` global, `elements.mjs` module), the frame's script and stylesheet, all
 * long-cached and immutable, and the frame page, whose Content-Security-Policy lets only the page
 * origin named in its address embed it (frame-ancestors) and lets it load and call nothing but its
 * own origin. The vault checks that origin against the application's allowed_origins on every
 * request the frame makes (the `<prefix>-PAGE-ORIGIN` header).
 */

/** A year: the files at a versioned path change only with a new integrity hash (docs/elements.md). */
const IMMUTABLE = 'public, max-age=31536000, immutable';

interface Asset {
  body: string;
  contentType: string;
  /** Loaded by the merchant's page (cross-origin, with an integrity attribute: needs CORS to be checked). */
  crossOrigin: boolean;
}

const ASSETS: Readonly<Record<string, Omit<Asset, 'body'>>> = {
  'elements.js': { contentType: 'text/javascript; charset=utf-8', crossOrigin: true },
  'elements.mjs': { contentType: 'text/javascript; charset=utf-8', crossOrigin: true },
  'frame.js': { contentType: 'text/javascript; charset=utf-8', crossOrigin: false },
  'frame.css': { contentType: 'text/css; charset=utf-8', crossOrigin: false },
  // Basis Theory's page API (`/web-elements/<version>/client/index.js`), which their loader adds to the page.
  'bt-client.js': { contentType: 'text/javascript; charset=utf-8', crossOrigin: true },
};

/**
 * Where the build put the browser files: beside the built chunk (`dist/elements/`); run from
 * TypeScript sources (vitest), the built ones (the test setup builds dist/ first).
 */
function assetUrl(name: string): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL(`../../dist/elements/${name}`, here) : new URL(`./elements/${name}`, here);
}

const loaded = new Map<string, Asset>();

/** A browser file's text, read once per process (null when the build did not make it). */
function asset(name: string): Asset | null {
  const found = loaded.get(name);
  if (found !== undefined) return found;
  const kind = ASSETS[name];
  if (kind === undefined) return null;
  let body: string;
  try {
    body = readFileSync(assetUrl(name), 'utf8');
  } catch {
    return null;
  }
  const made = { ...kind, body };
  loaded.set(name, made);
  return made;
}

/** The `integrity` attribute value (SHA-384, base64) of a browser file, as docs/elements.md publishes it. */
export function elementsIntegrity(name: 'elements.js' | 'elements.mjs'): string | null {
  const found = asset(name);
  return found === null ? null : `sha384-${createHash('sha384').update(found.body).digest('base64')}`;
}

/**
 * The frame page. `prefix`: the vault's header prefix, given to frames of Basis Theory's page API
 * (their pages do not know it); frames of tokenvault's own page API take it from the page.
 */
const frameHtml = (prefix: string | null) =>
  '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">' +
  (prefix === null ? '' : `<meta name="tokenvault-header-prefix" content="${prefix}">`) +
  '<link rel="stylesheet" href="frame.css"><script src="frame.js" defer></script></head><body></body></html>';

const ID = /^[0-9a-f]{24}$/;

function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...headers } });
}

/** The frame page for one element, or a 400 saying which parameter is wrong. */
function framePage(query: URLSearchParams, prefix: string | null): Response {
  const element = query.get('element');
  const given = query.get('origin') ?? '';
  const origin = parseOrigin(given);
  if (element === null || !(ELEMENT_TYPES as readonly string[]).includes(element)) return text(400, `element must be one of ${ELEMENT_TYPES.join(', ')}`);
  if (origin === null) return text(400, `origin must be the embedding page's origin, such as https://shop.example: ${ORIGIN_GRAMMAR}`);
  // The frame uses the parameter as given (postMessage's target, its page-origin header): it must be the form browsers write.
  if (origin !== given) return text(400, `origin must be written as browsers write it (lower case, no default port): ${origin}`);
  if (!ID.test(query.get('instance') ?? '') || !ID.test(query.get('id') ?? '')) return text(400, 'instance and id must be the identifiers tokenvault Elements generates');
  for (const name of query.keys()) if (!['element', 'origin', 'instance', 'id'].includes(name)) return text(400, `Unknown query parameter: ${name}`);
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "img-src 'none'",
    "font-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
    "object-src 'none'",
    // Only the page origin this frame was made for may embed it; the frame posts to that origin only.
    `frame-ancestors ${origin}`,
  ].join('; ');
  return new Response(frameHtml(prefix), {
    status: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': csp,
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
    },
  });
}

/** Whether a request path is one this handler answers. */
export function isElementsPath(pathname: string): boolean {
  return pathname.startsWith(`${ELEMENTS_PATH}/`) || pathname === ELEMENTS_PATH || pathname.startsWith(`${BT_ELEMENTS_PATH}/`);
}

/** A short-lived cache for Basis Theory's paths: the loader names no integrity hash, so a new build must reach pages soon. */
const BT_CACHE = 'public, max-age=300';

/**
 * A loader of a version not served still gets a script: one whose `init` fails naming the served
 * versions, so the page's `basistheory()` rejects with that message rather than a network error.
 */
function unservedClient(version: string): string {
  const message = JSON.stringify(unservedVersionMessage(version));
  return `window.BasisTheoryElements={init:function(){return Promise.reject(new Error(${message}))},hasElement:function(){return false}};console.error(${message});`;
}

/**
 * Basis Theory's page API under `/web-elements/<version>/`: `client/index.js` (what their loader
 * adds to the page) and the frames under `hosted-elements/`, the same frame as tokenvault's own.
 */
function handleBtRequest(method: string, pathname: string, search: string, prefix: string): Response {
  const [version = '', ...rest] = pathname.slice(BT_ELEMENTS_PATH.length + 1).split('/');
  const name = rest.join('/');
  const files: Record<string, string> = { 'client/index.js': 'bt-client.js', 'hosted-elements/frame.js': 'frame.js', 'hosted-elements/frame.css': 'frame.css' };
  if (!isVersion(version) || !(name in files || name === 'hosted-elements/frame')) return text(404, 'No such Web Elements file');
  if (method !== 'GET' && method !== 'HEAD') return text(405, 'Web Elements files are read with GET', { allow: 'GET, HEAD' });
  const js = {
    'content-type': 'text/javascript; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'access-control-allow-origin': '*',
    'cross-origin-resource-policy': 'cross-origin',
  };
  if (!isServedVersion(version))
    return name === 'client/index.js' ? new Response(method === 'HEAD' ? null : unservedClient(version), { status: 200, headers: js }) : text(404, unservedVersionMessage(version));
  if (name === 'hosted-elements/frame') return framePage(new URLSearchParams(search), prefix);
  const found = asset(files[name]!);
  if (found === null) return text(503, 'The Elements bundle was not built (npm run build)');
  const headers: Record<string, string> = { 'content-type': found.contentType, 'cache-control': BT_CACHE, 'x-content-type-options': 'nosniff' };
  if (found.crossOrigin) Object.assign(headers, { 'access-control-allow-origin': '*', 'cross-origin-resource-policy': 'cross-origin' });
  return new Response(method === 'HEAD' ? null : found.body, { status: 200, headers });
}

/**
 * Answers `GET /elements/v1/...`: the browser files and the frame page. `pathname` and `search` are
 * the request's, already split (fetch-handler.ts).
 */
export async function handleElementsRequest(method: string, pathname: string, search: string, prefix = 'SVC'): Promise<Response> {
  if (pathname.startsWith(`${BT_ELEMENTS_PATH}/`)) return handleBtRequest(method, pathname, search, prefix);
  const name = pathname.slice(ELEMENTS_PATH.length + 1);
  const known = name === 'frame' || (name in ASSETS && name !== 'bt-client.js');
  if (!known) return text(404, 'No such Elements file');
  if (method !== 'GET' && method !== 'HEAD') return text(405, 'Elements files are read with GET', { allow: 'GET, HEAD' });
  if (name === 'frame') return framePage(new URLSearchParams(search), null);
  const found = asset(name);
  if (found === null) return text(503, 'The Elements bundle was not built (npm run build)');
  const headers: Record<string, string> = { 'content-type': found.contentType, 'cache-control': IMMUTABLE, 'x-content-type-options': 'nosniff' };
  if (found.crossOrigin) {
    // A public, credential-less file: any page may load it, and check it against its integrity hash.
    headers['access-control-allow-origin'] = '*';
    headers['cross-origin-resource-policy'] = 'cross-origin';
  }
  return new Response(method === 'HEAD' ? null : found.body, { status: 200, headers });
}
