import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './playwright.config.js';

// The browser benchmarks run by Playwright (`make bench`, e2e/bench/): one at a time, each
// bounded, so that no figure shares the machine with another benchmark; they write their
// figures under target/bench/. The smoke (`BENCH_SMOKE=1`, in `make test`) only checks that
// each produces its figures, so it runs three at a time: most of its time is spent waiting
// (pages starting, media playing). Pages get Debian's Chromium with the e2e suite's flags.
export default defineConfig({
  testDir: './bench',
  testMatch: '*.bench.ts',
  workers: process.env.BENCH_SMOKE === '1' ? 3 : 1,
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
