// Types of scripts/dockerfile-context.mjs, for test/cli/deploy-files.test.ts.
export interface Instruction {
  keyword: string;
  rest: string;
}
/** A package-lock.json entry, as far as developmentOnly reads it. */
export interface LockEntry {
  dev?: boolean;
  devOptional?: boolean;
  optionalDependencies?: Record<string, string>;
  [field: string]: unknown;
}
export declare function instructions(text: string): Instruction[];
export declare function envPairs(rest: string): Record<string, string>;
export declare function copyContext(root: string, to: string): void;
export declare function developmentOnly(lock: { packages: Record<string, LockEntry> }): string[];
