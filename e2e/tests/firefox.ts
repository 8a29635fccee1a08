/**
 * Debian's Firefox ESR for the e2e suite, driven by puppeteer-core over WebDriver BiDi
 * (Playwright drives only its own Firefox builds). Each page gets a browser of its own, as
 * each Chromium page gets a context of its own: its own WebRTC stack.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser as FirefoxBrowser } from 'puppeteer-core';
import type { Page } from '@playwright/test';
import type { Evaluable } from './swarm.js';

export const FIREFOX = process.env.FIREFOX ?? '/usr/bin/firefox-esr';

/** A Firefox page and how to close it (with its browser and profile). */
export interface FirefoxPage extends Evaluable {
  reload(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens `url` in a fresh headless Firefox. The profile's prefs let pages use camera and
 * microphone, which is what makes Firefox offer 127.0.0.1 candidates, and allow loopback
 * ICE; autoplay is allowed for the muted test video.
 */
export async function openFirefoxPage(url: string): Promise<FirefoxPage> {
  const profile = mkdtempSync(join(tmpdir(), 'ppspp-firefox-'));
  let browser: FirefoxBrowser | null = null;
  try {
    browser = await puppeteer.launch({
      browser: 'firefox',
      executablePath: FIREFOX,
      headless: true,
      userDataDir: profile,
      extraPrefsFirefox: {
        'permissions.default.camera': 1,
        'permissions.default.microphone': 1,
        'media.peerconnection.ice.loopback': true,
        'media.autoplay.default': 0,
      },
    });
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.log(`firefox page: ${e instanceof Error ? e.message : String(e)}`));
    await page.goto(url);
    const open = browser;
    return {
      // The two drivers' evaluate() take the same page functions and arguments.
      evaluate: ((fn: never, arg?: unknown) => page.evaluate(fn, arg as never)) as unknown as Page['evaluate'],
      async reload() {
        await page.reload();
      },
      async close() {
        await open.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await browser?.close();
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Starts watching the page's video: the longest time its playhead stood still while it
 * should have been playing (after the first frame; not paused, ended or seeking), in
 * seconds.
 */
export async function watchStalls(page: Evaluable): Promise<void> {
  await page.evaluate(() => {
    const v = document.querySelector('video')!;
    const w = { longest: 0, since: performance.now(), last: v.currentTime, started: false };
    (window as unknown as { __stalls: typeof w }).__stalls = w;
    setInterval(() => {
      const now = performance.now();
      // Counted from the first frame on: the wait for it is the start-up time.
      w.started ||= v.currentTime > 0;
      if (!w.started || v.paused || v.ended || v.seeking || v.currentTime !== w.last) {
        w.since = now;
        w.last = v.currentTime;
      } else {
        w.longest = Math.max(w.longest, (now - w.since) / 1000);
      }
    }, 50);
  });
}

export function longestStall(page: Evaluable): Promise<number> {
  return page.evaluate(() => (window as unknown as { __stalls: { longest: number } }).__stalls.longest);
}
