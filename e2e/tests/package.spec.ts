/**
 * The package as users get it: `npm pack` in web/, installed into a fresh Vite app,
 * bundled by Vite (tests/packed-app.ts), plays from the swarm.
 */
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { DASH_LADDER, makeDashLadder } from './dash-ladder.js';
import { LADDER, ladderFiles, makeLadder } from './hls-ladder.js';
import { livePageUrl, startLiveRun } from './live-packager.js';
import { startOriginServer } from './origin.js';
import { APP, ensurePackedApp } from './packed-app.js';
import { type Swarm, expectPlayedPast, startSwarm } from './swarm.js';
import { startWebWith } from './swarm.js';

let swarm: Swarm | null = null;

test.afterEach(async () => {
  await swarm?.stop();
});

test.beforeAll(() => {
  test.setTimeout(240_000);
  ensurePackedApp();
  makeLadder();
  makeDashLadder();
});

test('the packed npm package plays in a Vite-built page, with the engine on the main thread and in its Worker', async ({ browser }) => {
  test.setTimeout(180_000);
  const web = await startWebWith([`/app/=${join(APP, 'dist')}`]);
  try {
    swarm = await startSwarm();
    const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
    const page = await context.newPage();
    await page.goto(`${web.url}/app/index.html?engine=main&uri=${encodeURIComponent(swarm.uri)}`);
    await expectPlayedPast(page, 2);
    // The engine's Worker (the default), bundled by Vite from `new URL('./engine-worker.js', import.meta.url)`.
    const worker = await context.newPage();
    await worker.goto(`${web.url}/app/index.html?uri=${encodeURIComponent(swarm.uri)}`);
    await expectPlayedPast(worker, 2);
    const thread = await worker.evaluate(() => (window as unknown as { __t: { player: { stats(): { engineThread: string } } } }).__t.player.stats().engineThread);
    expect(thread, 'the engine runs in the Worker Vite bundled').toBe('worker');
  } finally {
    await web.stop();
  }
});

test('the packed package\'s player integrations bundle with Vite: hls.js, Shaka Player and Video.js play the ladder', async ({ browser }) => {
  test.setTimeout(180_000);
  const web = await startWebWith([`/app/=${join(APP, 'dist')}`]);
  const files = new Map([...ladderFiles('/hls', LADDER), ...ladderFiles('/dash', DASH_LADDER)]);
  const server = await startOriginServer(files);
  try {
    for (const [player, manifest, src] of [
      ['hls', 'hls/master.ppspp.json', 'hls/master.m3u8'],
      ['shaka', 'dash/manifest.ppspp.json', 'dash/manifest.mpd'],
      ['videojs', 'hls/master.ppspp.json', 'hls/master.m3u8'],
    ] as const) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const q = new URLSearchParams({ player, manifest: `${server.url}/${manifest}`, src: `${server.url}/${src}` });
      await page.goto(`${web.url}/app/players.html?${q}`);
      await expect
        .poll(() => page.evaluate(() => {
          const t = (window as unknown as { __t?: { error: string | null; presentation: { stats(): { segmentsLoaded: number } } | null } }).__t;
          if (!t) return 'the page did not run';
          if (t.error) return `failed: ${t.error}`;
          const played = document.querySelector('video')!.currentTime;
          return played > 2 && (t.presentation?.stats().segmentsLoaded ?? 0) > 1 ? 'played' : `at ${played} s`;
        }), { timeout: 60_000, message: `${player} plays through the packed package` })
        .toBe('played');
      await context.close();
    }
  } finally {
    await server.stop();
    await web.stop();
  }
});

test('the packed package plays a live HLS stream with hls.js as web/README.md says, from the web server and each other', async ({ browser }) => {
  test.setTimeout(150_000);
  const web = await startWebWith([`/app/=${join(APP, 'dist')}`]);
  const stops: (() => Promise<void>)[] = [() => web.stop()];
  try {
    const run = await startLiveRun('package-live', 50, false, { stops });
    // The run's page parameters, for the app's page.
    const q = new URL(livePageUrl(web.url, run)).searchParams;
    const app = new URLSearchParams({ player: 'hls', manifest: q.get('manifest')!, src: q.get('master')!, signal: run.signal, streamKey: run.key });
    const pages = [];
    for (const label of ['first', 'second']) {
      const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
      const page = await context.newPage();
      await page.goto(`${web.url}/app/players.html?${app}`);
      pages.push(page);
      await expect
        .poll(() => page.evaluate(() => {
          const t = (window as unknown as { __t?: { error: string | null; presentation: { stats(): { segmentsLoaded: number } } | null } }).__t;
          if (!t) return 'the page did not run';
          if (t.error) return `failed: ${t.error}`;
          const v = document.querySelector('video')!;
          const played = v.played.length ? v.played.end(v.played.length - 1) - v.played.start(0) : 0;
          return played > 6 && (t.presentation?.stats().segmentsLoaded ?? 0) > 3 ? 'played' : `played ${played} s`;
        }), { timeout: 60_000, message: `the ${label} page plays the live stream through the packed package` })
        .toBe('played');
    }
    // Both pages play at the edge, so either may fetch a new segment from the web server
    // first and serve it to the other: bytes went between them, one way or the other.
    const fromPeers = await Promise.all(
      pages.map((p) => p.evaluate(() => (window as unknown as { __t: { presentation: { stats(): { bytesFromPeers: number } } } }).__t.presentation.stats().bytesFromPeers)),
    );
    expect(fromPeers[0]! + fromPeers[1]!, `bytes the pages took from each other: ${fromPeers.join(', ')}`).toBeGreaterThan(0);
  } finally {
    for (const context of browser.contexts()) await context.close();
    for (const stop of stops.reverse()) await stop();
  }
});
