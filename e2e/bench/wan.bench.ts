/**
 * The WAN part of `make bench`: one native seeder in the public segment and
 * eight pages in the three homes of the emulated internet (scripts/wan.sh), every home's
 * path 20 ms each way with 1 % loss each way and a 20 Mbit/s uplink, playing the swarm
 * benchmark's video (made by scripts/bench-browser.mjs) to its end. Per run: each page's
 * first frame after attach(), its stalls, the offload (bytes from peers ÷ bytes received)
 * and the seeder's upload ÷ content. Writes target/bench/wan.json (BENCH_SMOKE=1: two pages,
 * the short video, one run, wan-smoke.json).
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { ROOT } from '../tests/swarm.js';
import { PUBLIC_IP, startStun } from '../tests/wan.js';
import { WanRun, expect, test, trackRuns } from '../tests/wan-fixture.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const PAGES = SMOKE ? 2 : 8;
const RUNS = SMOKE ? 1 : 3;
const LINK = ['--delay', '20', '--loss', '1', '--rate', '20'];
const VIDEO = join(ROOT, 'target', 'bench', SMOKE ? 'swarm-smoke.webm' : 'swarm.webm');
const OUT = join(ROOT, 'target', 'bench', SMOKE ? 'wan-smoke.json' : 'wan.json');

interface PageFigures {
  firstFrameMs: number;
  stalls: number;
  stalledMs: number;
  longestStallMs: number;
  bytesDownloaded: number;
  bytesFromPeers: number;
}

// Internets still up when a test times out are removed after it (tests/wan-fixture.ts).
const live = trackRuns();

function stats(runs: number[]): { min: number; median: number; max: number; runs: number[] } {
  const s = [...runs].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return { min: s[0]!, median, max: s[s.length - 1]!, runs };
}

test('WAN swarm: eight pages in NATed homes on 40 ms, 1 % loss, 20 Mbit/s uplinks', async () => {
  expect(existsSync(VIDEO), `${VIDEO} is made by scripts/bench-browser.mjs (run it first)`).toBe(true);
  const content = statSync(VIDEO).size;
  const all: PageFigures[] = [];
  const seederRatios: number[] = [];
  const offloads: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    // Where namespaces cannot be made, the benchmark is skipped (and bench-report says
    // which figures are missing).
    const wanRun = live(new WanRun());
    try {
      const wan = wanRun.up(`w${run}`, [...LINK, '--seed', String(run + 1)]);
      wanRun.keep('stun', await startStun(wan));
      const swarm = await wanRun.swarm(VIDEO);
      const ice = encodeURIComponent(JSON.stringify([{ urls: `stun:${PUBLIC_IP}:3478` }]));
      const pages: Page[] = [];
      for (let i = 0; i < PAGES; i++) {
        const url = `${swarm.web}/e2e/player.html?uri=${encodeURIComponent(swarm.uri)}&ice=${ice}`;
        pages.push(await wanRun.page((i % 3) + 1, url, { label: `page ${i + 1}` }));
        await new Promise((r) => setTimeout(r, 250));
      }
      // Each page plays to the end of the video (so every stall is counted).
      for (const page of pages) {
        await expect
          .poll(() => page.evaluate(() => {
            const v = document.querySelector('video')!;
            const t = (window as unknown as { __t: { error: string | null } }).__t;
            return t.error ?? (Number.isFinite(v.duration) && v.currentTime >= v.duration - 0.5);
          }), { timeout: 180_000, intervals: [500], message: 'the page plays to the end' })
          .toBe(true);
      }
      await new Promise((r) => setTimeout(r, 1200)); // one more seeder stats line
      const figures = await Promise.all(
        pages.map((p) =>
          p.evaluate(() => {
            const t = (window as unknown as {
              __t: { firstFrameMs: number; stalls: { durationMs: number }[]; player: { stats(): { bytesDownloaded: number; bytesFromPeers: number } } };
            }).__t;
            const s = t.player.stats();
            return {
              firstFrameMs: t.firstFrameMs,
              stalls: t.stalls.length,
              stalledMs: t.stalls.reduce((a, x) => a + x.durationMs, 0),
              longestStallMs: t.stalls.reduce((a, x) => Math.max(a, x.durationMs), 0),
              bytesDownloaded: s.bytesDownloaded,
              bytesFromPeers: s.bytesFromPeers,
            };
          }),
        ),
      );
      all.push(...figures);
      const last = [...swarm.seeder.lines].reverse().find((l) => l.startsWith('{'));
      seederRatios.push((JSON.parse(last!) as { bytes_uploaded: number }).bytes_uploaded / content);
      offloads.push(figures.reduce((a, f) => a + f.bytesFromPeers, 0) / figures.reduce((a, f) => a + f.bytesDownloaded, 0));
      console.log(`run ${run + 1}: seeder upload ${seederRatios.at(-1)!.toFixed(2)}× content, offload ${(100 * offloads.at(-1)!).toFixed(0)} %`);
    } finally {
      await wanRun.end(test.info());
    }
  }
  const result = {
    smoke: SMOKE,
    date: new Date().toISOString(),
    pages: PAGES,
    runs: RUNS,
    link: { one_way_delay_ms: 20, loss_percent_each_way: 1, uplink_mbit: 20 },
    content_bytes: content,
    ttff_ms: stats(all.map((f) => f.firstFrameMs)),
    stalls_per_page: stats(all.map((f) => f.stalls)),
    longest_stall_ms: stats(all.map((f) => f.longestStallMs)),
    stalled_ms_per_page: stats(all.map((f) => f.stalledMs)),
    offload: stats(offloads),
    seeder_upload_ratio: stats(seederRatios),
  };
  mkdirSync(join(ROOT, 'target', 'bench'), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + '\n');
  console.log(`wrote ${OUT}`);
});
