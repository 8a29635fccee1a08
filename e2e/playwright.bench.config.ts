import { defineConfig } from '@playwright/test';

// The browser benchmarks that need the emulated internet (`make bench`, e2e/bench/): one
// at a time, each bounded; they write their figures under target/bench/.
export default defineConfig({
  testDir: './bench',
  testMatch: '*.bench.ts',
  workers: 1,
  fullyParallel: false,
  timeout: 15 * 60_000,
  retries: 0,
  reporter: [['list']],
  outputDir: '../target/bench/results',
});
