/**
 * First frames of 720p pages that start together on two cores (tests/first-frame.ts): 3
 * and 6 pages, fragmented MP4 (H.264) and WebM (VP9) with 2 s keyframes, from a static web
 * server alone and beside a native seeder, videos hidden. Per case: every page's first
 * frame and stalls. The target is every first frame under 1.5 s. Writes
 * target/bench/first-frame.json (BENCH_SMOKE=1: 2 pages of the MP4 from the web server,
 * first-frame-smoke.json).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { expect, test } from '@playwright/test';
import { FailureReport } from '../tests/diagnose.js';
import { type Seen, playTogether } from '../tests/first-frame.js';
import { webForSpec } from '../tests/spec-setup.js';
import { ROOT, VIDEO_HD_MP4, VIDEO_HD_WEBM, makeHdVideos } from '../tests/swarm.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const OUT = join(ROOT, 'target', 'bench', SMOKE ? 'first-frame-smoke.json' : 'first-frame.json');
const { web, stops } = webForSpec(makeHdVideos);
const report = new FailureReport();

interface Case {
  video: string;
  pages: number;
  seeder: boolean;
}
const CASES: Case[] = SMOKE
  ? [{ video: VIDEO_HD_MP4, pages: 2, seeder: false }]
  : [VIDEO_HD_MP4, VIDEO_HD_WEBM].flatMap((video) =>
      [3, 6].flatMap((pages) => [false, true].map((seeder) => ({ video, pages, seeder }))),
    );

test('first frames of 720p pages that start together', async ({ browser }) => {
  test.setTimeout(CASES.length * 120_000);
  const results = [];
  for (const c of CASES) {
    const seen: Seen[] = await playTogether(browser, web(), stops, report, { file: c.video, pages: c.pages, seeder: c.seeder, playSeconds: SMOKE ? 2 : 8 });
    for (const stop of stops.splice(0).reverse()) await stop();
    for (const context of browser.contexts()) await context.close();
    const first = seen.map((s) => s.firstFrameMs);
    expect(first.every((ms) => ms !== null), `every page showed a frame: ${JSON.stringify(seen)}`).toBe(true);
    const ms = first as number[];
    const row = {
      video: basename(c.video),
      pages: c.pages,
      seeder: c.seeder,
      first_frame_ms: ms,
      first_frame_ms_max: Math.max(...ms),
      stalls_over_1s: seen.reduce((a, s) => a + s.longStalls.length, 0),
      longest_stall_ms: Math.max(0, ...seen.flatMap((s) => s.stallsMs)),
      bytes_from_http: seen.reduce((a, s) => a + s.fromHttp, 0),
      bytes_from_peers: seen.reduce((a, s) => a + s.fromPeers, 0),
    };
    console.log(JSON.stringify(row));
    results.push(row);
  }
  mkdirSync(join(ROOT, 'target', 'bench'), { recursive: true });
  writeFileSync(OUT, JSON.stringify({ smoke: SMOKE, date: new Date().toISOString(), target_ms: 1500, cases: results }, null, 2) + '\n');
  console.log(`wrote ${OUT}`);
});
