/*
 * The style a page may give an element: a fixed set of CSS properties, each value checked, set
 * through the CSSOM on the frame's own inputs (no stylesheet text from the page, so no CSS
 * injection: no selectors, url(), @import or expressions). States: base, focus, invalid, complete.
 */
import type { Field } from './frame-fields.js';

const PROPERTIES: Readonly<Record<string, string>> = {
  color: 'color',
  backgroundColor: 'background-color',
  fontFamily: 'font-family',
  fontSize: 'font-size',
  fontWeight: 'font-weight',
  fontStyle: 'font-style',
  letterSpacing: 'letter-spacing',
  lineHeight: 'line-height',
  padding: 'padding',
  textAlign: 'text-align',
  textTransform: 'text-transform',
  caretColor: 'caret-color',
};

/** Letters, digits, spaces and the punctuation of colors, lengths and font lists; no `(` except rgb/hsl. */
const SAFE_VALUE = /^(?:[A-Za-z0-9#%.,\-\s'"]|(?:rgba?|hsla?)\([0-9.,%\s]+\))+$/;

const STATES = ['base', 'focus', 'invalid', 'complete'] as const;
type State = (typeof STATES)[number];

function declarations(input: unknown): [string, string][] {
  if (typeof input !== 'object' || input === null) return [];
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(input)) {
    const property = PROPERTIES[name];
    if (property === undefined || typeof value !== 'string' || value.length > 100 || !SAFE_VALUE.test(value)) continue;
    out.push([property, value]);
  }
  return out;
}

/** Applies the style and keeps applying the state's part as focus and validity change. */
export function applyStyle(fields: Field[], style: unknown): void {
  const byState = new Map<State, [string, string][]>();
  const given = (typeof style === 'object' && style !== null ? style : {}) as Record<string, unknown>;
  for (const state of STATES) byState.set(state, declarations(given[state]));
  const placeholder = typeof given['placeholderColor'] === 'string' && SAFE_VALUE.test(given['placeholderColor']) ? given['placeholderColor'] : null;
  const sheet = document.styleSheets[0];
  if (placeholder !== null && sheet !== undefined) sheet.insertRule(`input::placeholder { color: ${placeholder}; }`, sheet.cssRules.length);
  const paint = (field: Field) => {
    const s = field.input.style;
    s.cssText = '';
    const state = field.state();
    const layers: State[] = ['base'];
    if (document.activeElement === field.input) layers.push('focus');
    if (!state.empty && !state.valid && document.activeElement !== field.input) layers.push('invalid');
    if (state.complete) layers.push('complete');
    for (const layer of layers) for (const [p, v] of byState.get(layer) ?? []) s.setProperty(p, v);
    field.input.setAttribute('aria-invalid', String(!state.empty && !state.valid));
  };
  for (const field of fields) {
    for (const event of ['input', 'focus', 'blur']) field.input.addEventListener(event, () => paint(field));
    paint(field);
  }
}
