/*
 * The frame's side of tokenvault Elements (docs/elements.md): runs in `/elements/v1/frame`, on the
 * vault's origin, inside the merchant's page. It holds the field's value in its own input and lets
 * it out only in a request to the vault (its own origin) or, over a MessageChannel, to a sibling
 * frame of this origin, page, instance and key that assembles such a request.
 */
import { ELEMENT_TYPES, type CollectMessage, type ElementRef, type ElementType, type ElementsErrorShape, type FrameMessage, type PageMessage } from '../protocol.js';
import { assemble } from './assemble.js';
import { applyStyle } from './frame-style.js';
import { type Field, buildFields, wholeValue } from './frame-fields.js';

interface FrameConfig {
  element: ElementType;
  pageOrigin: string;
  instance: string;
  id: string;
  key: string;
  prefix: string;
  options: { placeholder?: string; style?: unknown; targetId?: string; ariaLabel?: string; disabled?: boolean };
}

const COLLECT_TIMEOUT_MS = 5000;

function readConfig(): FrameConfig | null {
  const query = new URLSearchParams(window.location.search);
  const element = query.get('element') as ElementType | null;
  const pageOrigin = query.get('origin');
  const instance = query.get('instance');
  const id = query.get('id');
  let fragment: { key?: unknown; prefix?: unknown; options?: unknown } = {};
  try {
    fragment = JSON.parse(decodeURIComponent(window.location.hash.slice(1))) as typeof fragment;
  } catch {
    return null;
  }
  // The key leaves the address bar at once (it never reached the server: fragments are not sent).
  history.replaceState(null, '', window.location.pathname + window.location.search);
  if (element === null || !(ELEMENT_TYPES as readonly string[]).includes(element) || pageOrigin === null || instance === null || id === null) return null;
  if (typeof fragment.key !== 'string' || typeof fragment.prefix !== 'string') return null;
  const options = typeof fragment.options === 'object' && fragment.options !== null ? (fragment.options as FrameConfig['options']) : {};
  return { element, pageOrigin, instance, id, key: fragment.key, prefix: fragment.prefix, options };
}

function problemToError(status: number, text: string): ElementsErrorShape {
  try {
    const problem = JSON.parse(text) as { type?: string; detail?: string; title?: string };
    const code = typeof problem.type === 'string' ? problem.type.replace(/^urn:tokenvault:problem:/, '').replace(/-/g, '_') : 'request_failed';
    return { code, message: String(problem.detail ?? problem.title ?? 'The vault refused the request'), status };
  } catch {
    return { code: 'request_failed', message: `The vault answered ${status}`, status };
  }
}

function start(config: FrameConfig): void {
  const { element, pageOrigin, instance, id, key, prefix } = config;
  let revealed = false;
  const fields: Field[] = buildFields(element, config.options, document.body, () => onChange());
  applyStyle(fields, config.options.style);

  const toPage = (message: Omit<FrameMessage, 'tv' | 'instance' | 'element'> & Record<string, unknown>) =>
    window.parent.postMessage({ ...message, tv: 1, instance, element: id }, pageOrigin);

  function onChange(): void {
    toPage({ type: 'change', state: combinedState(fields) });
  }
  for (const field of fields) {
    field.input.addEventListener('focus', () => toPage({ type: 'focus' }));
    field.input.addEventListener('blur', () => toPage({ type: 'blur' }));
  }

  /** A request to the vault, on this frame's own origin; the page's origin goes along for the application's check. */
  async function vault(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { [`${prefix}-API-KEY`]: key, [`${prefix}-PAGE-ORIGIN`]: pageOrigin };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(path, { method, headers, body: body === undefined ? null : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
    } catch {
      throw { code: 'network_error', message: 'The vault could not be reached' } satisfies ElementsErrorShape;
    }
    const text = await response.text();
    if (!response.ok) throw problemToError(response.status, text);
    return text.length === 0 ? null : JSON.parse(text);
  }

  /** This frame's value for a reference: the whole value or one part of it. */
  function valueFor(ref: Pick<ElementRef, 'part'>): { value: unknown; error?: ElementsErrorShape } {
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
  function collectFrom(elementId: string, ref: ElementRef): Promise<unknown> {
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
        const message: CollectMessage & { part?: string } = { tv: 1, type: 'collect', instance, element: elementId, key, ...(ref.part ? { part: ref.part } : {}) };
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
    } else resolved = await collectFrom(String(ref.$tvElement), ref);
    if (ref.part !== 'month' && ref.part !== 'year') collectSecrets(resolved, secrets);
    return resolved;
  }

  async function submit(path: '/tokens' | '/tokenize', body: unknown): Promise<unknown> {
    const secrets: string[] = [];
    // References are filled only in a token's data, at exact paths (assemble.ts).
    const assembled = await assemble(path, body, (ref) => resolveRef(ref, secrets));
    try {
      return scrub(await vault('POST', path, assembled), secrets);
    } catch (error) {
      throw scrubError(error, secrets);
    }
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
      const own = valueFor(data.part ? { part: data.part } : {});
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
        if (data.path !== '/tokens' && data.path !== '/tokenize') return;
        // eslint-disable-next-line @typescript-eslint/no-floating-promises -- answer() handles both outcomes of the work; its handlers only post a message to the page
        void answer(submit(data.path, data.body));
        return;
    }
  });

  // Ready once the vault accepts the key from this page's origin (a refused origin is an error).
  vault('GET', '/tenants/self')
    .then(async () => {
      if (config.options.targetId !== undefined) await reveal(String(config.options.targetId));
      toPage({ type: 'ready' });
    })
    .catch((error: unknown) => toPage({ type: 'error', error: asError(error) }));
}

function combinedState(fields: Field[]): { empty: boolean; complete: boolean; valid: boolean; errors: string[]; cardBrand?: string } {
  const states = fields.map((f) => f.state());
  const brand = states.find((s) => s.cardBrand !== undefined)?.cardBrand;
  const out = {
    empty: states.every((s) => s.empty),
    complete: states.every((s) => s.complete),
    valid: states.every((s) => s.valid),
    errors: [...new Set(states.flatMap((s) => s.errors))],
  };
  return brand === undefined ? out : { ...out, cardBrand: brand };
}

function collectSecrets(value: unknown, into: string[]): void {
  if (typeof value === 'string' && value.length > 0) into.push(value);
  else if (typeof value === 'object' && value !== null)
    for (const [k, v] of Object.entries(value)) if (k !== 'expiration_month' && k !== 'expiration_year' && k !== 'month' && k !== 'year') collectSecrets(v, into);
}

/** The vault's answer without any string holding a submitted value (what a revealing caller's answer would show). */
function scrub(value: unknown, secrets: string[]): unknown {
  if (typeof value === 'string') {
    const digits = value.replace(/\D/g, '');
    return secrets.some((s) => s === value || (s.length >= 12 && /^\d+$/.test(s) && digits.includes(s))) ? undefined : value;
  }
  if (Array.isArray(value)) return value.map((v) => scrub(v, secrets));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value)
        .map(([k, v]) => [k, scrub(v, secrets)])
        .filter(([, v]) => v !== undefined),
    );
  return value;
}

function scrubError(error: unknown, secrets: string[]): ElementsErrorShape {
  const shape = asError(error);
  let message = shape.message;
  for (const s of secrets) message = message.split(s).join('[value]');
  return { ...shape, message };
}

function asError(error: unknown): ElementsErrorShape {
  if (typeof error === 'object' && error !== null && typeof (error as ElementsErrorShape).code === 'string') {
    const e = error as ElementsErrorShape;
    return { code: e.code, message: String(e.message).slice(0, 500), ...(e.status !== undefined ? { status: e.status } : {}) };
  }
  return { code: 'internal_error', message: 'The element failed' };
}

const config = readConfig();
if (config === null) document.body.textContent = 'This frame must be created by tokenvault Elements.';
else start(config);
