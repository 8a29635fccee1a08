/**
 * Live DASH over PPSPP: ffmpeg's test source through ffmpeg's DASH muxer (fMP4, 2 s
 * segments, SegmentTemplate with a SegmentTimeline; 360p and 180p video and AAC audio),
 * `ppspp dash live` beside it signing only, a static web server holding the packager's
 * folder, and Shaka Player pages (shaka.html) playing it through the presentation's
 * scheme plugin, from the web server and from each other.
 */
import { type Page, expect, test } from '@playwright/test';
import { SHAKA_MOUNT } from './dash-ladder.js';
import { FailureReport } from './diagnose.js';
import { livePageUrl, packagerSha, playingLive, startLiveRun } from './live-packager.js';
import { openWatchedPage } from './player-pages.js';
import { webForSpec } from './spec-setup.js';
import type { Evaluable } from './swarm.js';

const report = new FailureReport();
const { web, stops } = webForSpec(() => {}, [SHAKA_MOUNT]);

interface Seen {
  segments: { url: string; sha: string }[];
  errors: string[];
  shakaErrors: string[];
  played: number;
  stats: { bytesFromHttp: number; bytesFromPeers: number; bytesFromSeeders: number; segmentsLoaded: number } | null;
  error: string | null;
}

function seen(page: Evaluable): Promise<Seen | null> {
  return page.evaluate(() => {
    const t = (window as unknown as {
      __t?: {
        segments: { url: string; sha: string }[];
        errors: string[];
        shakaErrors: string[];
        firstFrameMs: number | null;
        error: string | null;
        presentation: { stats(): Record<string, number> } | null;
      };
    }).__t;
    if (!t) return null;
    const s = t.presentation?.stats();
    const v = document.querySelector('video')!;
    return {
      segments: t.segments,
      errors: t.errors,
      shakaErrors: t.shakaErrors,
      played: t.firstFrameMs === null ? 0 : v.played.length > 0 ? v.played.end(v.played.length - 1) - v.played.start(0) : 0,
      stats: s ? { bytesFromHttp: s.bytesFromHttp!, bytesFromPeers: s.bytesFromPeers!, bytesFromSeeders: s.bytesFromSeeders!, segmentsLoaded: s.segmentsLoaded! } : null,
      error: t.error,
    };
  });
}

function playing(page: Evaluable, seconds: number): Promise<void> {
  return playingLive(page, seconds, seen);
}

test('three Shaka pages play a live DASH stream from the web server and each other, every segment the packager\'s', async ({ browser }) => {
  test.setTimeout(150_000);
  const run = await startLiveRun('dash-live-swarm', 70, false, { keep: (n, p) => report.keep(n, p), stops }, 'dash');
  const open = (label: string): Promise<Page> => openWatchedPage(browser, report, livePageUrl(web(), run, {}, 'shaka'), label);
  const pages = [await open('page 0')];
  await playing(pages[0]!, 4);
  pages.push(await open('page 1'), await open('page 2'));
  for (const page of pages) await playing(page, 14);
  const all = (await Promise.all(pages.map(seen))).map((s) => s!);
  console.log(JSON.stringify(all.map((s) => ({ ...s.stats, segments: s.segments.length }))));
  for (const [i, s] of all.entries()) {
    expect(s.error, `page ${i}'s script`).toBeNull();
    expect(s.errors, `page ${i}'s errors`).toEqual([]);
    expect(s.shakaErrors, `page ${i}'s Shaka errors`).toEqual([]);
    expect(s.segments.length, `page ${i} loaded segments`).toBeGreaterThan(4);
    for (const seg of s.segments) expect(seg.sha, `page ${i}'s ${seg.url}`).toBe(packagerSha(run, seg.url));
    expect(s.stats!.segmentsLoaded, `page ${i}'s segments came through the presentation`).toBeGreaterThanOrEqual(s.segments.length);
  }
  const later = all.slice(1).map((s) => s.stats!);
  const peers = later.reduce((a, s) => a + s.bytesFromPeers, 0);
  const total = later.reduce((a, s) => a + s.bytesFromPeers + s.bytesFromHttp + s.bytesFromSeeders, 0);
  expect(peers / total, `the later pages' share of bytes from peers: ${JSON.stringify(later)}`).toBeGreaterThan(1 / 3);
});
