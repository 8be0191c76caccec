import * as v from 'valibot';
import { validationFromIssues } from '../validation/issues.js';
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimits } from './sandbox.js';

const KIB = 1024;
const MIB = 1024 * KIB;

const integerIn = (min: number, max: number) => v.optional(v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max)));

/**
 * Accepted ranges. The stack ceiling stays under the 5 MiB C stack the quickjs-emscripten build
 * reserves, so QuickJS's own check can never let the interpreter run past it.
 */
const LimitsSchema = v.strictObject({
  memoryBytes: integerIn(1 * MIB, 2048 * MIB),
  timeoutMs: integerIn(1, 15 * 60_000),
  maxStackBytes: integerIn(16 * KIB, 4 * MIB),
  maxResultBytes: integerIn(2, 256 * MIB),
  maxLogBytes: integerIn(0, 64 * MIB),
});

/**
 * Applies `overrides` on top of `base` after checking each given value is in range.
 * @throws ValidationError keyed `limits.<name>` for a value out of range or of the wrong type.
 */
export function resolveLimits(base: SandboxLimits, overrides: Partial<SandboxLimits> | undefined): SandboxLimits {
  if (overrides === undefined) return base;
  const parsed = v.safeParse(LimitsSchema, overrides);
  if (!parsed.success) throw validationFromIssues(parsed.issues, 'limits');
  const out: SandboxLimits = { ...base };
  for (const key of Object.keys(DEFAULT_SANDBOX_LIMITS) as (keyof SandboxLimits)[]) {
    const value = parsed.output[key];
    if (value !== undefined) out[key] = value;
  }
  return Object.freeze(out);
}
