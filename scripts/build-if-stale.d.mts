/** The repository root. */
export declare const ROOT: string;
/** True when dist/ is missing or older than a source (src/, package.json, tsup.config.ts). */
export declare function isStale(root?: string): boolean;
/** Runs tsup when dist/ is stale; returns whether it built. */
export declare function buildIfStale(root?: string): boolean;
