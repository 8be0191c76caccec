/*
 * The page's side of tokenvault Elements (docs/elements.md): what a merchant's page loads from
 * `/elements/v1/elements.js` (a global `TokenVaultElements`) or `/elements/v1/elements.mjs` (an ES
 * module). It creates iframes served by the vault and talks to them with postMessage; it never holds
 * a value: events carry states, and tokenize answers what the vault's answer shows.
 */
import { ELEMENTS_PATH, ELEMENT_TYPES, type ElementRef, type ElementType, type ElementsErrorShape, type FrameMessage, type PageMessage } from '../protocol.js';

/** An error from Elements: a code and a message, never a value. */
export class ElementsError extends Error {
  readonly code: string;
  readonly status: number | undefined;
  constructor(shape: ElementsErrorShape) {
    super(shape.message);
    this.name = 'ElementsError';
    this.code = shape.code;
    this.status = shape.status;
  }
}

export interface InitOptions {
  /** The vault's origin (`https://vault.example`); the frames and their requests use it. */
  baseUrl: string;
  /** A public application's key or an (authorized) session key. */
  apiKey: string;
  /** The vault's header prefix (`SVC` unless it was served with another). */
  headerPrefix?: string;
  /** @internal The frame page's address on the vault's origin (Basis Theory's page API serves its own). */
  framesUrl?: string;
}

export interface ElementOptions {
  placeholder?: string;
  /** Style applied inside the frame: `{ base, focus, invalid, complete }`, each a map of allowed CSS properties. */
  style?: Record<string, Record<string, string>>;
  /** Shows this token's data inside the frame once mounted (a session allowed to read it). */
  targetId?: string;
  /** Accessible label of the input(s). */
  ariaLabel?: string;
  /** Turns the input read-only. */
  disabled?: boolean;
}

type Listener = (event: unknown) => void;
type EventName = 'change' | 'focus' | 'blur' | 'ready' | 'error';

const KEY_LIMIT = 512;

function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** An element: an iframe of the vault's origin holding one field (or the card's three). */
export class Element {
  readonly id = randomId();
  readonly type: ElementType;
  #elements: Elements;
  #options: ElementOptions;
  #frame: HTMLIFrameElement | null = null;
  #listeners = new Map<EventName, Set<Listener>>();
  #ready: Promise<void> | null = null;
  /** @internal Every message of this element's frame, before the events (Basis Theory's page API reads them whole). */
  _onMessage: ((data: FrameMessage) => void) | null = null;

  constructor(elements: Elements, type: ElementType, options: ElementOptions) {
    this.#elements = elements;
    this.type = type;
    this.#options = options;
  }

  /** Adds the element's iframe inside `target` (a selector or a DOM element); resolves once it is ready. */
  mount(target: string | HTMLElement): Promise<void> {
    if (this.#frame !== null) return Promise.reject(new ElementsError({ code: 'already_mounted', message: 'This element is already mounted; unmount it first' }));
    const host = typeof target === 'string' ? document.querySelector<HTMLElement>(target) : target;
    if (host === null) return Promise.reject(new ElementsError({ code: 'mount_target_not_found', message: `No element matches ${JSON.stringify(String(target))}` }));
    const frame = document.createElement('iframe');
    frame.src = this.#elements._frameUrl(this, this.#options);
    frame.title = this.#options.ariaLabel ?? `Secure ${this.type} field`;
    frame.setAttribute('frameborder', '0');
    frame.setAttribute('scrolling', 'no');
    frame.setAttribute('allowtransparency', 'true');
    // The frame does not need to navigate the page, open windows or run plugins.
    frame.setAttribute('sandbox', 'allow-scripts allow-same-origin');
    if ((this.#options as { enableCopy?: unknown }).enableCopy === true) frame.setAttribute('allow', 'clipboard-write');
    frame.style.cssText = `border:0;width:100%;height:${this.type === 'card' ? '44px' : '40px'};display:block;overflow:hidden;`;
    this.#frame = frame;
    this.#ready = new Promise<void>((resolve, reject) => {
      const onReady = () => {
        this.off('ready', onReady);
        this.off('error', onError);
        resolve();
      };
      const onError = (error: unknown) => {
        this.off('ready', onReady);
        this.off('error', onError);
        reject(error);
      };
      this.on('ready', onReady);
      this.on('error', onError);
    });
    this.#elements._register(this);
    host.appendChild(frame);
    return this.#ready;
  }

  on(event: EventName, listener: Listener): this {
    let set = this.#listeners.get(event);
    if (set === undefined) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    return this;
  }

  off(event: EventName, listener: Listener): this {
    this.#listeners.get(event)?.delete(listener);
    return this;
  }

  focus(): void {
    this._post({ type: 'focus' });
  }

  blur(): void {
    this._post({ type: 'blur' });
  }

  clear(): void {
    this._post({ type: 'clear' });
  }

  /** Removes the iframe; its value goes with it. */
  unmount(): void {
    this.#frame?.remove();
    this.#frame = null;
    this.#ready = null;
    this.#elements._unregister(this);
  }

  /** Shows a token's data inside this element's frame (the session must be allowed to read it); the page never receives it. */
  async setValueRef(tokenId: string): Promise<void> {
    if (typeof tokenId !== 'string' || tokenId.length === 0 || tokenId.length > 200) throw new ElementsError({ code: 'invalid_token_id', message: 'setValueRef needs a token id' });
    await this.#ready;
    await this.#elements._request(this, { type: 'reveal', token: tokenId });
  }

  /** The expiration date's month, as a reference a request body may hold. */
  month(): ElementRef {
    return this.#part('month');
  }

  /** The expiration date's four-digit year, as a reference a request body may hold. */
  year(): ElementRef {
    return this.#part('year');
  }

  #part(part: 'month' | 'year'): ElementRef {
    if (this.type !== 'cardExpirationDate' && this.type !== 'card') {
      throw new ElementsError({ code: 'invalid_part', message: `A ${this.type} element has no ${part}` });
    }
    return { $tvElement: this.id, part };
  }

  /** @internal */
  get _window(): Window | null {
    return this.#frame?.contentWindow ?? null;
  }

  /** @internal */
  get _mounted(): Promise<void> | null {
    return this.#ready;
  }

  /** @internal */
  _post(message: Omit<PageMessage, 'tv' | 'instance'> & { rid?: number }): void {
    this.#elements._post(this, message);
  }

  /** @internal */
  _emit(event: EventName, payload: unknown): void {
    for (const listener of [...(this.#listeners.get(event) ?? [])]) listener(payload);
  }
}

/** What `init` returns: creates elements and submits requests assembled by their frames. */
export class Elements {
  readonly #origin: string;
  readonly #key: string;
  readonly #prefix: string;
  readonly #framesUrl: string;
  readonly #instance = randomId();
  readonly #elements = new Map<string, Element>();
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  #nextRid = 1;

  /** `elements.tokens.create(body)`: POST /tokens, the elements' values assembled by the frames. */
  readonly tokens = { create: (body: Record<string, unknown>) => this.#submit('/tokens', body) };

  constructor(options: InitOptions) {
    this.#origin = new URL(options.baseUrl).origin;
    this.#key = options.apiKey;
    this.#prefix = options.headerPrefix ?? 'SVC';
    this.#framesUrl = options.framesUrl ?? `${this.#origin}${ELEMENTS_PATH}/frame`;
    window.addEventListener('message', (event) => this.#receive(event));
  }

  create(type: ElementType, options: ElementOptions = {}): Element {
    if (!(ELEMENT_TYPES as readonly string[]).includes(type)) {
      throw new ElementsError({ code: 'invalid_element_type', message: `Element type must be one of ${ELEMENT_TYPES.join(', ')}` });
    }
    return new Element(this, type, options);
  }

  /** POST /tokenize with a body of any shape whose leaves may be elements. */
  tokenize(body: unknown): Promise<unknown> {
    return this.#submit('/tokenize', body);
  }

  async #submit(path: '/tokens' | '/tokenize', body: unknown): Promise<unknown> {
    const used: Element[] = [];
    const refs = this.#refs(body, used, 0);
    const leader = used[0];
    if (leader === undefined)
      throw new ElementsError({ code: 'no_elements', message: 'The request names no element: pass elements (or their month()/year()) where the data goes' });
    await Promise.all(used.map((el) => el._mounted ?? Promise.reject(new ElementsError({ code: 'not_mounted', message: `A ${el.type} element in the request is not mounted` }))));
    return this._request(leader, { type: 'submit', path, body: refs });
  }

  /** @internal The body with each element replaced by a reference, and the elements it names. */
  _prepare(body: unknown): { refs: unknown; used: Element[] } {
    const used: Element[] = [];
    return { refs: this.#refs(body, used, 0), used };
  }

  /** The body with each element replaced by a reference (the frames put the values in). */
  #refs(value: unknown, used: Element[], depth: number): unknown {
    if (depth > 32) throw new ElementsError({ code: 'body_too_deep', message: 'The request body nests too deep' });
    if (value instanceof Element) {
      if (!this.#elements.has(value.id)) throw new ElementsError({ code: 'not_mounted', message: `A ${value.type} element in the request is not mounted` });
      if (!used.includes(value)) used.push(value);
      return { $tvElement: value.id } satisfies ElementRef;
    }
    if (Array.isArray(value)) return value.map((v) => this.#refs(v, used, depth + 1));
    if (typeof value === 'object' && value !== null) {
      if ('$tvElement' in value) {
        const el = this.#elements.get(String((value as ElementRef).$tvElement));
        if (el === undefined) throw new ElementsError({ code: 'not_mounted', message: 'An element part in the request is not mounted' });
        if (!used.includes(el)) used.push(el);
        return { $tvElement: el.id, part: (value as ElementRef).part };
      }
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.#refs(v, used, depth + 1)]));
    }
    return value;
  }

  /** @internal The frame's URL: element, page origin and instance in the query (the vault reads them); key and options in the fragment (never sent). */
  _frameUrl(element: Element, options: ElementOptions): string {
    const query = new URLSearchParams({ element: element.type, origin: window.location.origin, instance: this.#instance, id: element.id });
    const fragment = encodeURIComponent(JSON.stringify({ key: this.#key, prefix: this.#prefix, options }));
    return `${this.#framesUrl}?${query.toString()}#${fragment}`;
  }

  /** @internal */
  _register(element: Element): void {
    this.#elements.set(element.id, element);
  }

  /** @internal */
  _unregister(element: Element): void {
    this.#elements.delete(element.id);
  }

  /** @internal Posts to the element's frame, only to the vault's origin. */
  _post(element: Element, message: Record<string, unknown>): void {
    element._window?.postMessage({ ...message, tv: 1, instance: this.#instance }, this.#origin);
  }

  /** @internal A request the frame answers with a `result`. */
  _request(element: Element, message: Record<string, unknown>): Promise<unknown> {
    const rid = this.#nextRid++;
    return new Promise((resolve, reject) => {
      this.#pending.set(rid, { resolve, reject });
      this._post(element, { ...message, rid });
    });
  }

  #receive(event: MessageEvent): void {
    // Only the vault's frames, only ours, only this instance.
    if (event.origin !== this.#origin) return;
    const data = event.data as FrameMessage;
    if (typeof data !== 'object' || data === null || data.tv !== 1 || data.instance !== this.#instance) return;
    const element = this.#elements.get(data.element);
    if (element === undefined || event.source !== element._window) return;
    element._onMessage?.(data);
    switch (data.type) {
      case 'result': {
        const pending = this.#pending.get(data.rid);
        if (pending === undefined) return;
        this.#pending.delete(data.rid);
        if (data.ok) pending.resolve(data.result);
        else pending.reject(new ElementsError(data.error));
        return;
      }
      case 'change':
        element._emit('change', { ...data.state, elementType: element.type });
        return;
      case 'error':
        element._emit('error', new ElementsError(data.error));
        return;
      case 'ready':
      case 'focus':
      case 'blur':
        element._emit(data.type, { elementType: element.type });
        return;
    }
  }
}

/**
 * Starts Elements on this page.
 * @example
 * const elements = await TokenVaultElements.init({ baseUrl: 'https://vault.example', apiKey: publicKey });
 * const number = elements.create('cardNumber', { placeholder: 'Card number' });
 * await number.mount('#card-number');
 */
export async function init(options: InitOptions): Promise<Elements> {
  if (typeof options !== 'object' || options === null) throw new ElementsError({ code: 'invalid_options', message: 'init needs { baseUrl, apiKey }' });
  let base: URL;
  try {
    base = new URL(options.baseUrl);
  } catch {
    throw new ElementsError({ code: 'invalid_base_url', message: "baseUrl must be the vault's absolute URL, such as https://vault.example" });
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new ElementsError({ code: 'invalid_base_url', message: 'baseUrl must be http(s)' });
  if (typeof options.apiKey !== 'string' || options.apiKey.length === 0 || options.apiKey.length > KEY_LIMIT) {
    throw new ElementsError({ code: 'invalid_api_key', message: 'apiKey must be a public application key or a session key' });
  }
  // The frames' messages are checked against the vault's origin: their page must be on it.
  if (options.framesUrl !== undefined && new URL(options.framesUrl).origin !== base.origin) {
    throw new ElementsError({ code: 'invalid_base_url', message: "The frames must be on the vault's origin" });
  }
  if (options.headerPrefix !== undefined && !/^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$/.test(options.headerPrefix)) {
    throw new ElementsError({ code: 'invalid_header_prefix', message: 'headerPrefix must be letters and digits, optionally joined by dashes' });
  }
  return new Elements(options);
}
