/*
 * The messages between the page's script (browser/page.ts) and the frames (browser/frame.ts), and
 * between frames (docs/elements.md, "Security model"). Every message carries `tv: 1` and the
 * elements instance it belongs to; receivers check origin, source and instance before reading more.
 */

/** The element types a page may create. */
export const ELEMENT_TYPES = ['cardNumber', 'cardExpirationDate', 'cardVerificationCode', 'card', 'text'] as const;
export type ElementType = (typeof ELEMENT_TYPES)[number];

/** The path prefix the vault serves elements under; `v1` changes when the protocol does. */
export const ELEMENTS_PATH = '/elements/v1';

/** A reference to an element's value inside a request body the page builds (never the value). */
export interface ElementRef {
  $tvElement: string;
  /** `cardExpirationDate`: which part; `card`: which field; absent: the whole value. */
  part?: 'month' | 'year' | 'number' | 'cvc';
}

/** Page → frame. */
export type PageMessage = { tv: 1; instance: string; rid?: number } & (
  { type: 'focus' } | { type: 'blur' } | { type: 'clear' } | { type: 'reveal'; token: string } | { type: 'submit'; path: '/tokens' | '/tokenize'; body: unknown }
);

/** Frame → page. */
export type FrameMessage = { tv: 1; instance: string; element: string } & (
  | { type: 'ready' }
  | { type: 'change'; state: { empty: boolean; complete: boolean; valid: boolean; errors: string[]; cardBrand?: string } }
  | { type: 'focus' }
  | { type: 'blur' }
  | { type: 'error'; error: ElementsErrorShape }
  | { type: 'result'; rid: number; ok: true; result: unknown }
  | { type: 'result'; rid: number; ok: false; error: ElementsErrorShape }
);

/** An error as the page sees it: a code, a message in our words, the vault's status; never data. */
export interface ElementsErrorShape {
  code: string;
  message: string;
  status?: number;
}

/** Frame → frame (same origin, same page, same instance and key): asks a sibling for its value over a MessageChannel port. */
export interface CollectMessage {
  tv: 1;
  type: 'collect';
  instance: string;
  element: string;
  key: string;
}
