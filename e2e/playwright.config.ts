import { readFileSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

// Debian's Chromium, never a downloaded browser. The flags (chromium-args.json, shared with
// `make demo HEADLESS=1`) make it offer 127.0.0.1 host candidates (loopback in peer
// connections, no mDNS hiding) and keep it off the network (no background requests, and
// no proxy that a CI machine's environment may name: the tests' servers are local);
// camera/microphone permission is what unlocks host candidates.
export const CHROMIUM_ARGS: string[] = JSON.parse(readFileSync(new URL('./chromium-args.json', import.meta.url), 'utf8'));
/** Debian's Chromium, or the one `CHROMIUM` names. */
export const CHROMIUM_PATH = process.env.CHROMIUM ?? '/usr/bin/chromium';

/**
 * `make test-e2e` (scripts/test-e2e.sh) runs the suite in two groups: `E2E_GROUP=shared`,
 * the tests whose pages mostly wait on media time (a video playing, a live edge, a throttled
 * line), three spec files at a time; then `E2E_GROUP=alone`, the tests tagged `@alone`
 * (`ALONE` in tests/spec-setup.ts: they need the machine to themselves), one at a time.
 * Unset: every test, one at a time. `E2E_GROUP=media` (`make e2e-media`): only the test
 * media made (tests/media.setup.ts), no browser.
 */
const GROUP = process.env.E2E_GROUP ?? '';
if (!['', 'shared', 'alone', 'media'].includes(GROUP)) throw new Error(`E2E_GROUP must be shared, alone or media, not ${GROUP}`);
const SUFFIX = GROUP === '' ? '' : `-${GROUP}`;

export default defineConfig({
  testDir: './tests',
  ...(GROUP === 'alone' ? { grep: /@alone/ } : GROUP === 'shared' ? { grepInvert: /@alone/ } : {}),
  ...(GROUP === 'media' ? { testMatch: 'media.setup.ts' } : {}),
  // Each test runs a whole swarm (signaling, a native seeder, several pages), each bounded in
  // time; on a 2-core machine three spec files at once, of tests that mostly wait (two
  // files at a time left a core idle: BENCHMARKS.md, "How long make test takes").
  workers: GROUP === 'shared' ? 3 : 1,
  fullyParallel: false,
  timeout: 120_000,
  expect: { timeout: 30_000 },
  retries: 0,
  // short-failures: each failed test's title and first error lines, printed last by `make test-e2e`.
  reporter: [['list'], ['./tests/short-failures.ts'], ...(process.env.CI ? [['html', { open: 'never', outputFolder: `../target/e2e/report${SUFFIX}` }] as const] : [])],
  outputDir: `../target/e2e/results${SUFFIX}`,
  globalSetup: './tests/global-setup.ts',
  use: {
    headless: true,
    permissions: ['camera', 'microphone'],
    launchOptions: { executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS },
    trace: 'retain-on-failure',
  },
});
