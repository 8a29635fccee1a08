/**
 * Swarm tests: one native seeder (`ppspp seed`), the signaling server and headless
 * Chromium pages playing the test video through `Player.attach`, all on loopback.
 */
import { type Browser, type Page, expect, test } from '@playwright/test';
import { readFileSync, statSync } from 'node:fs';
import {
  type Swarm, VIDEO, VIDEO_LONG_GOP, VIDEO_MP4, VIDEO_MP4_SECONDS, VIDEO_SECONDS, VIDEO_SHA256, completeHash, expectLoopback,
  expectPlayedPast, makeLongGopVideo, openPages, pageStats, sha256, startSwarm, startWeb,
} from './swarm.js';
import { ALONE } from './spec-setup.js';

let web: { url: string; stop(): Promise<void> };
let swarm: Swarm | null = null;
const LENGTH = (): number => statSync(VIDEO).size;

test.beforeAll(async () => {
  web = await startWeb();
});
test.afterAll(async () => {
  await web.stop();
});
test.afterEach(async ({ browser }) => {
  for (const context of browser.contexts()) await context.close();
  await swarm?.stop();
  swarm = null;
});

test('six pages play, receive the exact file and feed each other', ALONE, async ({ browser }) => {
  // The seeder's upload is limited (an origin with little bandwidth): the pages must help.
  swarm = await startSwarm({ uploadLimit: 400_000 });
  const pages = await openPages(browser, web.url, swarm.uri, 6);
  for (const page of pages) await expectPlayedPast(page, 5);
  const expected = VIDEO_SHA256();
  for (const page of pages) expect(await completeHash(page)).toBe(expected);
  for (const page of pages) await expectLoopback(page);
  const downloaded = (await Promise.all(pages.map(pageStats))).reduce((a, s) => a + s.bytesDownloaded, 0);
  const seeder = swarm.seederStats();
  expect(downloaded).toBeGreaterThanOrEqual(6 * LENGTH());
  expect(seeder.bytes_up, 'the seeder uploaded less than the pages downloaded').toBeLessThan(downloaded);
});

test('a page joining after the others finished gets most of its data from pages', ALONE, async ({ browser }) => {
  swarm = await startSwarm({ uploadLimit: 400_000 });
  const early = await openPages(browser, web.url, swarm.uri, 3);
  for (const page of early) await completeHash(page);
  // The seeder's figure comes once a second: wait until it covers what each page verified
  // from it (it uploaded at least that), before and after the late page.
  const seederCovers = async (pages: Page[]): Promise<number> => {
    const fromSeeder = (await Promise.all(pages.map(pageStats))).reduce((a, s) => a + s.bytesFromSeeders, 0);
    let up = 0;
    await expect
      .poll(() => (up = swarm!.seederStats().bytes_up), { timeout: 10_000, message: "the seeder's figure covers the pages' downloads" })
      .toBeGreaterThanOrEqual(fromSeeder);
    return up;
  };
  const before = await seederCovers(early);
  const [late] = await openPages(browser, web.url, swarm.uri, 1);
  await expectPlayedPast(late!, 3);
  expect(await completeHash(late!)).toBe(VIDEO_SHA256());
  const fromSeeder = (await seederCovers([...early, late!])) - before;
  const stats = await pageStats(late!);
  expect(fromSeeder, 'seeder bytes to the late page').toBeLessThan(LENGTH() / 2);
  expect(stats.bytesFromPeers).toBeGreaterThan(stats.bytesFromSeeders);
});

test('a seek to 80 % plays from there within 5 s', ALONE, async ({ browser }) => {
  swarm = await startSwarm({ uploadLimit: 400_000 });
  const [page] = await openPages(browser, web.url, swarm.uri, 1);
  await expectPlayedPast(page!, 1);
  const target = VIDEO_SECONDS * 0.8;
  const started = Date.now();
  await page!.evaluate((t) => {
    document.querySelector('video')!.currentTime = t;
  }, target);
  await expectPlayedPast(page!, target + 0.5, 5000);
  expect(Date.now() - started).toBeLessThan(5000);
  const error = await page!.evaluate(() => document.querySelector('video')!.error?.message ?? null);
  expect(error).toBeNull();
});

test('a fragmented MP4 (H.264 + AAC) plays and seeks', async ({ browser }) => {
  swarm = await startSwarm({ file: VIDEO_MP4, uploadLimit: 400_000 });
  const [page] = await openPages(browser, web.url, swarm.uri, 1);
  await expectPlayedPast(page!, 2);
  const target = VIDEO_MP4_SECONDS * 0.8;
  await page!.evaluate((t) => {
    document.querySelector('video')!.currentTime = t;
  }, target);
  await expectPlayedPast(page!, target + 0.5, 5000);
  expect(await completeHash(page!)).toBe(sha256(readFileSync(VIDEO_MP4)));
});

test('honest pages reject a poisoning page, append nothing corrupt and finish', async ({ browser }) => {
  swarm = await startSwarm({ uploadLimit: 300_000 });
  // The poisoner (test-only build that corrupts every chunk it serves) gets everything first.
  const [poisoner] = await openPages(browser, web.url, swarm.uri, 1, '&wasm=/wasm-poison/ppspp_wasm_bg.wasm');
  await completeHash(poisoner!);
  const honest = await openPages(browser, web.url, swarm.uri, 3);
  const expected = VIDEO_SHA256();
  for (const page of honest) {
    await expectPlayedPast(page, 3);
    expect(await completeHash(page)).toBe(expected);
  }
  const rejected = await Promise.all(honest.map((p) => p.evaluate(() => (window as unknown as { __t: { rejected: unknown[] } }).__t.rejected.length)));
  expect(rejected.reduce((a, b) => a + b, 0), 'chunks rejected by honest pages').toBeGreaterThan(0);
  for (const page of honest) {
    const error = await page.evaluate(() => document.querySelector('video')!.error?.message ?? null);
    expect(error).toBeNull();
  }
});

test('pages complete after the seeder is killed once they hold everything together', ALONE, async ({ browser }) => {
  swarm = await startSwarm({ uploadLimit: 600_000 });
  // Slow pages, so that together they hold everything well before each holds everything.
  const pages = await openPages(browser, web.url, swarm.uri, 4, '&download=150000');
  const chunks = Math.ceil(LENGTH() / 8192);
  // Wait until the union of what the pages hold is the whole content, then kill the seeder.
  await expect
    .poll(async () => {
      const all = await Promise.all(pages.map((p) => p.evaluate(() => (window as unknown as { __t: { player: { have(): [number, number][] } | null } }).__t.player?.have() ?? [])));
      const held = new Uint8Array(chunks);
      for (const ranges of all) for (const [a, b] of ranges) held.fill(1, a, b);
      return held.every((h) => h === 1);
    }, { timeout: 60_000, message: 'pages together hold every chunk' })
    .toBe(true);
  const incomplete = (await Promise.all(pages.map(pageStats))).filter((s) => s.chunksHave < s.chunkCount).length;
  expect(incomplete, 'pages still incomplete when the seeder dies').toBeGreaterThan(0);
  await swarm.killSeeder();
  const expected = VIDEO_SHA256();
  for (const page of pages) expect(await completeHash(page)).toBe(expected);
});

test('a starved page reports its stalls; a playhead stopped with media buffered is an error', ALONE, async ({ browser }) => {
  swarm = await startSwarm();
  // Fetching at two thirds of the video's rate, playback catches up with the download.
  const rate = Math.floor((LENGTH() / VIDEO_SECONDS) * 0.66);
  const [page] = await openPages(browser, web.url, swarm.uri, 1, `&download=${rate}&stuck=2000`);
  await expect
    .poll(() => page!.evaluate(() => (window as unknown as { __t: { stalls: { cause: string }[] } }).__t.stalls.map((s) => s.cause)), {
      timeout: 60_000,
      message: 'a stall event',
    })
    .toContain('no-data');
  const stats = await page!.evaluate(() => {
    const s = (window as unknown as { __t: { player: { stats(): { rebufferMs: number; stalls: number } } } }).__t.player.stats();
    return { rebufferMs: s.rebufferMs, stalls: s.stalls };
  });
  expect(stats.stalls).toBeGreaterThan(0);
  expect(stats.rebufferMs).toBeGreaterThan(250);
  expect(await page!.evaluate(() => (window as unknown as { __t: { errors: string[] } }).__t.errors)).toEqual([]);
  // A playhead that stands still with media buffered ahead (here: playback rate 0, which
  // leaves the video "playing") becomes a playback-stuck error after stuckTimeoutMs.
  await expect
    .poll(() => page!.evaluate(() => {
      const v = document.querySelector('video')!;
      let ahead = 0;
      for (let i = 0; i < v.buffered.length; i++) if (v.buffered.start(i) <= v.currentTime && v.currentTime < v.buffered.end(i)) ahead = v.buffered.end(i) - v.currentTime;
      return ahead;
    }), { timeout: 60_000, message: 'a second of media buffered ahead' })
    .toBeGreaterThan(1);
  await page!.evaluate(() => {
    document.querySelector('video')!.playbackRate = 0;
  });
  await expect
    .poll(() => page!.evaluate(() => (window as unknown as { __t: { errors: string[] } }).__t.errors.join('\n')), { timeout: 10_000 })
    .toMatch(/^playback-stuck: playback stopped at .* \(decode\)/);
});

test('Clusters larger than the read-ahead window play from their first blocks', async ({ browser }) => {
  makeLongGopVideo();
  swarm = await startSwarm({ file: VIDEO_LONG_GOP, uploadLimit: 1_000_000 });
  // 256 KiB of read-ahead against Clusters of about 2 MB.
  const [page] = await openPages(browser, web.url, swarm.uri, 1, `&readahead=${256 * 1024}`);
  await expectPlayedPast(page!, 12, 60_000);
  // Playback began with the first Cluster, not once the whole file was there.
  const held = await page!.evaluate(() => (window as unknown as { __t: { heldAtFirstFrame: number } }).__t.heldAtFirstFrame);
  expect(held, 'share of the file held at the first frame').toBeLessThan(0.75);
  expect(await completeHash(page!)).toBe(sha256(readFileSync(VIDEO_LONG_GOP)));
});

export type { Browser };
