/**
 * WebKitGTK (MediaSource and ManagedMediaSource, no WebRTC): a page whose URI names a
 * signaling server and a web server plays the 720p H.264 video from HTTP through the
 * safety net, with MediaSource and with ManagedMediaSource (the one an iPhone has).
 */
import { expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { serveOnOrigin } from './origin.js';
import { VIDEO_HD_MP4, makeHdVideos, startSignal, startWeb } from './swarm.js';
import { type WebKit, startWebKit, webkitMissing } from './webkit.js';

let web: { url: string; stop(): Promise<void> };
const stops: (() => Promise<void>)[] = [];

test.beforeAll(async () => {
  test.setTimeout(120_000);
  makeHdVideos();
  web = await startWeb();
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
