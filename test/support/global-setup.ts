import { ensureBuilt } from './ensure-built.js';

/** Builds dist/ once before any test file runs, so files that need it never build concurrently. */
export default function setup(): void {
  ensureBuilt();
}
