// The TypeScript linter of `make lint`: typescript-eslint's recommended rules over the
// package (web/) and its browser tests (e2e/). docs/ARCHITECTURE.md says why this one.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', '**/wasm/**', '**/wasm-poison/**', 'target/**'],
  },
  {
    files: ['web/**/*.ts', 'e2e/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
  },
  {
    // Playwright reads a hook's fixtures from its first parameter's destructuring:
    // `async ({}, info) => …` is how a hook that needs none is written.
    files: ['e2e/**/*.ts'],
    rules: { 'no-empty-pattern': 'off' },
  },
);
