/*
 * The frame's side of tokenvault Elements (docs/elements.md): runs in `/elements/v1/frame` (and, the
 * same frame, in `/web-elements/<version>/hosted-elements/frame` for Basis Theory's page API), on the
 * vault's origin, inside the merchant's page. It holds the field's value in its own input and lets
 * it out only in a request to the vault (its own origin) or, over a MessageChannel, to a sibling
 * frame of this origin, page, instance and key that assembles such a request.
 */
import { type CollectMessage, type ElementRef, type ElementsErrorShape, type FieldReport, type FrameMessage, type PageMessage, type SubmitPath } from '../protocol.js';
import { assemble, fillAnywhere } from './assemble.js';
import { applyStyle } from './frame-style.js';
import { type Field, buildFields, wholeValue } from './frame-fields.js';
import { RetrievedValues, isDataRef } from './frame-retrieved.js';
import { type FrameConfig, readConfig } from './frame-config.js';
import { apiKeyOf, asError, combinedState, problemToError, scrub, scrubError, collectSecrets } from './frame-answers.js';

const COLLECT_TIMEOUT_MS = 5000;

function start(config: FrameConfig): void {
  const { element, pageOrigin, instance, id, key, prefix } = config;
  let revealed = false;
  const retrieved = new RetrievedValues();
  const fields: Field[] = buildFields(element, config.options, document.body, () => onChange());
  applyStyle(fields, config.options.style);

  const toPage = (message: Omit<FrameMessage, 'tv' | 'instance' | 'element'> & Record<string, unknown>) =>
    window.parent.postMessage({ ...message, tv: 1, instance, element: id }, pageOrigin);

  function onChange(): void {
    const reports: FieldReport[] = fields.map((f) => {
      const state = f.state();
      return { field: f.name, errors: state.errors, maskSatisfied: !state.empty && !state.errors.includes('incomplete') };
    });
    toPage({ type: 'change', state: combinedState(fields), fields: reports });
  }
  for (const field of fields) {
    field.input.addEventListener('focus', () => toPage({ type: 'focus', field: field.name }));
    field.input.addEventListener('blur', () => toPage({ type: 'blur', field: field.name }));
    field.input.addEventListener('keydown', (event) => {
      // Only the keys a form acts on, and never which character was typed.
      if (event.key !== 'Enter' && event.key !== 'Escape') return;
      const { altKey, ctrlKey, shiftKey, metaKey } = event;
      toPage({ type: 'keydown', field: field.name, key: event.key, altKey, ctrlKey, shiftKey, metaKey });
    });
  }
  if (config.options.enableCopy === true) addCopyButton();

  /** A button beside the input(s) that copies the element's value to the clipboard, from inside the frame. */
  function addCopyButton(): void {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy';
    button.textContent = 'Copy';
    button.setAttribute('aria-label', 'Copy');
    button.addEventListener('click', () => {
      const parts: Record<string, string | number> = Object.assign({}, ...fields.map((f) => f.parts()));
      const whole = wholeValue(element, parts);
      const text = typeof whole === 'object' && whole !== null ? Object.values(whole).join(' ') : String(whole ?? '');
      navigator.clipboard.writeText(text).then(
        () => toPage({ type: 'copy', field: fields[0]!.name }),
        () => undefined,
      );
    });
    document.body.appendChild(button);
  }

  /**
   * A request to the vault, on this frame's own origin; the page's origin goes along for the
   * application's check. `apiKey`: the page's key for this one request (a session's), else the
   * frame's; null: none (an inbound proxy's key is the whole authorization).
   */
  async function vault(method: string, path: string, body?: unknown, apiKey?: string | null, extra: Record<string, string> = {}): Promise<unknown> {
    const headers: Record<string, string> = { ...extra, [`${prefix}-PAGE-ORIGIN`]: pageOrigin };
    if (apiKey !== null) headers[`${prefix}-API-KEY`] = apiKey ?? key;
    if (body !== undefined && !Object.keys(extra).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      const sent = body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body);
      response = await fetch(path, { method, headers, body: sent, credentials: 'omit', cache: 'no-store' });
    } catch {
      throw { code: 'network_error', message: 'The vault could not be reached' } satisfies ElementsErrorShape;
    }
    const text = await response.text();
    if (!response.ok) throw problemToError(response.status, text);
    if (text.length === 0) return null;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }

  /** This frame's value for a reference: the whole value or one part of it; `show`: for another frame to show (setValueRef). */
  function valueFor(ref: Pick<ElementRef, 'part'>, show = false): { value: unknown; error?: ElementsErrorShape } {
    if (show) return { value: wholeValue(element, Object.assign({}, ...fields.map((f) => f.parts()))) };
    if (revealed) return { value: null, error: { code: 'revealed_element', message: 'An element showing a token cannot be submitted' } };
    const state = combinedState(fields);
    if (!state.valid) return { value: null, error: { code: 'invalid_element', message: `The ${element} element is not valid: ${state.errors.join(', ')}` } };
    const parts: Record<string, string | number> = Object.assign({}, ...fields.map((f) => f.parts()));
    if (ref.part !== undefined) {
      if (!(ref.part in parts)) return { value: null, error: { code: 'invalid_part', message: `A ${element} element has no ${ref.part}` } };
      return { value: parts[ref.part] };
    }
    return { value: wholeValue(element, parts) };
  }

  /** Asks the sibling frame holding `elementId` for its value, over a port only that frame receives. */
  function collectFrom(elementId: string, ref: Pick<CollectMessage, 'part' | 'correlation' | 'path' | 'show'>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject({ code: 'element_unavailable', message: 'An element named in the request did not answer; is it mounted?' }), COLLECT_TIMEOUT_MS);
      const siblings = window.parent.frames;
      for (let i = 0; i < siblings.length; i++) {
        const sibling = siblings[i]!;
        if (sibling === window) continue;
        const channel = new MessageChannel();
        channel.port1.onmessage = (event: MessageEvent) => {
          const data = event.data as { ok: boolean; value?: unknown; error?: ElementsErrorShape };
          clearTimeout(timer);
          channel.port1.close();
          if (data.ok) resolve(data.value);
          else reject(data.error);
        };
        const message: CollectMessage = { tv: 1, type: 'collect', instance, element: elementId, key, ...ref };
        // targetOrigin: a frame of any other origin (the page's own frames) never receives it.
        try {
          sibling.postMessage(message, window.location.origin, [channel.port2]);
        } catch {
          // A frame that went away meanwhile.
        }
      }
    });
  }

  /** A reference's value (this frame's or a sibling's); a value's strings are kept to scrub the answer. */
  async function resolveRef(ref: ElementRef, secrets: string[]): Promise<unknown> {
    let resolved: unknown;
    if (ref.$tvElement === id) {
      const own = valueFor(ref);
      if (own.error) throw own.error;
      resolved = own.value;
    } else resolved = await collectFrom(String(ref.$tvElement), ref.part ? { part: ref.part } : {});
    if (ref.part !== 'month' && ref.part !== 'year') collectSecrets(resolved, secrets);
    return resolved;
  }

  async function submit(path: SubmitPath, body: unknown, apiKey?: string): Promise<unknown> {
    const secrets: string[] = [];
    // References are filled only in a token's data, at exact paths (assemble.ts).
    const assembled = await assemble(path, body, (ref) => resolveRef(ref, secrets));
    try {
      return scrub(await vault('POST', path, assembled, apiKey), secrets);
    } catch (error) {
      throw scrubError(error, secrets);
    }
  }

  /**
   * A proxied request (docs/proxies.md) whose body may hold elements anywhere: the destination is
   * what they are for. The answer comes back without the values sent.
   */
  async function proxy(message: Extract<PageMessage, { type: 'proxy' }>): Promise<unknown> {
    const { method, path, query, headers, body } = message;
    if (!/^(GET|POST|PUT|PATCH|DELETE)$/.test(method) || typeof path !== 'string' || (path !== '' && !/^\/[^?#]*$/.test(path)) || path.includes('..')) {
      throw { code: 'invalid_proxy_request', message: 'A proxy request needs a method (GET, POST, PUT, PATCH, DELETE) and a path starting with /' } satisfies ElementsErrorShape;
    }
    const sentHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers ?? {})) if (typeof value === 'string' && /^[A-Za-z0-9-]{1,100}$/.test(name)) sentHeaders[name] = value;
    const search = new URLSearchParams(Object.entries(query ?? {}).filter(([, v]) => typeof v === 'string')).toString();
    // A pre-configured proxy named by its key alone is called as its third parties call it, without
    // an API key: one would need proxy:invoke, which a public application cannot hold (docs/elements.md).
    const byProxyKey = Object.keys(sentHeaders).some((h) => h.toLowerCase() === `${prefix}-proxy-key`.toLowerCase());
    const secrets: string[] = [];
    const filled = body === undefined ? undefined : await fillAnywhere(body, (ref) => resolveRef(ref, secrets));
    try {
      return scrub(await vault(method, `/proxy${path}${search === '' ? '' : `?${search}`}`, filled, apiKeyOf(message) ?? (byProxyKey ? null : undefined), sentHeaders), secrets);
    } catch (error) {
      throw scrubError(error, secrets);
    }
  }

  /** Reads a token (with a session's key, usually) and keeps its data here; the page gets references to it. */
  async function retrieve(tokenId: string, apiKey?: string): Promise<unknown> {
    const token = (await vault('GET', `/tokens/${encodeURIComponent(tokenId)}`, undefined, apiKey)) as Record<string, unknown>;
    return 'data' in token ? { ...token, data: retrieved.keep(token.data, id) } : token;
  }

  /** Shows the values references name (a retrieved token's, or another element's) in this frame's input(s). */
  async function setValue(value: unknown): Promise<void> {
    const resolve = async (v: unknown): Promise<unknown> => {
      if (isDataRef(v)) return v.elementId === id ? retrieved.value(v.correlationId, v.path) : collectFrom(v.elementId, { correlation: v.correlationId, path: v.path });
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) return Object.fromEntries(await Promise.all(Object.entries(v).map(async ([k, x]) => [k, await resolve(x)])));
      throw { code: 'invalid_value', message: 'setValue takes the references a retrieved token holds' } satisfies ElementsErrorShape;
    };
    let data = await resolve(value);
    // An expiration date's references come as { month, year }.
    if (element === 'cardExpirationDate' && typeof data === 'object' && data !== null && 'month' in data) {
      const { month, year } = data as { month?: unknown; year?: unknown };
      data = { expiration_month: month, expiration_year: year };
    }
    show(data);
  }

  function show(data: unknown): void {
    revealed = true;
    for (const field of fields) field.show(data);
    onChange();
  }

  async function reveal(tokenId: string): Promise<void> {
    let token: { data?: unknown };
    try {
      token = (await vault('GET', `/tokens/${encodeURIComponent(tokenId)}`)) as { data?: unknown };
    } catch (error) {
      // A failed reveal (an expired session, a token gone) shows nothing: what an earlier reveal
      // showed would pass for the token asked for now (docs/elements.md, "Revealing with a session").
      if (revealed) {
        revealed = false;
        for (const field of fields) field.clear();
        onChange();
      }
      throw error;
    }
    revealed = true;
    for (const field of fields) {
      field.show(token.data);
      field.input.readOnly = true;
    }
    onChange();
  }

  window.addEventListener('message', (event: MessageEvent) => {
    const data = event.data as (PageMessage | CollectMessage) & { part?: ElementRef['part'] };
    if (typeof data !== 'object' || data === null || data.tv !== 1 || data.instance !== instance) return;
    // A sibling frame of this origin, in the same page, of the same instance and key.
    if (data.type === 'collect') {
      const port = event.ports[0];
      if (event.origin !== window.location.origin || port === undefined || data.element !== id || data.key !== key) return;
      const source = event.source as Window | null;
      if (source === null || source.parent !== window.parent || source === window) return;
      if (typeof data.correlation === 'string') {
        const value = retrieved.value(data.correlation, String(data.path ?? ''));
        port.postMessage(value === undefined ? { ok: false, error: { code: 'unknown_reference', message: 'The element holds no such retrieved value' } } : { ok: true, value });
        port.close();
        return;
      }
      const own = valueFor(data.part ? { part: data.part } : {}, data.show === true);
      port.postMessage(own.error ? { ok: false, error: own.error } : { ok: true, value: own.value });
      port.close();
      return;
    }
    // The page: only the parent that created this frame, on the origin it was created for.
    if (event.origin !== pageOrigin || event.source !== window.parent) return;
    const rid = typeof data.rid === 'number' ? data.rid : null;
    const answer = (work: Promise<unknown>) =>
      work.then(
        (result) => rid !== null && toPage({ type: 'result', rid, ok: true, result }),
        (error: unknown) => rid !== null && toPage({ type: 'result', rid, ok: false, error: asError(error) }),
      );
    switch (data.type) {
      case 'focus':
        fields[0]?.input.focus();
        return;
      case 'blur':
        for (const f of fields) f.input.blur();
        return;
      case 'clear':
        revealed = false;
        for (const f of fields) f.clear();
        onChange();
        return;
      case 'reveal':
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- answer() handles both outcomes of the work; its handlers only post a message to the page
        void answer(reveal(String(data.token)).then(() => null));
        return;
      case 'submit':
        if (data.path !== '/tokens' && data.path !== '/tokenize' && data.path !== '/token-intents') return;
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- answer() handles both outcomes of the work; its handlers only post a message to the page
        void answer(submit(data.path, data.body, apiKeyOf(data)));
        return;
      case 'update':
        update(data.options);
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- as above
        void answer(Promise.resolve(null));
        return;
      case 'retrieve':
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- as above
        void answer(retrieve(String(data.token), apiKeyOf(data)));
        return;
      case 'setValue':
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- as above
        void answer(setValue(data.value).then(() => null));
        return;
      case 'setValueRef':
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- as above
        void answer(collectFrom(String(data.source), { show: true }).then((value) => (show(value), null)));
        return;
      case 'session':
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- as above
        void answer(vault('POST', '/sessions', undefined, apiKeyOf(data)));
        return;
      case 'proxy':
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- as above
        void answer(proxy(data));
        return;
    }
  });

  /** The options `update` may change: placeholder, disabled and read-only state, style. */
  function update(options: Record<string, unknown>): void {
    for (const field of fields) {
      const placeholder = field.placeholderOf(options);
      if (placeholder !== undefined) field.input.placeholder = placeholder;
      if (typeof options['disabled'] === 'boolean') field.input.disabled = options['disabled'];
      if (typeof options['readOnly'] === 'boolean') field.input.readOnly = options['readOnly'] || revealed;
    }
    if (options['style'] !== undefined) applyStyle(fields, options['style']);
  }

  // Ready once the vault accepts the key from this page's origin (a refused origin is an error).
  vault('GET', '/tenants/self')
    .then(async () => {
      if (config.options.targetId !== undefined) await reveal(String(config.options.targetId));
      toPage({ type: 'ready' });
    })
    .catch((error: unknown) => toPage({ type: 'error', error: asError(error) }));
}

const config = readConfig();
if (config === null) document.body.textContent = 'This frame must be created by tokenvault Elements.';
else start(config);
