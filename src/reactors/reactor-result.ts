import { ReactorError } from '../errors/errors.js';

/** What reactor code returned, split into its two parts (docs/reactors.md). */
export interface ReactorOutput {
  raw?: unknown;
  tokenize?: unknown;
}

const KEYS = new Set(['raw', 'tokenize']);

/**
 * Reads the value the reactor function returned: nothing (undefined or null) is an empty response;
 * otherwise it must be an object with only `raw` and `tokenize`. Anything else is a 500
 * ReactorRuntimeError saying so, since the code (not the caller) is wrong.
 */
export function readReactorOutput(result: unknown): ReactorOutput {
  if (result === undefined || result === null) return {};
  if (typeof result !== 'object' || Array.isArray(result)) {
    throw new ReactorError('ReactorRuntimeError', 500, `The reactor must return an object { raw, tokenize }, not ${Array.isArray(result) ? 'an array' : `a ${typeof result}`}`);
  }
  const unexpected = Object.keys(result).filter((key) => !KEYS.has(key));
  if (unexpected.length > 0) {
    const names = unexpected
      .slice(0, 5)
      .map((k) => `'${k.slice(0, 50)}'`)
      .join(', ');
    throw new ReactorError('ReactorRuntimeError', 500, `The reactor must return an object { raw, tokenize }; it also returned ${names}`);
  }
  const out: ReactorOutput = {};
  const { raw, tokenize } = result as ReactorOutput;
  if (raw !== undefined) out.raw = raw;
  if (tokenize !== undefined && tokenize !== null) out.tokenize = tokenize;
  return out;
}
