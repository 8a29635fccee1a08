/**
 * What the player-integration specs (hls.spec.ts, shaka.spec.ts, hls-live.spec.ts) share:
 * opening a test page in a browser context of its own, watched for the failure report,
 * holding back its signaling, and waiting until its video has played past a time. The
 * pages keep what the tests check in `window.__t`, with `error` set when the page's own
 * script failed.
 */
import { type Browser, type Page, expect } from '@playwright/test';
import type { FailureReport } from './diagnose.js';
import type { Evaluable } from './swarm.js';

/**
 * `url` in a new context (camera and microphone granted, for loopback ICE candidates);
 * `prepare` runs on the page before it loads (routes, for one).
 */
export async function openWatchedPage(browser: Browser, report: FailureReport, url: string, label: string, prepare?: (page: Page) => Promise<void>): Promise<Page> {
  const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
  const page = await context.newPage();
  await report.watch(label)(page);
  page.on('pageerror', (e) => console.log(`${label}: ${e.message}`));
  await prepare?.(page);
  await page.goto(url);
  return page;
}

/**
 * Holds what `page` sends the signaling server at `signalUrl` (its join) until the promise
 * `release` gives (called once the socket opens) settles: the page's socket opens, but it
 * meets no peer before then.
 */
export async function holdSignaling(page: Page, signalUrl: string, release: () => Promise<void>): Promise<void> {
  const host = new URL(signalUrl).host;
  await page.routeWebSocket((url) => url.host === host, (ws) => {
    const server = ws.connectToServer();
    const held: (string | Buffer)[] = [];
    let open = false;
    ws.onMessage((m) => (open ? server.send(m) : held.push(m)));
    void release().finally(() => {
      open = true;
      for (const m of held.splice(0)) server.send(m);
    });
  });
}

/** Waits (up to 60 s) until the page's video plays past `seconds`; fails at once with the page's own error. */
export async function playedPast(page: Evaluable, seconds: number): Promise<void> {
  await expect
    .poll(() => page.evaluate(() => {
      const t = (window as unknown as { __t?: { error: string | null } }).__t;
      const v = document.querySelector('video')!;
      if (!t) return 'the page did not run';
      if (t.error) return `failed: ${t.error}`;
      if (v.error) return `video error: ${v.error.message}`;
      return v.currentTime;
    }), { timeout: 60_000, message: `the page plays past ${seconds} s` })
    .toBeGreaterThan(seconds);
}
