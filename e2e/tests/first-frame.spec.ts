/**
 * The first frame never waits on a stalled exchange: 720p video with 2 s keyframes, whose
 * first segment (700 KB and more) is several times what a page fetches at once, played
 * from a static web server by 3 and 6 pages that start together, with and without a
 * seeder. Each page shows its first frame within 1.5 s (2.5 s for six pages, see
 * below) and never stalls over 1 s.
 */
import { type Page, expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FailureReport } from './diagnose.js';
import { webForSpec } from './spec-setup.js';
import { serveOnOrigin } from './origin.js';
import { BIN, VIDEO_HD_MP4, VIDEO_HD_WEBM, makeHdVideos, openPages, run, startSignal } from './swarm.js';

const { web, stops } = webForSpec(makeHdVideos);
const report = new FailureReport();

/** Media seconds each page plays, its first frame included, before its stalls are read. */
const PLAY_SECONDS = 8;

interface Seen {
  /** Where each page's time to the first frame went (`player.startup`). */
  startup: Record<string, number | null>;
  firstFrameMs: number | null;
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
      longStalls: t.stalls.filter((x) => x.durationMs > 1000).map((x) => `${Math.round(x.durationMs)} ms ${x.cause} at ${x.position.toFixed(1)} s`),
      fromHttp: s.bytesFromHttp ?? 0,
      fromPeers: s.bytesFromPeers ?? 0,
    };
  });
}

for (const [name, file] of [['fragmented MP4 (H.264)', VIDEO_HD_MP4], ['WebM (VP9)', VIDEO_HD_WEBM]] as const) {
  for (const pages of [3, 6]) {
    for (const seeder of [false, true]) {
      test(`${name}, 720p: ${pages} pages from a web server${seeder ? ' and a seeder' : ''}; first frames within ${pages === 6 ? '2.5' : '1.5'} s, no stall over 1 s`, async ({ browser }) => {
        test.setTimeout(120_000);
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
        // Hidden videos: six composited 720p videos would take the two cores' time from
        // the pages' own work (the test is about delivery, not compositing).
        const opened = await openPages(browser, web(), uri, pages, '&hidden=1', report.watch('page'));
        await expect
          .poll(async () => (await Promise.all(opened.map((p) => p.evaluate(() => document.querySelector('video')!.currentTime)))).every((t) => t > PLAY_SECONDS), {
            timeout: 60_000,
            message: `every page plays past ${PLAY_SECONDS} s`,
          })
          .toBe(true);
        const all = await Promise.all(opened.map(seen));
        const message = `per page: ${JSON.stringify(all)}`;
        console.log(message);
        // Six 720p decoders (and a seeder) share the test machine's two cores: there the
        // later pages' first frames are bound by CPU (every startup step slows, the Wasm
        // load included; BENCHMARKS.md), and the bound is looser.
        const bound = pages === 6 ? 2500 : 1500;
        for (const [i, s] of all.entries()) {
          expect(s.firstFrameMs, `page ${i}'s first frame (ms); ${message}`).not.toBeNull();
          expect(s.firstFrameMs!, `page ${i}'s first frame (ms); ${message}`).toBeLessThan(bound);
          expect(s.longStalls, `page ${i}'s stalls over 1 s; ${message}`).toEqual([]);
        }
      });
    }
  }
}
