/**
 * Shaka Player over PPSPP (web/src/integrations/shaka.ts): pages play the DASH ladder
 * (dash-ladder.ts) through Shaka with the presentation's scheme plugin, from a static web
 * server holding the ladder and `ppspp dash prepare`'s manifest and tree files, and from
 * each other.
 */
import { type Browser, type Page, expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DASH_LADDER, SHAKA_MOUNT, makeDashLadder } from './dash-ladder.js';
import { FailureReport } from './diagnose.js';
import { type FirefoxPage, openFirefoxPage } from './firefox.js';
import { ladderFiles } from './hls-ladder.js';
import { type OriginServer, type Throttle, startOriginServer } from './origin.js';
import { openWatchedPage, playedPast } from './player-pages.js';
import { ALONE, webForSpec } from './spec-setup.js';
import { type Evaluable, sha256, startSignal } from './swarm.js';

const report = new FailureReport();
const { web, stops } = webForSpec(makeDashLadder, [SHAKA_MOUNT]);

async function signalAndLadder(): Promise<{ signal: { url: string }; server: OriginServer }> {
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const server = await startOriginServer(ladderFiles('/dash', DASH_LADDER));
  stops.push(() => server.stop());
  return { signal, server };
}

interface Segment {
  url: string;
  sha: string;
  bytes: number;
}

/** The SHA-256 of the server's file for `url` (the ladder has a file per segment). */
function trueSha(url: string): string {
  const path = new URL(url).pathname.replace(/^\/dash\//, '');
  return sha256(new Uint8Array(readFileSync(join(DASH_LADDER, path))));
}

function shakaPageUrl(serverUrl: string, signal: string | null, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams({ manifest: `${serverUrl}/dash/manifest.ppspp.json`, mpd: `${serverUrl}/dash/manifest.mpd`, hidden: '1' });
  if (signal) q.set('signal', signal);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return `${web()}/e2e/shaka.html?${q}`;
}

async function openShakaPage(browser: Browser, serverUrl: string, signal: string | null, label: string, extra: Record<string, string> = {}): Promise<Page> {
  return openWatchedPage(browser, report, shakaPageUrl(serverUrl, signal, extra), label);
}

interface Seen {
  segments: Segment[];
  errors: string[];
  shakaErrors: string[];
  heights: (number | null)[];
  stallsMs: number[];
  stalledNowMs: number;
  stats: { bytesFromHttp: number; bytesFromPeers: number; bytesFromSeeders: number; segmentsLoaded: number } | null;
}

function seen(page: Evaluable): Promise<Seen> {
  return page.evaluate(() => {
    const t = (window as unknown as {
      __t: {
        segments: Segment[]; errors: string[]; shakaErrors: string[]; heights: (number | null)[]; stallsMs: number[];
        stalledNow?: () => number; presentation: { stats(): Record<string, number> } | null;
      };
    }).__t;
    const s = t.presentation?.stats();
    return {
      segments: t.segments,
      errors: t.errors,
      shakaErrors: t.shakaErrors,
      heights: t.heights,
      stallsMs: t.stallsMs,
      stalledNowMs: t.stalledNow?.() ?? 0,
      stats: s ? { bytesFromHttp: s.bytesFromHttp!, bytesFromPeers: s.bytesFromPeers!, bytesFromSeeders: s.bytesFromSeeders!, segmentsLoaded: s.segmentsLoaded! } : null,
    };
  });
}

/** Shaka's errors that stop playback (severity 2, CRITICAL). */
const critical = (s: Seen): string[] => s.shakaErrors.filter((e) => e.endsWith('severity=2'));

test('three pages play the DASH ladder through Shaka from a web server and each other; every segment is the server\'s', async ({ browser }) => {
  test.setTimeout(150_000);
  const { signal, server } = await signalAndLadder();
  const pages: Page[] = [];
  pages.push(await openShakaPage(browser, server.url, signal.url, 'page 0'));
  await playedPast(pages[0]!, 4);
  for (const i of [1, 2]) pages.push(await openShakaPage(browser, server.url, signal.url, `page ${i}`));
  for (const page of pages) await playedPast(page, 12);
  const all = await Promise.all(pages.map(seen));
  console.log(JSON.stringify(all.map((s) => ({ ...s.stats, heights: [...new Set(s.heights)] }))));
  for (const [i, s] of all.entries()) {
    expect(s.errors, `page ${i}'s errors`).toEqual([]);
    expect(critical(s), `page ${i}'s critical Shaka errors`).toEqual([]);
    expect(s.segments.length, `page ${i} loaded segments`).toBeGreaterThan(4);
    for (const seg of s.segments) expect(seg.sha, `page ${i}'s ${seg.url}`).toBe(trueSha(seg.url));
    expect(s.stats!.segmentsLoaded, `page ${i}'s segments came through the presentation`).toBeGreaterThanOrEqual(s.segments.length);
  }
  // More than half of the later pages' bytes came from peers, and each took some (pages
  // whose ABR settles on a rendition nobody else plays take it from HTTP, as in the field).
  const later = all.slice(1).map((s) => s.stats!);
  const sum = (k: 'bytesFromPeers' | 'bytesFromHttp'): number => later.reduce((a, s) => a + s[k], 0);
  expect(sum('bytesFromPeers'), `the later pages took more than half their bytes from peers: ${JSON.stringify(later)}`).toBeGreaterThan(sum('bytesFromHttp'));
  for (const [i, s] of later.entries()) expect(s.bytesFromPeers, `page ${i + 1} took bytes from peers`).toBeGreaterThan(0);
});

/** The heights of the video segments Shaka received, in order (streams 0–2 are 240p, 480p, 720p). */
function segmentHeights(s: Seen): number[] {
  return s.segments.filter((seg) => /chunk-stream[012]-/.test(seg.url)).map((seg) => [240, 480, 720][Number(/chunk-stream(\d)-/.exec(seg.url)![1])]!);
}

/** The height of the newest video segment Shaka received (what its ABR chose last). */
async function loadingHeight(page: Page): Promise<number> {
  return segmentHeights(await seen(page)).at(-1) ?? -1;
}

// Stalls timed while the line is throttled: the machine to itself.
test('a throttled line: Shaka switches down, and back up once it clears, without a stall over 1 s', ALONE, async ({ browser }) => {
  test.setTimeout(180_000);
  const throttle: Throttle = { bytesPerSecond: 0 };
  const server = await startOriginServer(ladderFiles('/dash', DASH_LADDER), { throttle });
  stops.push(() => server.stop());
  // HTTP only, so that every byte crosses the line; 8 s of buffer, so that Shaka keeps
  // choosing as it plays.
  const page = await openShakaPage(browser, server.url, null, 'page', { buffer: '8' });
  await expect.poll(() => loadingHeight(page), { timeout: 40_000, message: 'unthrottled, Shaka climbs to 720p' }).toBe(720);
  // 0.72 Mbit/s: 240p (0.44 Mbit/s) fits, 480p (1.1 Mbit/s) does not.
  throttle.bytesPerSecond = 90_000;
  await expect.poll(() => loadingHeight(page), { timeout: 40_000, message: 'throttled, Shaka switches down to 240p' }).toBe(240);
  throttle.bytesPerSecond = 0;
  await expect.poll(() => loadingHeight(page), { timeout: 40_000, message: 'the line clears, Shaka climbs back to 720p' }).toBe(720);
  const s = await seen(page);
  console.log(`heights: ${s.heights.join(' ')}; stalls (ms): ${s.stallsMs.join(' ') || 'none'}`);
  expect(s.errors).toEqual([]);
  expect(critical(s)).toEqual([]);
  expect(s.stallsMs.filter((ms) => ms > 1000), 'stalls over 1 s').toEqual([]);
  expect(s.stalledNowMs, 'not stalled now').toBeLessThan(1000);
  for (const seg of s.segments) expect(seg.sha, seg.url).toBe(trueSha(seg.url));
});

/** shaka.html's `height`: Shaka on the 480p video only. */
const PINNED = { height: '480' };

test('Firefox plays the DASH ladder through Shaka next to a Chromium page, taking most of its bytes from it', async ({ browser }) => {
  test.setTimeout(150_000);
  const { signal, server } = await signalAndLadder();
  // Both on one rendition (PINNED): a page takes from peers what they hold of the rendition
  // it plays, and which renditions two ABRs choose on a busy machine is theirs.
  const chromium = await openShakaPage(browser, server.url, signal.url, 'chromium', PINNED);
  await playedPast(chromium, 6);
  const firefox: FirefoxPage = await openFirefoxPage(shakaPageUrl(server.url, signal.url, PINNED));
  stops.push(() => firefox.close());
  await playedPast(firefox, 12);
  const s = await seen(firefox);
  console.log(`Firefox: ${JSON.stringify(s.stats)}, heights ${[...new Set(s.heights)].join(' ')}`);
  expect(s.errors).toEqual([]);
  expect(critical(s)).toEqual([]);
  expect(s.segments.length).toBeGreaterThan(4);
  expect(new Set(segmentHeights(s)), 'the rendition pinned').toEqual(new Set([480]));
  for (const seg of s.segments) expect(seg.sha, seg.url).toBe(trueSha(seg.url));
  expect(s.stats!.bytesFromPeers, `Firefox took more than half its bytes from peers: ${JSON.stringify(s.stats)}`).toBeGreaterThan(s.stats!.bytesFromHttp);
});
