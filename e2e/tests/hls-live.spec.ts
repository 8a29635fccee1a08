/**
 * Live HLS over PPSPP: ffmpeg's test source through ffmpeg's HLS muxer (fMP4, 2 s
 * segments, two renditions with audio), `ppspp hls live` beside it signing each rendition
 * as a live swarm and keeping the live manifest, a static web server holding the
 * packager's folder as a CDN would, and hls.js pages (hls.html) playing it with the
 * presentation's fragment loader, from the web server and from each other.
 */
import { type Browser, type Page, expect, test } from '@playwright/test';
import { FailureReport } from './diagnose.js';
import { type FirefoxPage, openFirefoxPage } from './firefox.js';
import { HLS_MOUNT } from './hls-ladder.js';
import { type LiveRun, SEGMENT_SECONDS, livePageUrl, packagerSha, playingLive, startLiveRun as startRun, streamHasSegments } from './live-packager.js';
import { holdSignaling, openWatchedPage } from './player-pages.js';
import { ALONE, webForSpec } from './spec-setup.js';
import type { Evaluable } from './swarm.js';

const report = new FailureReport();
const { web, stops } = webForSpec(() => {}, [HLS_MOUNT]);

function startLiveRun(name: string, seconds: number, serve: boolean): Promise<LiveRun> {
  return startRun(name, seconds, serve, { keep: (n, p) => report.keep(n, p), stops });
}

function pageUrl(r: LiveRun, extra: Record<string, string> = {}): string {
  return livePageUrl(web(), r, extra);
}

function openPage(browser: Browser, r: LiveRun, label: string, extra: Record<string, string> = {}, prepare?: (page: Page) => Promise<void>): Promise<Page> {
  return openWatchedPage(browser, report, pageUrl(r, extra), label, prepare);
}

interface Seen {
  frags: { url: string; sha: string; level: number }[];
  errors: string[];
  hlsErrors: string[];
  originCorrupt: string[];
  latencyMs: number[];
  loadMs: number[];
  stallsMs: number[];
  played: number;
  stats: { bytesFromHttp: number; bytesFromPeers: number; bytesFromSeeders: number; segmentsLoaded: number } | null;
  error: string | null;
}

function seen(page: Evaluable): Promise<Seen | null> {
  return page.evaluate(() => {
    const t = (window as unknown as {
      __t: {
        frags: { url: string; sha: string; level: number }[];
        errors: string[];
        hlsErrors: string[];
        originCorrupt: string[];
        latencyMs: number[] | undefined;
        loadMs: number[] | undefined;
        stallsMs: number[];
        firstFrameMs: number | null;
        error: string | null;
        presentation: { stats(): Record<string, number> } | null;
      };
    }).__t;
    if (!t) return null;
    const s = t.presentation?.stats();
    return {
      frags: t.frags,
      errors: t.errors,
      hlsErrors: t.hlsErrors,
      originCorrupt: t.originCorrupt,
      latencyMs: t.latencyMs ?? [],
      loadMs: t.loadMs ?? [],
      stallsMs: t.stallsMs,
      // Seconds of playback since the first frame (a live stream's currentTime starts late).
      played: t.firstFrameMs === null ? 0 : (t.latencyMs ?? []).length / 2,
      stats: s ? { bytesFromHttp: s.bytesFromHttp!, bytesFromPeers: s.bytesFromPeers!, bytesFromSeeders: s.bytesFromSeeders!, segmentsLoaded: s.segmentsLoaded! } : null,
      error: t.error,
    };
  });
}

function playing(page: Evaluable, seconds: number): Promise<void> {
  return playingLive(page, seconds, seen);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
}

function checkVerified(r: LiveRun, s: Seen, label: string): void {
  expect(s.error, `${label}'s script`).toBeNull();
  expect(s.errors, `${label}'s errors`).toEqual([]);
  expect(s.hlsErrors.filter((e) => e.includes('fatal=true')), `${label}'s fatal hls.js errors`).toEqual([]);
  expect(s.frags.length, `${label} loaded segments`).toBeGreaterThan(4);
  for (const f of s.frags) expect(f.sha, `${label}'s ${f.url}`).toBe(packagerSha(r, f.url));
}

test('six pages, Chromium and Firefox, play a live HLS stream from the web server and each other, every segment the packager\'s, as close to the edge as hls.js alone', ALONE, async ({ browser }) => {
  test.setTimeout(180_000);
  // The source signs only: the first copy of each segment comes from the web server.
  const r = await startLiveRun('hls-live-swarm', 80, false);
  // The first page joins a stream already running, as the plain pages do, rather than at
  // its very edge.
  await streamHasSegments(r, 4);
  const pages: Evaluable[] = [await openPage(browser, r, 'page 0')];
  await playing(pages[0]!, 4);
  // hls.js alone over HTTP, two pages joining with the later pages: the latency to match.
  const plains = [await openPage(browser, r, 'plain hls.js 0', { plain: '1' })];
  for (const i of [1, 2, 3, 4]) {
    pages.push(await openPage(browser, r, `page ${i}`));
    if (i === 3) plains.push(await openPage(browser, r, 'plain hls.js 1', { plain: '1' }));
  }
  const firefox: FirefoxPage = await openFirefoxPage(pageUrl(r));
  stops.push(() => firefox.close());
  pages.push(firefox);
  for (const page of [...pages, ...plains]) await playing(page, 16);
  const all = (await Promise.all(pages.map(seen))).map((s) => s!);
  const bases = (await Promise.all(plains.map(seen))).map((s) => s!);
  for (const s of [...all, ...bases]) {
    console.log(JSON.stringify({ ...s.stats, frags: s.frags.length, latencyMs: median(s.latencyMs), loadMs: s.loadMs, stallsMs: s.stallsMs }));
  }
  for (const [i, s] of all.entries()) {
    const label = i === 5 ? 'Firefox' : `page ${i}`;
    checkVerified(r, s, label);
    expect(s.stats!.segmentsLoaded, `${label}'s segments came through the presentation`).toBeGreaterThanOrEqual(s.frags.length);
    expect(s.stallsMs.filter((ms) => ms > 1000), `${label}'s stalls over 1 s`).toEqual([]);
  }
  // Behind the packager within one segment of plain hls.js, which joined with the later
  // pages: where in a segment a page joins moves its latency by up to a segment, so the
  // later pages' samples are compared with the plain pages' as a whole.
  const ours = median(all.slice(1).flatMap((s) => s.latencyMs));
  const plain = median(bases.flatMap((s) => s.latencyMs));
  expect(ours, `the later pages' median latency (ms) against plain hls.js's ${plain}`).toBeLessThanOrEqual(plain + SEGMENT_SECONDS * 1000);
  // More than a third of the later pages' bytes came from peers.
  const later = all.slice(1).map((s) => s.stats!);
  const sum = (k: 'bytesFromPeers' | 'bytesFromHttp' | 'bytesFromSeeders'): number => later.reduce((a, s) => a + s[k], 0);
  const total = sum('bytesFromPeers') + sum('bytesFromHttp') + sum('bytesFromSeeders');
  expect(sum('bytesFromPeers') / total, `the later pages' share of bytes from peers: ${JSON.stringify(later)}`).toBeGreaterThan(1 / 3);
});

test('a forging peer is refused: its chunks fail verification, it is dropped, and hls.js gets the packager\'s bytes', async ({ browser }) => {
  test.setTimeout(150_000);
  // The source serves its swarms: the honest page asks it and the liar, which hold what
  // it needs, and takes the true copies from the source.
  const r = await startLiveRun('hls-live-forged', 50, true);
  // The poisoning build corrupts every chunk it serves to peers.
  const liar = await openPage(browser, r, 'liar', { wasm: '/wasm-poison/ppspp_wasm_bg.wasm' });
  await playing(liar, 4);
  const honest = await openPage(browser, r, 'honest');
  await playing(honest, 12);
  const s = (await seen(honest))!;
  console.log(`honest page: ${JSON.stringify(s.stats)}; errors ${s.errors.length} (first: ${s.errors[0]})`);
  expect(s.errors.length, 'the liar\'s chunks were refused').toBeGreaterThan(0);
  for (const e of s.errors) expect(e).toMatch(/^verification-failed: /);
  checkVerified(r, { ...s, errors: [] }, 'honest page');
});

test('a segment tampered with on the web server is refused, and hls.js gets the packager\'s from a peer', async ({ browser }) => {
  test.setTimeout(150_000);
  // The source serves its swarms: the true copies come from it.
  const r = await startLiveRun('hls-live-tampered', 50, true);
  // Every media segment on the web server has a byte changed. The page asks the web server
  // at once (livePeerWait 0) and meets its peers only once it has refused a segment from
  // there: the source's copy, verified first, would cancel the page's request to the web
  // server before its bytes were checked.
  r.folder.tamper = (path) => /seg_\d_\d+\.m4s$/.test(path);
  let refused = (): void => {};
  const released = new Promise<void>((resolve) => (refused = resolve));
  const page = await openPage(browser, r, 'page', { livePeerWait: '0' }, (p) => holdSignaling(p, r.signal, () => released));
  try {
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { __t: { originCorrupt: string[] } }).__t.originCorrupt.length), {
        timeout: 30_000,
        message: 'the page refused a tampered segment from the web server before meeting peers',
      })
      .toBeGreaterThan(0);
  } finally {
    refused();
  }
  await playing(page, 12);
  const s = (await seen(page))!;
  console.log(`page: ${JSON.stringify(s.stats)}; origin-corrupt ${s.originCorrupt.join(' ')}`);
  expect(s.originCorrupt.length, 'tampered segments from the web server were refused').toBeGreaterThan(0);
  expect(s.stats!.bytesFromHttp, 'nothing of the tampered segments was kept').toBe(0);
  checkVerified(r, s, 'page');
});
