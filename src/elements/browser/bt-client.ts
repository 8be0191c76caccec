/*
 * Basis Theory's Web Elements page API (docs/elements.md, "Basis Theory Web Elements and React
 * Elements"), served as `/web-elements/<version>/client/index.js`: what their loader
 * (`@basis-theory/web-elements`, `basistheory(apiKey, { customDomain })`) adds to the page. It
 * defines `window.BasisTheoryElements`, whose `init` the loader calls with the key and the
 * `hosted-elements/` address; the elements are tokenvault's frames (frame.ts), driven through
 * tokenvault's page API (page.ts), so there is one implementation of the frames.
 */
import { ELEMENT_TYPES } from '../protocol.js';
import { BtElement, type BtElementType, type ElementWrapper } from './bt-element.js';
import { BasisTheoryValidationError, toBtError, toCamel, toSnake } from './bt-shape.js';
import { type Element, Elements, ElementsError, init as initElements } from './page.js';

interface RequestOptions {
  apiKey?: string;
  correlationId?: string;
  idempotencyKey?: string;
}

interface ProxyRequestOptions extends RequestOptions {
  path?: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: unknown;
  includeResponseHeaders?: boolean;
}

function isWrapper(value: unknown): value is ElementWrapper {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as ElementWrapper).element instanceof BtElement &&
    Object.keys(value).every((k) => ['element', 'method', 'formattingOptions'].includes(k))
  );
}

/** A body with Basis Theory's elements (and `month()` / `year()` wrappers) as tokenvault's, for page.ts to turn into references. */
function toTv(value: unknown, depth = 0): unknown {
  if (depth > 32) throw new BasisTheoryValidationError('The request body nests too deep');
  if (value instanceof BtElement) return value._tv;
  if (isWrapper(value)) {
    if (value.method === undefined) return value.element._tv;
    if ((value as { formattingOptions?: unknown }).formattingOptions !== undefined) throw new BasisTheoryValidationError('format() is not served: use month() and year()');
    return value.method === 'month' ? value.element._tv.month() : value.element._tv.year();
  }
  if (Array.isArray(value)) return value.map((v) => toTv(v, depth + 1));
  if (typeof value === 'object' && value !== null && value.constructor === Object) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toTv(v, depth + 1)]));
  return value;
}

function hasElement(value: unknown, depth = 0): boolean {
  if (value instanceof BtElement || isWrapper(value)) return true;
  if (depth > 32 || typeof value !== 'object' || value === null) return false;
  return Object.values(value).some((v) => hasElement(v, depth + 1));
}

/** What `init` answers: Basis Theory's `BasisTheoryElements`. */
class BasisTheoryElements {
  readonly #elements: Elements;
  #apiFrame: Promise<Element> | null = null;

  constructor(elements: Elements) {
    this.#elements = elements;
  }

  readonly tokens = {
    create: (model: Record<string, unknown>, options?: RequestOptions) => this.#submit('/tokens', toSnake(model), options).then(toCamel),
    retrieve: (id: string, options?: RequestOptions) => this.#viaApiFrame({ type: 'retrieve', token: String(id) }, options).then(toCamel),
    update: () => Promise.reject(new Error('tokenvault does not serve tokens.update from the page: update tokens from your backend (docs/elements.md)')),
    encrypt: () => Promise.reject(new Error('tokenvault does not serve tokens.encrypt (docs/elements.md)')),
  };

  readonly tokenIntents = {
    create: (model: Record<string, unknown>, options?: RequestOptions) => this.#submit('/token-intents', toSnake(model), options).then(toCamel),
  };

  readonly sessions = {
    create: (options?: RequestOptions) => this.#viaApiFrame({ type: 'session' }, options).then(toCamel),
  };

  readonly proxy = {
    get: (options?: ProxyRequestOptions) => this.#proxy('GET', options),
    post: (options?: ProxyRequestOptions) => this.#proxy('POST', options),
    put: (options?: ProxyRequestOptions) => this.#proxy('PUT', options),
    patch: (options?: ProxyRequestOptions) => this.#proxy('PATCH', options),
    delete: (options?: ProxyRequestOptions) => this.#proxy('DELETE', options),
  };

  /** Tokenize bodies are the page's own shapes: sent and answered as they are. */
  tokenize(body: unknown, options?: RequestOptions): Promise<unknown> {
    return this.#submit('/tokenize', body, options);
  }

  createElement(type: BtElementType, options: Record<string, unknown> = {}): BtElement {
    if (!(ELEMENT_TYPES as readonly string[]).includes(type)) {
      throw new BasisTheoryValidationError(`tokenvault serves the element types ${ELEMENT_TYPES.join(', ')}; not ${JSON.stringify(String(type))} (docs/elements.md)`);
    }
    return new BtElement(this.#elements, type, options ?? {});
  }

  async #submit(path: '/tokens' | '/tokenize' | '/token-intents', body: unknown, options?: RequestOptions): Promise<unknown> {
    try {
      const { refs, used } = this.#elements._prepare(toTv(body));
      const leader = used[0] ?? (await this.#api());
      await Promise.all(used.map((el) => el._mounted ?? Promise.reject(new ElementsError({ code: 'not_mounted', message: `A ${el.type} element in the request is not mounted` }))));
      return await this.#elements._request(leader, { type: 'submit', path, body: refs, ...key(options) });
    } catch (error) {
      throw toBtError(error);
    }
  }

  async #proxy(method: string, options: ProxyRequestOptions = {}): Promise<unknown> {
    try {
      const { refs, used } = this.#elements._prepare(toTv(options.body));
      const leader = used[0] ?? (await this.#api());
      const message = { type: 'proxy', method, path: options.path ?? '', query: options.query ?? {}, headers: options.headers ?? {}, body: refs, ...key(options) };
      return await this.#elements._request(leader, message);
    } catch (error) {
      throw toBtError(error);
    }
  }

  async #viaApiFrame(message: Record<string, unknown>, options?: RequestOptions): Promise<unknown> {
    try {
      return await this.#elements._request(await this.#api(), { ...message, ...key(options) });
    } catch (error) {
      throw toBtError(error);
    }
  }

  /**
   * A hidden frame for the calls that name no element (sessions, retrieve, a body without
   * elements): the page has no other way to the vault's API than a frame of its origin. A
   * retrieved token's data stays in it; `setValue` references point there.
   */
  #api(): Promise<Element> {
    this.#apiFrame ??= (async () => {
      const host = document.createElement('div');
      host.setAttribute('aria-hidden', 'true');
      host.style.cssText = 'position:absolute;width:0;height:0;overflow:hidden;border:0;';
      (document.body ?? document.documentElement).appendChild(host);
      const element = this.#elements.create('text', {});
      try {
        await element.mount(host);
      } catch (error) {
        host.remove();
        this.#apiFrame = null;
        throw error;
      }
      return element;
    })();
    return this.#apiFrame;
  }
}

function key(options?: RequestOptions): { apiKey?: string } {
  return typeof options?.apiKey === 'string' && options.apiKey.length > 0 ? { apiKey: options.apiKey } : {};
}

/**
 * What the loader calls: `init(apiKey, hostedElementsBaseUrl, useNgApi, useSameOriginApi,
 * disableTelemetry, debug, environment, useNetworkCheck, customDomain, region)`. Only the key and
 * the address are read: the vault is the frames' origin, whatever the rest says.
 */
async function init(apiKey: string | undefined, elementsBaseUrl: string): Promise<BasisTheoryElements> {
  if (typeof apiKey !== 'string' || apiKey.length === 0) throw new BasisTheoryValidationError('An API key is required');
  let base: URL;
  try {
    base = new URL(elementsBaseUrl);
  } catch {
    throw new BasisTheoryValidationError('The hosted elements address is not a URL');
  }
  const framesUrl = `${base.origin}${base.pathname.replace(/\/?$/, '/')}frame`;
  try {
    return new BasisTheoryElements(await initElements({ baseUrl: base.origin, apiKey, framesUrl }));
  } catch (error) {
    throw toBtError(error);
  }
}

window.BasisTheoryElements = { init, hasElement };

declare global {
  interface Window {
    BasisTheoryElements?: { init: typeof init; hasElement: typeof hasElement };
  }
}
