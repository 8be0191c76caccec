/*
 * An element of Basis Theory's page API (docs/elements.md, "Basis Theory Web Elements and React
 * Elements"), over one of tokenvault's frames (page.ts, frame.ts): their options, methods and
 * events, never a value. Events carry states (`complete`, `empty`, `valid`, `maskSatisfied`,
 * `errors`, `cardBrand`), and `metadata` / `cardMetadata` follow the last change.
 */
import type { FieldReport, FrameMessage } from '../protocol.js';
import { toBtError, frameStyle } from './bt-shape.js';
import type { Element, Elements } from './page.js';

export type BtElementType = 'card' | 'cardNumber' | 'cardExpirationDate' | 'cardVerificationCode' | 'text';
type Listener = (event: Record<string, unknown>) => void;

/** Where an element stands a value in a request: `element.month()`, `element.year()`. */
export interface ElementWrapper {
  element: BtElement;
  method?: 'month' | 'year';
}

/** A card element's inputs as Basis Theory's events name them. */
const CARD_TARGETS: Record<FieldReport['field'], string> = {
  cardNumber: 'cardNumber',
  cardExpirationDate: 'cardExpirationDate',
  cardVerificationCode: 'cardSecurityCode',
  text: 'text',
};

/** Basis Theory's options as the frame reads them; anything else they define is not applied (docs/elements.md lists which). */
export function frameOptions(options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof options['placeholder'] === 'string' || (typeof options['placeholder'] === 'object' && options['placeholder'] !== null)) out['placeholder'] = options['placeholder'];
  const label = options['ariaLabel'] ?? options['aria-label'];
  if (typeof label === 'string') out['ariaLabel'] = label;
  if (typeof options['readOnly'] === 'boolean') out['readOnly'] = options['readOnly'];
  if (typeof options['disabled'] === 'boolean') out['inputDisabled'] = options['disabled'];
  if (options['validation'] instanceof RegExp) out['validation'] = { source: options['validation'].source, flags: options['validation'].flags };
  if (options['password'] === true) out['password'] = true;
  if (typeof options['maxLength'] === 'number') out['maxLength'] = options['maxLength'];
  if (options['enableCopy'] === true) out['enableCopy'] = true;
  const style = frameStyle(options['style']);
  if (style !== undefined) out['style'] = style;
  return out;
}

export class BtElement {
  readonly type: BtElementType;
  /** @internal tokenvault's element under this one. */
  readonly _tv: Element;
  readonly #elements: Elements;
  readonly #targetId: string;
  readonly #listeners = new Map<string, Set<Listener>>();
  #mounted = false;
  metadata: { complete: boolean; valid: boolean; maskSatisfied: boolean; empty: boolean; errors: { targetId: string; type: string }[] } = {
    complete: false,
    valid: true,
    maskSatisfied: false,
    empty: true,
    errors: [],
  };
  cardMetadata: { cardBrand: string } | undefined;

  constructor(elements: Elements, type: BtElementType, options: Record<string, unknown>) {
    this.#elements = elements;
    this.type = type;
    this.#targetId = typeof options['targetId'] === 'string' ? options['targetId'] : type;
    this._tv = elements.create(type, frameOptions(options));
    this._tv._onMessage = (data) => this.#fromFrame(data);
    if (type === 'card' || type === 'cardNumber') this.cardMetadata = { cardBrand: 'unknown' };
  }

  get mounted(): boolean {
    return this.#mounted;
  }

  async mount(target: string | HTMLElement): Promise<void> {
    try {
      await this._tv.mount(target);
      this.#mounted = true;
    } catch (error) {
      throw toBtError(error);
    }
  }

  /** Changes placeholder, disabled, readOnly and style. */
  async update(options: Record<string, unknown>): Promise<void> {
    await this.#request({ type: 'update', options: frameOptions(options) });
  }

  /** Sends the element's state again as a change event (its errors included). */
  validate(): void {
    this.#emit('change', this.#changeEvent());
  }

  clear(): void {
    this._tv.clear();
  }

  focus(): void {
    this._tv.focus();
  }

  blur(): void {
    this._tv.blur();
  }

  unmount(): void {
    this._tv.unmount();
    this.#mounted = false;
  }

  on(type: string, listener: Listener): { unsubscribe(): void } {
    let set = this.#listeners.get(type);
    if (set === undefined) this.#listeners.set(type, (set = new Set()));
    set.add(listener);
    return { unsubscribe: () => set.delete(listener) };
  }

  /** Shows a retrieved token's value (the references `tokens.retrieve` answered) in this element's frame. */
  setValue(value: unknown): Promise<void> {
    return this.#request({ type: 'setValue', value });
  }

  /** Shows another element's value in this one (frame to frame). */
  setValueRef(source: BtElement): Promise<void> {
    if (!(source instanceof BtElement)) return Promise.reject(new TypeError('setValueRef takes another element'));
    return this.#request({ type: 'setValueRef', source: source._tv.id });
  }

  month(): ElementWrapper {
    return { element: this, method: 'month' };
  }

  year(): ElementWrapper {
    return { element: this, method: 'year' };
  }

  format(): never {
    throw new Error('tokenvault does not serve format() of an expiration date: use month() and year() (docs/elements.md)');
  }

  async #request(message: Record<string, unknown>): Promise<void> {
    try {
      await this.#elements._request(this._tv, message);
    } catch (error) {
      throw toBtError(error);
    }
  }

  #target(field: FieldReport['field'] | undefined): string {
    return this.type === 'card' && field !== undefined ? CARD_TARGETS[field] : this.#targetId;
  }

  #changeEvent(): Record<string, unknown> {
    const event: Record<string, unknown> = { type: 'change', ...this.metadata };
    if (this.cardMetadata !== undefined) event['cardBrand'] = this.cardMetadata.cardBrand;
    return event;
  }

  #fromFrame(data: FrameMessage): void {
    switch (data.type) {
      case 'change': {
        const reports = data.fields ?? [];
        // `required` is an empty field's code: Basis Theory reports emptiness apart (`empty`), not as an error.
        const errors = reports.flatMap((r) =>
          [...new Set(r.errors.filter((e) => e !== 'required').map((e) => (e === 'incomplete' ? 'incomplete' : 'invalid')))].map((type) => ({
            targetId: this.#target(r.field),
            type,
          })),
        );
        this.metadata = { complete: data.state.complete, valid: errors.length === 0, maskSatisfied: reports.every((r) => r.maskSatisfied), empty: data.state.empty, errors };
        if (this.cardMetadata !== undefined) this.cardMetadata = { cardBrand: data.state.cardBrand ?? 'unknown' };
        this.#emit('change', this.#changeEvent());
        return;
      }
      case 'ready':
        this.#emit('ready', { type: 'ready' });
        return;
      case 'focus':
      case 'blur':
        this.#emit(data.type, { type: data.type, targetId: this.#target(data.field) });
        return;
      case 'keydown': {
        const { key, altKey, ctrlKey, shiftKey, metaKey } = data;
        this.#emit('keydown', { type: 'keydown', targetId: this.#target(data.field), key, altKey, ctrlKey, shiftKey, metaKey });
        return;
      }
      case 'copy':
        this.#emit('copy', { type: 'copy', targetId: this.#target(data.field) });
        return;
    }
  }

  #emit(type: string, event: Record<string, unknown>): void {
    for (const listener of [...(this.#listeners.get(type) ?? [])]) {
      try {
        listener(event);
      } catch (error) {
        // A page listener's error must not stop the others (nor reach the frame protocol).
        console.error(error);
      }
    }
  }
}
