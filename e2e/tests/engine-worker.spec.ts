/**
 * The engine in a dedicated Worker (`engineThread: 'worker'`): pages play and feed each
 * other with their data channels transferred to the engine's Worker, also a page whose
 * main thread is kept busy, as a site's own scripts keep it.
 */
import { expect, test } from '@playwright/test';
import { type FirefoxPage, openFirefoxPage } from './firefox.js';
import { type Swarm, VIDEO_SHA256, completeHash, expectLoopback, expectPlayedPast, openPages, pageStats, startSwarm, startWeb } from './swarm.js';
import { ALONE } from './spec-setup.js';

let web: { url: string; stop(): Promise<void> };
let swarm: Swarm | null = null;
let firefoxes: FirefoxPage[] = [];

/** Where each page's engine runs, and how many of its channels went to its Worker. */
type Placement = { thread: string; channels: number; transferred: number };
function placement(page: { evaluate<R>(f: () => R): Promise<R> }): Promise<Placement> {
  return page.evaluate(() => {
    const stats = (window as unknown as { __t: { player: { stats(): { engineThread: string; channels: { transferred: boolean }[] } } } }).__t.player.stats();
    return { thread: stats.engineThread, channels: stats.channels.length, transferred: stats.channels.filter((c) => c.transferred).length };
  });
}

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

test('with the engine in a Worker, three pages play the exact file and feed each other, one with its main thread busy 50 ms in 100', ALONE, async ({ browser }) => {
  // The seeder's upload is limited: the pages must serve each other.
  swarm = await startSwarm({ uploadLimit: 400_000 });
  // The busy page first, so that it holds chunks when the others come: opened last on a
  // slow machine, it found them complete and had no one to serve.
  const [busy] = await openPages(browser, web.url, swarm.uri, 1, '&engine=worker&busy=50');
  const idle = await openPages(browser, web.url, swarm.uri, 2, '&engine=worker');
  const pages = [busy!, ...idle];
  for (const page of pages) await expectPlayedPast(page, 5);
  for (const page of pages) {
    const s = await placement(page);
    expect(s.thread, 'the engine runs in a Worker').toBe('worker');
    // Chromium transfers every data channel, opened or received.
    expect(s.transferred, 'channels transferred to the Worker').toBe(s.channels);
    expect(s.channels).toBeGreaterThan(0);
  }
  const expected = VIDEO_SHA256();
  for (const page of pages) expect(await completeHash(page)).toBe(expected);
  for (const page of pages) await expectLoopback(page);
  const stats = await Promise.all(pages.map(pageStats));
  const downloaded = stats.reduce((a, s) => a + s.bytesDownloaded, 0);
  expect(swarm.seederStats().bytes_up, 'the seeder uploaded less than the pages downloaded').toBeLessThan(downloaded);
  expect(stats[0]!.bytesUploaded, 'the busy page served its peers').toBeGreaterThan(0);
  expect(stats.every((s) => s.chunksRejected === 0)).toBe(true);
});

test('a Firefox page with the engine in a Worker plays beside Chromium pages, the channels it made and those made to it transferred to its Worker', ALONE, async ({ browser }) => {
  swarm = await startSwarm({ uploadLimit: 400_000 });
  // First in the room: Firefox makes the channel to the seeder; the pages after it make theirs to it.
  const page = await openFirefoxPage(`${web.url}/e2e/player.html?uri=${encodeURIComponent(swarm.uri)}&engine=worker`);
  firefoxes.push(page);
  await expectPlayedPast(page, 1);
  const chromium = await openPages(browser, web.url, swarm.uri, 2, '&engine=worker');
  for (const p of chromium) await expectPlayedPast(p, 5);
  await expectPlayedPast(page, 5);
  const s = await placement(page);
  expect(s.thread).toBe('worker');
  // To the seeder (Firefox made it) and from the two pages (they made theirs): each
  // transferred before it was used, as Firefox allows.
  expect(s.channels).toBe(3);
  expect(s.transferred, 'channels transferred to the Worker').toBe(3);
  expect(await completeHash(page)).toBe(VIDEO_SHA256());
  for (const p of chromium) expect(await completeHash(p)).toBe(VIDEO_SHA256());
  const stats = await Promise.all([page, ...chromium].map(pageStats));
  expect(stats.every((x) => x.chunksRejected === 0)).toBe(true);
  expect(stats[0]!.bytesUploaded, 'the Firefox page served the Chromium pages').toBeGreaterThan(0);
});
