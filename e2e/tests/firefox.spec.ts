/**
 * Firefox ESR pages (Debian's, through puppeteer-core), alone and in one swarm with
 * Chromium pages: they play, seek, and upload to and download from each other.
 */
import { expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { type FirefoxPage, longestStall, openFirefoxPage, watchStalls } from './firefox.js';
import { serveOnOrigin } from './origin.js';
import {
  type Swarm, VIDEO, VIDEO_LONG_GOP, VIDEO_MP4, VIDEO_MP4_SECONDS, VIDEO_ORIGIN, VIDEO_SECONDS, VIDEO_SHA256, completeHash,
  expectLoopback, expectPlayedPast, makeLongGopVideo, makeOriginVideos, openPages, pageStats, sha256, startSwarm, startWeb,
} from './swarm.js';

let web: { url: string; stop(): Promise<void> };
let swarm: Swarm | null = null;
let firefoxes: FirefoxPage[] = [];

test.beforeAll(async () => {
  web = await startWeb();
});
test.afterAll(async () => {
  await web.stop();
});
test.afterEach(async ({ browser }) => {
  for (const page of firefoxes) await page.close();
  firefoxes = [];
  for (const context of browser.contexts()) await context.close();
  await swarm?.stop();
  swarm = null;
});

async function firefox(uri: string, query = ''): Promise<FirefoxPage> {
  const page = await openFirefoxPage(`${web.url}/e2e/player.html?uri=${encodeURIComponent(uri)}${query}`);
  firefoxes.push(page);
  return page;
}

for (const [name, file, seconds] of [
  ['WebM (VP9 + Opus)', VIDEO, VIDEO_SECONDS],
  ['fragmented MP4 (H.264 + AAC)', VIDEO_MP4, VIDEO_MP4_SECONDS],
] as const) {
  test(`a Firefox page plays ${name} past 10 s without a stall over 1 s`, async () => {
    swarm = await startSwarm({ file, uploadLimit: 400_000 });
    const page = await firefox(swarm.uri);
    await watchStalls(page);
    await expectPlayedPast(page, Math.min(10.5, seconds - 1), 60_000);
    expect(await longestStall(page), 'longest stall (s)').toBeLessThan(1);
    expect(await completeHash(page)).toBe(sha256(readFileSync(file)));
    await expectLoopback(page);
  });
}

test('a Firefox page plays from an HTTP origin of another origin (CORS) alone, every byte verified; reloaded, it reads back what it saved in OPFS', async () => {
  makeOriginVideos();
  const video = new Uint8Array(readFileSync(VIDEO_ORIGIN));
  const { server, uri } = await serveOnOrigin(VIDEO_ORIGIN, video);
  try {
    const page = await firefox(await uri(), '&storage=opfs');
    await watchStalls(page);
    await expectPlayedPast(page, 5, 60_000);
    expect(await longestStall(page), 'longest stall (s)').toBeLessThan(1);
    expect(await completeHash(page)).toBe(sha256(video));
    expect(server.bytesSent('/v.webm')).toBe(video.length);
    const stats = (): Promise<Record<string, number>> =>
      page.evaluate(() => (window as unknown as { __t: { player: { stats(): Record<string, number> } } }).__t.player.stats());
    await expect.poll(async () => (await stats()).chunksSaved, { timeout: 20_000 }).toBeGreaterThan(0);
    // The last batch is written a moment after its chunks came.
    await new Promise((r) => setTimeout(r, 1500));
    await page.reload();
    await expectPlayedPast(page, 3, 60_000);
    expect(await completeHash(page)).toBe(sha256(video));
    const again = server.bytesSent('/v.webm') - video.length;
    const after = await stats();
    console.log(`Firefox after the reload: ${after.bytesFromStorage} B read back, ${again} B fetched again`);
    expect(again, 'fetched again').toBeLessThan(video.length / 2);
    expect(after.bytesFromStorage).toBeGreaterThan(video.length / 2);
    expect(await page.evaluate(() => (window as unknown as { __t: { storageFallbacks: string[] } }).__t.storageFallbacks)).toEqual([]);
  } finally {
    await server.stop();
  }
});

test('Firefox plays Clusters of 1.3 MB as their blocks arrive, without a stall over 1 s', async () => {
  makeLongGopVideo();
  swarm = await startSwarm({ file: VIDEO_LONG_GOP, uploadLimit: 1_000_000 });
  const page = await firefox(swarm.uri);
  await watchStalls(page);
  await expectPlayedPast(page, 12, 60_000);
  expect(await longestStall(page), 'longest stall (s)').toBeLessThan(1);
  // The first frame came with a small part of the first Cluster, not with all of it.
  const held = await page.evaluate(() => (window as unknown as { __t: { heldAtFirstFrame: number } }).__t.heldAtFirstFrame);
  expect(held, 'share of the file held at the first frame').toBeLessThan(0.15);
});

test('a seek to 80 % in Firefox plays from there within 5 s', async () => {
  swarm = await startSwarm({ uploadLimit: 400_000 });
  const page = await firefox(swarm.uri);
  await expectPlayedPast(page, 1);
  const target = VIDEO_SECONDS * 0.8;
  const started = Date.now();
  await page.evaluate((t) => {
    document.querySelector('video')!.currentTime = t;
  }, target);
  await expectPlayedPast(page, target + 0.5, 5000);
  expect(Date.now() - started).toBeLessThan(5000);
  expect(await page.evaluate(() => document.querySelector('video')!.error?.message ?? null)).toBeNull();
});

test('Firefox and Chromium pages in one swarm feed each other', async ({ browser }) => {
  swarm = await startSwarm({ uploadLimit: 600_000 });
  const expected = VIDEO_SHA256();
  // Two Firefox pages get the whole video; then the seeder goes: Chromium pages can only
  // get it from them.
  const ff = [await firefox(swarm.uri), await firefox(swarm.uri)];
  for (const page of ff) expect(await completeHash(page)).toBe(expected);
  await swarm.killSeeder();
  const chromium = await openPages(browser, web.url, swarm.uri, 2);
  for (const page of chromium) {
    await expectPlayedPast(page, 3);
    expect(await completeHash(page)).toBe(expected);
    expect((await pageStats(page)).bytesFromPeers).toBeGreaterThan(0);
  }
  // Then the Firefox pages go, and a new Firefox page gets it from the Chromium pages.
  for (const page of ff) await page.close();
  firefoxes = [];
  const late = await firefox(swarm.uri);
  await expectPlayedPast(late, 3);
  expect(await completeHash(late)).toBe(expected);
  expect((await pageStats(late)).bytesFromPeers).toBeGreaterThan(0);
  for (const page of [...chromium, late]) await expectLoopback(page);
});
