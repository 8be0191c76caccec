// Lint is here for one class of bug: a promise nobody waits for or catches (a rejection there
// kills the process: issue 32, item 2). Only those rules, not a style preset; formatting is Prettier's.
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig({
  files: ['src/**/*.ts'],
  languageOptions: {
    parser: tseslint.parser,
    // Type-aware: both rules need the types to know what is a promise (the project's tsconfig.json).
    parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
  },
  plugins: { '@typescript-eslint': tseslint.plugin },
  linterOptions: { reportUnusedDisableDirectives: 'error' },
  rules: {
    // `void p` is not a handler: a voided promise that rejects still ends the process.
    '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: false }],
    '@typescript-eslint/no-misused-promises': 'error',
  },
});
