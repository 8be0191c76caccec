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

/** The API paths a frame posts a body with elements to; `/token-intents` fills a body as `/tokens` does. */
export type SubmitPath = '/tokens' | '/tokenize' | '/token-intents';

/**
 * A reference to a value a frame retrieved (`retrieve`) and keeps: what the page receives in place
 * of a token's data, and may hand to `setValue` (Basis Theory's shape: `DataElementReference`).
 */
export interface DataRef {
  correlationId: string;
  elementId: string;
  path: string;
}

/** Page → frame. `apiKey`: another key for this one request (a session's, to read). */
export type PageMessage = { tv: 1; instance: string; rid?: number; apiKey?: string } & (
  | { type: 'focus' }
  | { type: 'blur' }
  | { type: 'clear' }
  | { type: 'reveal'; token: string }
  | { type: 'submit'; path: SubmitPath; body: unknown }
  | { type: 'update'; options: Record<string, unknown> }
  | { type: 'retrieve'; token: string }
  | { type: 'setValue'; value: unknown }
  | { type: 'setValueRef'; source: string }
  | { type: 'session' }
  | { type: 'proxy'; method: string; path: string; query: Record<string, string>; headers: Record<string, string>; body: unknown }
);

/** One input's part of a change (a card element has three): which field, its error codes, whether its mask is filled. */
export interface FieldReport {
  field: 'cardNumber' | 'cardExpirationDate' | 'cardVerificationCode' | 'text';
  errors: string[];
  maskSatisfied: boolean;
}

/** Frame → page. */
export type FrameMessage = { tv: 1; instance: string; element: string } & (
  | { type: 'ready' }
  | { type: 'change'; state: { empty: boolean; complete: boolean; valid: boolean; errors: string[]; cardBrand?: string }; fields?: FieldReport[] }
  | { type: 'focus'; field?: FieldReport['field'] }
  | { type: 'blur'; field?: FieldReport['field'] }
  | { type: 'keydown'; field: FieldReport['field']; key: 'Enter' | 'Escape'; altKey: boolean; ctrlKey: boolean; shiftKey: boolean; metaKey: boolean }
  | { type: 'copy'; field: FieldReport['field'] }
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
  part?: ElementRef['part'];
  /** A value this frame retrieved (a DataRef's correlation and path), rather than its input's. */
  correlation?: string;
  path?: string;
  /** For showing in the asking frame (setValueRef): the value even when revealed, as it is. */
  show?: boolean;
}
