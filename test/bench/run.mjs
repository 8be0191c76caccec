// `npm run bench`: every benchmark, each beside its same-process baseline. Builds first (package.json).
import { existsSync } from 'node:fs';

const suites = ['./core.mjs', './reactors.mjs', './http.mjs'].filter((path) => existsSync(new URL(path, import.meta.url)));
for (const suite of suites) {
  const { run } = await import(suite);
  await run();
}
