/**
 * The suite's "now" for test vaults: 2030-01-01T00:00:00Z, as the store conformance fixtures use
 * (src/testing/store-fixtures.ts). `createTestVault` starts at the real time by default; the
 * suite's tests compare times exactly, so they start here.
 */
export const SUITE_START = '2030-01-01T00:00:00Z';
