/**
 * HLS through hls.js, plain against over PPSPP (`hlsFragmentLoader`): the 60 s ladder of
 * tests/hls-ladder.ts (240p/480p/720p) on a static web server, 8 Chromium pages opened a
 * second apart, each playing 20 s with hls.js's defaults (30 s of buffer). Over PPSPP the
 * presentation is given the video element (`attachMedia`), and once more without it
 * (`ppspp_no_media`: every segment fetched as if playback waited for it). Per mode: the
 * web server's bytes ÷ the bytes of the fragments hls.js loaded, first frames, time spent rebuffering, the renditions
 * played. Writes target/bench/hls.json (BENCH_SMOKE=1: 2 pages for 4 s, plain and over
 * PPSPP only, hls-smoke.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Page, expect, test } from '@playwright/test';
import { HLS_MOUNT, ladderFiles, makeLadder } from '../tests/hls-ladder.js';
import { webForSpec } from '../tests/spec-setup.js';
import { startOriginServer } from '../tests/origin.js';
import { ROOT, startSignal } from '../tests/swarm.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const PAGES = SMOKE ? 2 : 8;
const PLAY_SECONDS = SMOKE ? 4 : 20;
const OUT = join(ROOT, 'target', 'bench', SMOKE ? 'hls-smoke.json' : 'hls.json');

const { web } = webForSpec(makeLadder, [HLS_MOUNT]);

interface PageFigures {
  firstFrameMs: number | null;
  stalledMs: number;
  loadedBytes: number;
  levels: number[];
  errors: string[];
}

function figures(page: Page): Promise<PageFigures> {
  return page.evaluate(() => {
    const t = (window as unknown as {
      __t: { firstFrameMs: number | null; stallsMs: number[]; stalledNow(): number; frags: { level: number; bytes: number }[]; errors: string[]; error: string | null };
    }).__t;
    return {
      firstFrameMs: t.firstFrameMs,
      stalledMs: t.stallsMs.reduce((a, b) => a + b, 0) + t.stalledNow(),
      loadedBytes: t.frags.reduce((a, f) => a + f.bytes, 0),
      levels: [...new Set(t.frags.map((f) => f.level))].sort(),
      errors: t.error ? [t.error, ...t.errors] : t.errors,
    };
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

test('HLS: plain hls.js against hls.js over PPSPP', async ({ browser }) => {
  test.setTimeout(300_000);
  const result: Record<string, unknown> = { smoke: SMOKE, date: new Date().toISOString(), pages: PAGES, play_seconds: PLAY_SECONDS };
  const modes = SMOKE ? (['plain', 'ppspp'] as const) : (['plain', 'ppspp', 'ppspp_no_media'] as const);
  for (const mode of modes) {
    const signal = mode === 'plain' ? null : await startSignal();
    const server = await startOriginServer(ladderFiles('/hls'));
    const pages: Page[] = [];
    try {
      for (let i = 0; i < PAGES; i++) {
        const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
        const page = await context.newPage();
        const q = new URLSearchParams({ manifest: `${server.url}/hls/master.ppspp.json`, master: `${server.url}/hls/master.m3u8`, hidden: '1' });
        if (signal) q.set('signal', signal.url);
        else q.set('plain', '1');
        if (mode === 'ppspp_no_media') q.set('noMedia', '1');
        await page.goto(`${web()}/e2e/hls.html?${q}`);
        pages.push(page);
        await new Promise((r) => setTimeout(r, 1000));
      }
      for (const page of pages) {
        await expect
          .poll(() => page.evaluate(() => document.querySelector('video')!.currentTime), { timeout: 90_000, message: `the page plays ${PLAY_SECONDS} s` })
          .toBeGreaterThan(PLAY_SECONDS);
      }
      const all = await Promise.all(pages.map(figures));
      for (const f of all) expect(f.errors, `${mode}: a page's errors`).toEqual([]);
      const loaded = all.reduce((a, f) => a + f.loadedBytes, 0);
      const sent = server.totalBytesSent();
      const row = {
        origin_bytes: sent,
        loaded_bytes: loaded,
        origin_per_loaded: sent / loaded,
        first_frame_ms: all.map((f) => Math.round(f.firstFrameMs ?? NaN)),
        first_frame_ms_median: median(all.map((f) => f.firstFrameMs ?? NaN)),
        stalled_ms_per_page: all.map((f) => Math.round(f.stalledMs)),
        stalled_ms_total: Math.round(all.reduce((a, f) => a + f.stalledMs, 0)),
        renditions_played: all.map((f) => f.levels),
      };
      console.log(`${mode}: ${JSON.stringify(row)}`);
      result[mode] = row;
    } finally {
      for (const context of browser.contexts()) await context.close();
      await server.stop();
      await signal?.stop();
    }
  }
  mkdirSync(join(ROOT, 'target', 'bench'), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + '\n');
  console.log(`wrote ${OUT}`);
});
