/*
 * What a frame is told (frame.ts): the element, page origin, instance and id in its address's query
 * (the vault checked them: src/http/elements-handler.ts), the key and options in its fragment
 * (never sent to a server), and the header prefix from the vault's own page when it names one.
 */
import { ELEMENT_TYPES, type ElementType } from '../protocol.js';
import type { FieldOptions } from './frame-fields.js';

export interface FrameConfig {
  element: ElementType;
  pageOrigin: string;
  instance: string;
  id: string;
  key: string;
  prefix: string;
  options: FieldOptions & { style?: unknown; targetId?: string; enableCopy?: boolean };
}

export function readConfig(): FrameConfig | null {
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
  // The vault names its header prefix in frames for pages that do not know it (Basis Theory's page API).
  const prefix = document.querySelector<HTMLMetaElement>('meta[name="tokenvault-header-prefix"]')?.content ?? fragment.prefix;
  if (typeof fragment.key !== 'string' || typeof prefix !== 'string') return null;
  const options = typeof fragment.options === 'object' && fragment.options !== null ? (fragment.options as FrameConfig['options']) : {};
  return { element, pageOrigin, instance, id, key: fragment.key, prefix, options };
}
