/**
 * What a spec of browser pages sets up around its tests: the test web server (after
 * `prepare`, such as making its videos) for the whole file; after each test its browser
 * contexts closed and what it started stopped, the last started first.
 */
import { test } from '@playwright/test';
import { reportPagesNow } from './diagnose.js';
import { startWebWith } from './swarm.js';

/**
 * The tag of tests that need the machine to themselves: they measure time or the bytes a
 * swarm moves against load, read every renderer's memory, or time stalls. `make test-e2e`
 * runs them one at a time after the others, which run three spec files at a time
 * (playwright.config.ts); emulated internets at once are fine, each being namespaces of
 * their own.
 */
export const ALONE = { tag: '@alone' };

export interface SpecSetup {
  /** The test web server's URL. */
  web(): string;
  /** Stops for what the running test started. */
  stops: (() => Promise<void>)[];
}

/** `mounts`: more `/url/=dir` mounts for the web server (see `startWebWith`). */
export function webForSpec(prepare: () => unknown = () => {}, mounts: string[] = []): SpecSetup {
  let server: { url: string; stop(): Promise<void> } | null = null;
  const stops: (() => Promise<void>)[] = [];
  test.beforeAll(async () => {
    test.setTimeout(180_000);
    await prepare();
    server = await startWebWith(mounts);
  });
  test.afterAll(async () => {
    await server?.stop();
  });
  test.afterEach(async ({ browser }, info) => {
    await reportPagesNow(info);
    for (const context of browser.contexts()) await context.close();
    for (const stop of stops.splice(0).reverse()) await stop();
  });
  return {
    web: () => {
      if (!server) throw new Error('the web server is not running (webForSpec starts it in beforeAll)');
      return server.url;
    },
    stops,
  };
}
