// Builds the browser side of Elements (docs/elements.md) into dist/elements/: the page bundle as a
// global (elements.js) and an ES module (elements.mjs), the frame's script (frame.js) and stylesheet,
// and Basis Theory's page API over the same frames (bt-client.js).
// Dependency-free, minified, for browsers from 2020 on. tsup.config.ts runs it after the Node build.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export async function buildElements(root = ROOT) {
  const out = join(root, 'dist', 'elements');
  mkdirSync(out, { recursive: true });
  const common = { bundle: true, minify: true, platform: 'browser', target: 'es2020', legalComments: 'none', logLevel: 'warning' };
  const page = join(root, 'src/elements/browser/page.ts');
  await Promise.all([
    build({ ...common, entryPoints: [page], format: 'iife', globalName: 'TokenVaultElements', outfile: join(out, 'elements.js') }),
    build({ ...common, entryPoints: [page], format: 'esm', outfile: join(out, 'elements.mjs') }),
    build({ ...common, entryPoints: [join(root, 'src/elements/browser/frame.ts')], format: 'iife', outfile: join(out, 'frame.js') }),
    // Basis Theory's page API (/web-elements/<version>/client/index.js), over the same frames.
    build({ ...common, entryPoints: [join(root, 'src/elements/browser/bt-client.ts')], format: 'iife', outfile: join(out, 'bt-client.js') }),
  ]);
  copyFileSync(join(root, 'src/elements/browser/frame.css'), join(out, 'frame.css'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildElements();
