/**
 * Live HLS through hls.js, plain against over PPSPP: ffmpeg's live muxer (tests/live-packager.ts:
 * fMP4, 2 s segments, 360p and 180p with AAC) and `ppspp hls live` beside it signing only,
 * a static web server serving the packager's folder, 8 Chromium pages opened a second
 * apart, each playing 20 s with hls.js's defaults. Per mode: the web server's bytes ÷ the
 * bytes of the fragments hls.js loaded, latency behind the packager (wall clock minus the
 * playing media's EXT-X-PROGRAM-DATE-TIME, sampled every 0.5 s: median and 95th percentile
 * over every page's samples), time spent rebuffering. Writes target/bench/hls-live.json
 * (BENCH_SMOKE=1: 2 pages for 4 s, hls-live-smoke.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Page, expect, test } from '@playwright/test';
import { HLS_MOUNT } from '../tests/hls-ladder.js';
import { livePageUrl, startLiveRun } from '../tests/live-packager.js';
import { webForSpec } from '../tests/spec-setup.js';
import { ROOT } from '../tests/swarm.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const PAGES = SMOKE ? 2 : 8;
const PLAY_SECONDS = SMOKE ? 4 : 20;
const OUT = join(ROOT, 'target', 'bench', SMOKE ? 'hls-live-smoke.json' : 'hls-live.json');

const { web, stops } = webForSpec(() => {}, [HLS_MOUNT]);

interface PageFigures {
  latencyMs: number[];
  stalledMs: number;
  loadedBytes: number;
  fromPeers: number;
  fromHttp: number;
  errors: string[];
}

function figures(page: Page): Promise<PageFigures> {
  return page.evaluate(() => {
    const t = (window as unknown as {
      __t: {
        latencyMs: number[];
        stallsMs: number[];
        stalledNow(): number;
        frags: { bytes: number }[];
        errors: string[];
        error: string | null;
        presentation: { stats(): { bytesFromPeers: number; bytesFromHttp: number } } | null;
      };
    }).__t;
    const s = t.presentation?.stats();
    return {
      latencyMs: t.latencyMs,
      stalledMs: t.stallsMs.reduce((a, b) => a + b, 0) + t.stalledNow(),
      loadedBytes: t.frags.reduce((a, f) => a + f.bytes, 0),
      fromPeers: s?.bytesFromPeers ?? 0,
      fromHttp: s?.bytesFromHttp ?? 0,
      errors: t.error ? [t.error, ...t.errors] : t.errors,
    };
  });
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

test('live HLS: plain hls.js against hls.js over PPSPP', async ({ browser }) => {
  test.setTimeout(SMOKE ? 120_000 : 300_000);
  const result: Record<string, unknown> = { smoke: SMOKE, date: new Date().toISOString(), pages: PAGES, play_seconds: PLAY_SECONDS };
  for (const mode of ['plain', 'ppspp'] as const) {
    // Long enough for every page to join and play.
    const run = await startLiveRun(`bench-hls-live-${mode}`, PAGES + PLAY_SECONDS + 40, false, { stops });
    const pages: Page[] = [];
    try {
      for (let i = 0; i < PAGES; i++) {
        const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
        const page = await context.newPage();
        await page.goto(livePageUrl(web(), run, mode === 'plain' ? { plain: '1' } : {}));
        pages.push(page);
        await new Promise((r) => setTimeout(r, 1000));
      }
      // Samples are taken every 0.5 s while the page plays.
      for (const page of pages) {
        await expect
          .poll(() => page.evaluate(() => (window as unknown as { __t?: { latencyMs?: number[] } }).__t?.latencyMs?.length ?? 0), {
            timeout: 90_000,
            message: `the page plays ${PLAY_SECONDS} s`,
          })
          .toBeGreaterThanOrEqual(PLAY_SECONDS * 2);
      }
      const all = await Promise.all(pages.map(figures));
      for (const f of all) expect(f.errors, `${mode}: a page's errors`).toEqual([]);
      const loaded = all.reduce((a, f) => a + f.loadedBytes, 0);
      const sent = run.server.totalBytesSent();
      const samples = all.flatMap((f) => f.latencyMs);
      const row = {
        origin_bytes: sent,
        loaded_bytes: loaded,
        origin_per_loaded: sent / loaded,
        latency_ms_median: quantile(samples, 0.5),
        latency_ms_p95: quantile(samples, 0.95),
        latency_ms_median_per_page: all.map((f) => quantile(f.latencyMs, 0.5)),
        stalled_ms_per_page: all.map((f) => Math.round(f.stalledMs)),
        stalled_ms_total: Math.round(all.reduce((a, f) => a + f.stalledMs, 0)),
        bytes_from_peers: all.reduce((a, f) => a + f.fromPeers, 0),
        bytes_from_http: all.reduce((a, f) => a + f.fromHttp, 0),
      };
      console.log(`${mode}: ${JSON.stringify(row)}`);
      result[mode] = row;
    } finally {
      for (const context of browser.contexts()) await context.close();
      for (const stop of stops.splice(0).reverse()) await stop();
    }
  }
  mkdirSync(join(ROOT, 'target', 'bench'), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + '\n');
  console.log(`wrote ${OUT}`);
});
