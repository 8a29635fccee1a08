/**
 * Read-ahead bounded in time: a viewer who watches 20 s of a 60 s 720p video (2 s
 * keyframes) fetches what was watched and the read-ahead windows beyond (defaults:
 * `readAheadSeconds` 30 from anywhere, `httpReadAheadSeconds` 10 from the web server),
 * not the file: HTTP only, within a 4 MiB memory bound (nothing fetched twice), and in a
 * swarm with a seeder. Prints bytes fetched per second of media played (BENCHMARKS.md).
 */
import { type Page, expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FailureReport } from './diagnose.js';
import { webForSpec } from './spec-setup.js';
import { serveOnOrigin } from './origin.js';
import { BIN, VIDEO_HD_MP4, VIDEO_HD_SECONDS, expectPlayedPast, makeHdVideos, openPages, run, startSignal } from './swarm.js';

const { web, stops } = webForSpec(makeHdVideos);
const report = new FailureReport();

const WATCHED = 20;

interface Figures {
  played: number;
  perSecond: number;
  fromHttp: number;
  fromPeers: number;
  fromSeeders: number;
  evicted: number;
  errors: string[];
}

function figures(page: Page): Promise<Figures> {
  return page.evaluate(() => {
    const t = (window as unknown as { __t: { errors: string[]; player: { stats(): Record<string, number> } } }).__t;
    const s = t.player.stats();
    return {
      played: s.mediaSecondsPlayed!,
      perSecond: Math.round(s.bytesPerSecondPlayed!),
      fromHttp: s.bytesFromHttp!,
      fromPeers: s.bytesFromPeers!,
      fromSeeders: s.bytesFromSeeders!,
      evicted: s.chunksEvicted ?? 0,
      errors: t.errors,
    };
  });
}

/** Watches WATCHED s, then waits 3 s more for what is in flight; returns the figures. */
async function watch(page: Page): Promise<Figures> {
  await expectPlayedPast(page, WATCHED, 60_000);
  await page.evaluate(() => document.querySelector('video')!.pause());
  await page.waitForTimeout(3000);
  return figures(page);
}

const file = (): Uint8Array => new Uint8Array(readFileSync(VIDEO_HD_MP4));
/** The video's bytes per second on average. */
const rate = (): number => file().length / VIDEO_HD_SECONDS;

for (const memory of [null, 4 << 20]) {
  test(`HTTP only${memory ? ', maxMemoryBytes 4 MiB' : ''}: watching ${WATCHED} s of ${VIDEO_HD_SECONDS} s fetches what was watched and 10 s ahead, once`, async ({ browser }) => {
    test.setTimeout(120_000);
    const video = file();
    const served = await serveOnOrigin(VIDEO_HD_MP4, video);
    stops.push(() => served.server.stop());
    const uri = await served.uri();
    const [page] = await openPages(browser, web(), uri, 1, memory ? `&memory=${memory}` : '', report.watch('page'));
    const f = await watch(page!);
    const sent = served.server.bytesSent('/v.webm');
    const message = `${JSON.stringify(f)}; server sent ${sent} B of ${video.length}`;
    console.log(`HTTP only${memory ? ' (4 MiB)' : ''}: ${message}; ${(f.perSecond / rate()).toFixed(2)}× the video's rate`);
    expect(f.errors, message).toEqual([]);
    // Watched + 10 s from HTTP (3 s more played while paused is not: at most WATCHED + 2).
    expect(sent, message).toBeLessThan((WATCHED + 2 + 10 + 2) * rate());
    expect(sent, message).toBeLessThan(video.length * 0.6);
    // Nothing fetched twice: what the server sent is what the page verified from it.
    expect(sent, message).toBe(f.fromHttp);
  });
}

test(`in a swarm (a seeder and the web server): watching ${WATCHED} s of ${VIDEO_HD_SECONDS} s fetches what was watched and 30 s ahead`, async ({ browser }) => {
  test.setTimeout(120_000);
  const video = file();
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const served = await serveOnOrigin(VIDEO_HD_MP4, video);
  stops.push(() => served.server.stop());
  const uri = await served.uri(signal.url);
  const seeder = run(join(BIN, 'ppspp'), [
    'seed', VIDEO_HD_MP4, '--signal', signal.url, '--bind', '127.0.0.1:0', '--chunk-size', '8192', '--hash', 'sha256',
  ]);
  report.keep('seeder', seeder);
  stops.push(() => seeder.stop());
  await seeder.waitLine((l) => l.startsWith('ppspp://'));
  const [page] = await openPages(browser, web(), uri, 1, '', report.watch('page'));
  const f = await watch(page!);
  const fetched = f.fromHttp + f.fromPeers + f.fromSeeders;
  const message = `${JSON.stringify(f)}; fetched ${fetched} B of ${video.length}`;
  console.log(`swarm: ${message}; ${(f.perSecond / rate()).toFixed(2)}× the video's rate`);
  expect(f.errors, message).toEqual([]);
  expect(fetched, message).toBeLessThan((WATCHED + 2 + 30 + 2) * rate());
  expect(fetched, message).toBeLessThan(video.length * 0.95);
});
