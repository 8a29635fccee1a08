import { readFileSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

// Debian's Chromium, never a downloaded browser. The flags (chromium-args.json, shared with
// `make demo HEADLESS=1`) make it offer 127.0.0.1 host candidates (loopback in peer
// connections, no mDNS hiding) and keep it off the network (no background requests, and
// no proxy that a CI machine's environment may name: the tests' servers are local);
// camera/microphone permission is what unlocks host candidates.
export const CHROMIUM_ARGS: string[] = JSON.parse(readFileSync(new URL('./chromium-args.json', import.meta.url), 'utf8'));

export default defineConfig({
  testDir: './tests',
  // Each test runs a whole swarm (signaling, a native seeder, several pages): one at a time
  // on a 2-core machine, each bounded in time.
  workers: 1,
  fullyParallel: false,
  timeout: 120_000,
  expect: { timeout: 30_000 },
  retries: 0,
  // short-failures: each failed test's title and first error lines, printed last by `make test-e2e`.
  reporter: [['list'], ['./tests/short-failures.ts'], ...(process.env.CI ? [['html', { open: 'never', outputFolder: '../target/e2e/report' }] as const] : [])],
  outputDir: '../target/e2e/results',
  globalSetup: './tests/global-setup.ts',
  use: {
    headless: true,
    permissions: ['camera', 'microphone'],
    launchOptions: { executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: CHROMIUM_ARGS },
    trace: 'retain-on-failure',
  },
});
