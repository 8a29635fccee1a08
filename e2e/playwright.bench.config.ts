import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './playwright.config.js';

// The browser benchmarks run by Playwright (`make bench`, e2e/bench/): one at a time, each
// bounded; they write their figures under target/bench/. Pages get Debian's Chromium with
// the e2e suite's flags.
export default defineConfig({
  testDir: './bench',
  testMatch: '*.bench.ts',
  workers: 1,
  fullyParallel: false,
  timeout: 15 * 60_000,
  retries: 0,
  reporter: [['list']],
  outputDir: '../target/bench/results',
  use: {
    headless: true,
    permissions: ['camera', 'microphone'],
    launchOptions: { executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS },
  },
});
