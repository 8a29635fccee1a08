/**
 * Pages that start together on 720p video with 2 s keyframes, whose first segment (700 KB
 * and more) is several times what a page fetches at once, played from a static web server
 * with or without a seeder: what each page saw. The e2e spec (first-frame.spec.ts) checks
 * that no page waits on a stalled exchange; the benchmark (bench/first-frame.bench.ts)
 * gives the times.
 */
import { type Browser, type Page, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FailureReport } from './diagnose.js';
import { serveOnOrigin } from './origin.js';
import { BIN, openPages, run, startSignal } from './swarm.js';

/** Media seconds each page plays, its first frame included, before what it saw is read. */
export const PLAY_SECONDS = 8;

export interface Seen {
  /** Where the page's time to its first frame went (`player.startup`). */
  startup: Record<string, number | null>;
  firstFrameMs: number | null;
  /** Every stall, in ms. */
  stallsMs: number[];
  /** Stalls over 1 s, described. */
  longStalls: string[];
  fromHttp: number;
  fromPeers: number;
}

function seen(page: Page): Promise<Seen> {
  return page.evaluate(() => {
    type Stall = { durationMs: number; cause: string; position: number };
    const t = (window as unknown as {
      __t: {
        firstFrameMs: number | null; stalls: Stall[];
        player: { stats(): Record<string, number>; startup: Record<string, number | null> } | null;
      };
    }).__t;
    const s = t.player?.stats() ?? {};
    const startup = t.player?.startup ?? {};
    return {
      startup: Object.fromEntries(Object.entries(startup).map(([k, v]) => [k, v === null ? null : Math.round(v)])),
      firstFrameMs: t.firstFrameMs === null ? null : Math.round(t.firstFrameMs),
      stallsMs: t.stalls.map((x) => Math.round(x.durationMs)),
      longStalls: t.stalls.filter((x) => x.durationMs > 1000).map((x) => `${Math.round(x.durationMs)} ms ${x.cause} at ${x.position.toFixed(1)} s`),
      fromHttp: s.bytesFromHttp ?? 0,
      fromPeers: s.bytesFromPeers ?? 0,
    };
  });
}

export interface Together {
  file: string;
  pages: number;
  seeder: boolean;
  /** Seconds each page plays before what it saw is read. */
  playSeconds?: number;
}

/**
 * Opens `pages` pages on `file` from a web server (and a seeder), waits until every one
 * played past `playSeconds`, and returns what each saw. What it starts goes to `stops`.
 */
export async function playTogether(
  browser: Browser,
  web: string,
  stops: (() => Promise<void>)[],
  report: FailureReport,
  { file, pages, seeder, playSeconds = PLAY_SECONDS }: Together,
): Promise<Seen[]> {
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const served = await serveOnOrigin(file, new Uint8Array(readFileSync(file)));
  stops.push(() => served.server.stop());
  const uri = await served.uri(signal.url);
  if (seeder) {
    const seed = run(join(BIN, 'ppspp'), [
      'seed', file, '--signal', signal.url, '--bind', '127.0.0.1:0', '--chunk-size', '8192', '--hash', 'sha256',
    ]);
    report.keep('seeder', seed);
    stops.push(() => seed.stop());
    // The same content: the seeder's root is the web server's.
    const seeded = await seed.waitLine((l) => l.startsWith('ppspp://'));
    expect(seeded.split('?')[0]).toBe(uri.split('?')[0]);
  }
  // Hidden videos: six composited 720p videos would take the two cores' time from the
  // pages' own work (this is about delivery, not compositing).
  const opened = await openPages(browser, web, uri, pages, '&hidden=1', report.watch('page'));
  await expect
    .poll(async () => (await Promise.all(opened.map((p) => p.evaluate(() => document.querySelector('video')!.currentTime)))).every((t) => t > playSeconds), {
      timeout: 60_000,
      message: `every page plays past ${playSeconds} s`,
    })
    .toBe(true);
  return Promise.all(opened.map(seen));
}
