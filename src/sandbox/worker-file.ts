/**
 * Where the sandbox's worker thread code is (docs/bundling.md). Built, it is `sandbox-worker.js`
 * beside the chunk holding this code, one self-contained file (tsup.config.ts) that needs only
 * `quickjs-emscripten` from node_modules; a bundle of an application holds no such file unless it
 * is copied or bundled beside it, or named by the `workerFile` option. The file is checked when the
 * vault or sandbox is created, so a missing one is a startup error naming the path and the option.
 */
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ValidationError } from '../errors/errors.js';

/**
 * The default: beside this code. Run from TypeScript sources (vitest), the built one is used: a
 * worker cannot load `.ts` on Node 20 without a loader, and the test setup builds `dist/` first.
 */
export function defaultWorkerFile(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/sandbox-worker.js', here) : new URL('./sandbox-worker.js', here);
}

/**
 * The worker file to start: `given` (a path, relative paths from the working directory, or a
 * file: URL) or the default, checked to be an existing file.
 * @throws ValidationError keyed `option` (e.g. `options.reactors.workerFile`), naming the path.
 */
export function resolveWorkerFile(given: string | URL | undefined, option: string): URL {
  let url: URL;
  if (given === undefined) url = defaultWorkerFile();
  else if (given instanceof URL) url = given;
  else if (typeof given === 'string' && given.length > 0) url = given.startsWith('file:') ? new URL(given) : pathToFileURL(given);
  else throw ValidationError.field(option, 'must be the path or file: URL of the sandbox worker file');
  if (url.protocol !== 'file:') throw ValidationError.field(option, `must be a file: URL, not ${url.protocol}`);
  const path = fileURLToPath(url);
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw ValidationError.field(
      option,
      given === undefined
        ? `is not set and the reactor sandbox's worker file is not where tokenvault's code expects it (${path}): ` +
            "when tokenvault is bundled, bundle or copy 'tokenvault/sandbox-worker' (node_modules/tokenvault/dist/sandbox-worker.js) " +
            'beside the bundle, or set this option to its path (docs/bundling.md)'
        : `names ${path}, which is not a file: give the path of tokenvault's sandbox-worker.js (docs/bundling.md)`,
    );
  }
  return url;
}
