/**
 * WebKitGTK (MediaSource and ManagedMediaSource, no WebRTC): a page whose URI names a
 * signaling server and a web server plays the 720p H.264 video from HTTP through the
 * safety net, with MediaSource and with ManagedMediaSource (the one an iPhone has); an
 * hls.js page plays a live HLS presentation from the web server, every segment checked.
 */
import { expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { HLS_MOUNT } from './hls-ladder.js';
import { livePageUrl, packagerSha, startLiveRun } from './live-packager.js';
import { serveOnOrigin } from './origin.js';
import { VIDEO_HD_MP4, makeHdVideos, startSignal, startWebWith } from './swarm.js';
import { type WebKit, startWebKit, webkitMissing } from './webkit.js';

let web: { url: string; stop(): Promise<void> };
const stops: (() => Promise<void>)[] = [];

test.beforeAll(async () => {
  test.setTimeout(120_000);
  makeHdVideos();
  web = await startWebWith([HLS_MOUNT]);
});
test.afterAll(async () => {
  await web.stop();
});
test.afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

interface Seen {
  error: string | null;
  errors: string[];
  noP2p: [number, string, string][];
  currentTime: number;
  firstFrameMs: number | null;
  kind: string | null;
  fromHttp: number;
}

const SEEN = `
  const t = window.__t;
  if (!t) return null;
  const v = document.querySelector('video');
  return {
    error: t.error, errors: t.errors, noP2p: t.noP2p, currentTime: v.currentTime, firstFrameMs: t.firstFrameMs,
    kind: t.player ? t.player.mediaSourceKind : null,
    fromHttp: t.player ? t.player.stats().bytesFromHttp : 0,
  };
`;

for (const mse of ['auto', 'managed'] as const) {
  test(`WebKitGTK without WebRTC plays the 720p video from HTTP (mediaSource: '${mse}')`, async () => {
    test.setTimeout(120_000);
    const missing = webkitMissing();
    if (missing) throw new Error(missing);
    const signal = await startSignal();
    stops.push(() => signal.stop());
    const served = await serveOnOrigin(VIDEO_HD_MP4, new Uint8Array(readFileSync(VIDEO_HD_MP4)));
    stops.push(() => served.server.stop());
    const uri = await served.uri(signal.url);
    const webkit: WebKit = await startWebKit();
    stops.push(() => webkit.close());
    const query = mse === 'managed' ? '&mse=managed' : '';
    await webkit.goto(`${web.url}/e2e/player.html?uri=${encodeURIComponent(uri)}${query}`);
    let seen: Seen | null = null;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      seen = await webkit.evaluate<Seen | null>(SEEN);
      if (seen && (seen.error || seen.currentTime > 6)) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const message = `${JSON.stringify(seen)}; ${webkit.logs()}`;
    expect(seen, message).not.toBeNull();
    expect(seen!.error, message).toBeNull();
    expect(seen!.errors, message).toEqual([]);
    expect(seen!.currentTime, message).toBeGreaterThan(6);
    expect(seen!.noP2p.map((e) => e[1]), message).toEqual(['webrtc-unsupported']);
    expect(seen!.fromHttp, message).toBeGreaterThan(0);
    expect(seen!.kind, message).toBe(mse === 'managed' ? 'managed' : 'standard');
  });
}

test('WebKitGTK without WebRTC plays a live HLS stream through hls.js from the web server, every segment checked', async () => {
  test.setTimeout(120_000);
  const missing = webkitMissing();
  if (missing) throw new Error(missing);
  const run = await startLiveRun('webkit-live', 50, false, { stops });
  const webkit: WebKit = await startWebKit();
  stops.push(() => webkit.close());
  await webkit.goto(livePageUrl(web.url, run));
  type Live = { error: string | null; errors: string[]; played: number; frags: { url: string; sha: string }[]; fromHttp: number; segments: number } | null;
  const script = `
    const t = window.__t;
    if (!t) return null;
    const s = t.presentation ? t.presentation.stats() : null;
    return { error: t.error, errors: t.errors, played: (t.latencyMs || []).length / 2, frags: t.frags,
      fromHttp: s ? s.bytesFromHttp : 0, segments: s ? s.segmentsLoaded : 0 };
  `;
  let seen: Live = null;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    seen = await webkit.evaluate<Live>(script);
    if (seen && (seen.error || seen.played >= 8)) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const message = `${JSON.stringify(seen && { ...seen, frags: seen.frags.length })}; ${webkit.logs()}`;
  expect(seen, message).not.toBeNull();
  expect(seen!.error, message).toBeNull();
  expect(seen!.errors, message).toEqual([]);
  expect(seen!.played, message).toBeGreaterThanOrEqual(8);
  expect(seen!.fromHttp, message).toBeGreaterThan(0);
  expect(seen!.segments, message).toBeGreaterThanOrEqual(seen!.frags.length);
  for (const f of seen!.frags) expect(f.sha, f.url).toBe(packagerSha(run, f.url));
});
