/**
 * hls.js over PPSPP (web/src/integrations/hls.ts): pages play an HLS ladder (hls-ladder.ts)
 * through hls.js with the presentation's fragment loader, from a static web server holding
 * the ladder and `ppspp hls prepare`'s manifest and tree files, and from each other.
 */
import { type Browser, type Page, expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FailureReport } from './diagnose.js';
import { HLS_MOUNT, LADDER, TS_LADDER, VIDEOJS_MOUNT, ladderFiles, makeLadder, makeTsLadder } from './hls-ladder.js';
import { holdSignaling, openWatchedPage, playedPast } from './player-pages.js';
import { ALONE, webForSpec } from './spec-setup.js';
import { type OriginServer, type Throttle, startOriginServer } from './origin.js';
import { type FirefoxPage, openFirefoxPage } from './firefox.js';
import { BIN, type Evaluable, run, sha256, startSignal } from './swarm.js';

const report = new FailureReport();
const { web, stops } = webForSpec(() => {
  makeLadder();
  makeTsLadder();
}, [HLS_MOUNT, VIDEOJS_MOUNT]);

/** A signaling server and a web server holding the ladder, both stopped after the test. */
async function signalAndLadder(): Promise<{ signal: { url: string }; server: OriginServer }> {
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const server = await startOriginServer(ladderFiles('/hls'));
  stops.push(() => server.stop());
  return { signal, server };
}

interface Frag {
  url: string;
  range: [number, number] | null;
  level: number;
  sha: string;
  bytes: number;
}

/** The SHA-256 of what the server's file for `url` holds (in `range`, if any): the ladder's under /hls/, the MPEG-TS one's under /hlsts/. */
function trueSha(url: string, range: [number, number] | null): string {
  const path = new URL(url).pathname;
  const file = path.startsWith('/hlsts/') ? join(TS_LADDER, path.slice('/hlsts/'.length)) : join(LADDER, path.replace(/^\/hls\//, ''));
  const bytes = new Uint8Array(readFileSync(file));
  return sha256(range ? bytes.subarray(range[0], range[1]) : bytes);
}

function hlsPageUrl(serverUrl: string, signal: string | null, extra: Record<string, string> = {}, pageName = 'hls'): string {
  // `base`: where on the server the presentation is (the MPEG-TS ladder's is /hlsts).
  const { base = 'hls', ...rest } = extra;
  extra = rest;
  const q = new URLSearchParams({ manifest: `${serverUrl}/${base}/master.ppspp.json`, master: `${serverUrl}/${base}/master.m3u8`, hidden: '1' });
  if (signal) q.set('signal', signal);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return `${web()}/e2e/${pageName}.html?${q}`;
}

/** The pages' `level`: hls.js on the 480p rendition only, its ABR off. */
const PINNED = { level: '1' };

/** A page of `pageName` (hls.html: hls.js; videojs.html: Video.js over hls.js) in a browser context of its own. */
async function openHlsPage(browser: Browser, serverUrl: string, signal: string | null, label: string, extra: Record<string, string> = {}, pageName = 'hls'): Promise<Page> {
  return openWatchedPage(browser, report, hlsPageUrl(serverUrl, signal, extra, pageName), label);
}

function seen(page: Evaluable): Promise<{ frags: Frag[]; errors: string[]; hlsErrors: string[]; stats: Record<string, number> }> {
  return page.evaluate(() => {
    const t = (window as unknown as {
      __t: { frags: Frag[]; errors: string[]; hlsErrors: string[]; presentation: { stats(): Record<string, number> } };
    }).__t;
    const s = t.presentation.stats();
    return {
      frags: t.frags,
      errors: t.errors,
      hlsErrors: t.hlsErrors,
      stats: { bytesFromHttp: s.bytesFromHttp!, bytesFromPeers: s.bytesFromPeers!, bytesFromSeeders: s.bytesFromSeeders!, segmentsLoaded: s.segmentsLoaded! },
    };
  });
}

// Six pages' share of each other's bytes depends on their pace: the machine to itself.
test('six pages play an HLS ladder through hls.js from a web server and each other; every segment is the server\'s', ALONE, async ({ browser }) => {
  test.setTimeout(180_000);
  const { signal, server } = await signalAndLadder();
  const pages: Page[] = [];
  pages.push(await openHlsPage(browser, server.url, signal.url, 'page 0'));
  await playedPast(pages[0]!, 4);
  for (const i of [1, 2, 3, 4, 5]) pages.push(await openHlsPage(browser, server.url, signal.url, `page ${i}`));
  for (const page of pages) await playedPast(page, 12);
  const all = await Promise.all(pages.map(seen));
  console.log(JSON.stringify(all.map((s) => ({ ...s.stats, levels: [...new Set(s.frags.map((f) => f.level))] }))));
  for (const [i, s] of all.entries()) {
    expect(s.errors, `page ${i}'s errors`).toEqual([]);
    expect(s.hlsErrors.filter((e) => e.includes('fatal=true')), `page ${i}'s fatal hls.js errors`).toEqual([]);
    expect(s.frags.length, `page ${i} loaded fragments`).toBeGreaterThan(4);
    for (const f of s.frags) expect(f.sha, `page ${i}'s ${f.url}`).toBe(trueSha(f.url, f.range));
    expect(s.stats.segmentsLoaded, `page ${i}'s segments came through the presentation`).toBeGreaterThanOrEqual(s.frags.length);
  }
  // More than half of the later pages' bytes came from peers, and every one of them took
  // some: pages on two cores do not all settle on one rendition (a page whose ABR stays
  // at 240p finds few peers holding it, as it would in the field).
  const later = all.slice(1).map((s) => s.stats);
  const sum = (k: 'bytesFromPeers' | 'bytesFromHttp'): number => later.reduce((a, s) => a + s[k], 0);
  expect(sum('bytesFromPeers'), `the later pages took more than half their bytes from peers: ${JSON.stringify(later)}`).toBeGreaterThan(sum('bytesFromHttp'));
  for (const [i, s] of later.entries()) expect(s.bytesFromPeers, `page ${i + 1} took bytes from peers`).toBeGreaterThan(0);
});

test('a tampered segment on the web server is refused: hls.js gets the true bytes from a seeder', async ({ browser }) => {
  test.setTimeout(120_000);
  const signal = await startSignal();
  stops.push(() => signal.stop());
  // A slow seeder: the web server is asked too, for what playback waits for.
  const seeder = run(join(BIN, 'ppspp'), ['seed', join(LADDER, 'master.ppspp.json'), '--signal', signal.url, '--bind', '127.0.0.1:0', '--upload-limit', '200000']);
  report.keep('seeder', seeder);
  stops.push(() => seeder.stop());
  await seeder.waitLine((l) => l.includes('v2/index.m3u8'));
  // Every rendition's second segment has a byte changed in every KiB on the server: each
  // chunk of it the web server is asked for is a tampered one, whichever the seeder
  // delivered first.
  const files: Map<string, Uint8Array | string> = ladderFiles('/hls');
  for (const v of ['v0', 'v1', 'v2']) {
    const path = `/hls/${v}/seg001.m4s`;
    const bytes = new Uint8Array(readFileSync(files.get(path) as string));
    for (let at = 1000; at < bytes.length; at += 1024) bytes[at] = (bytes[at] ?? 0) ^ 0xff;
    files.set(path, bytes);
  }
  const server = await startOriginServer(files);
  stops.push(() => server.stop());
  const page = await openHlsPage(browser, server.url, signal.url, 'page');
  await playedPast(page, 6);
  const s = await seen(page);
  expect(s.errors).toEqual([]);
  const second = s.frags.filter((f) => f.url.endsWith('/seg001.m4s'));
  expect(second.length, 'the tampered segment was played').toBeGreaterThan(0);
  for (const f of s.frags) expect(f.sha, f.url).toBe(trueSha(f.url, f.range));
  const corrupt = await page.evaluate(() => (window as unknown as { __t: { originCorrupt: string[] } }).__t.originCorrupt);
  expect(corrupt.length, 'the page asked the web server for a tampered chunk and refused it').toBeGreaterThan(0);
  // Each refused chunk is named by its rendition (0–2) and chunk.
  for (const c of corrupt) expect(c).toMatch(/^[012]:\d+$/);
});

/** The rendition of the newest fragment hls.js loaded (what its ABR chose last). */
function loadingLevel(page: Page): Promise<number> {
  return page.evaluate(() => (window as unknown as { __t: { frags: { level: number }[] } }).__t.frags.at(-1)?.level ?? -1);
}

test('a throttled line: hls.js switches down, and back up once it clears, without a stall over 1 s', async ({ browser }) => {
  test.setTimeout(150_000);
  // The viewer's downlink, at the web server's end: all of this page's bytes cross it.
  const throttle: Throttle = { bytesPerSecond: 0 };
  const server = await startOriginServer(ladderFiles('/hls'), { throttle });
  stops.push(() => server.stop());
  // HTTP only, so that every byte crosses the line; 8 s of buffer, so that hls.js keeps
  // choosing as it plays.
  const page = await openHlsPage(browser, server.url, null, 'page', { maxBuffer: '8' });
  const levels = (): Promise<number[]> => page.evaluate(() => (window as unknown as { __t: { frags: { level: number }[] } }).__t.frags.map((f) => f.level));
  await expect.poll(() => loadingLevel(page), { timeout: 30_000, message: 'unthrottled, hls.js climbs to 720p' }).toBe(2);
  // 0.72 Mbit/s: 240p (0.44 Mbit/s) fits, 480p (1.1 Mbit/s) does not.
  throttle.bytesPerSecond = 90_000;
  await expect.poll(() => loadingLevel(page), { timeout: 30_000, message: `throttled, hls.js switches down to 240p; levels so far ${JSON.stringify(await levels())}` }).toBe(0);
  throttle.bytesPerSecond = 0;
  // hls.js weighs each sample by its load time: the throttled loads, seconds long, outweigh
  // a few unthrottled ones of tens of milliseconds, so climbing back takes some segments.
  await expect.poll(() => loadingLevel(page), { timeout: 45_000, message: 'the line clears, hls.js climbs back to 720p' }).toBe(2);
  const s = await page.evaluate(() => {
    const t = (window as unknown as { __t: { stallsMs: number[]; stalledNow(): number; errors: string[]; hlsErrors: string[]; frags: { level: number }[] } }).__t;
    return { stallsMs: t.stallsMs, now: t.stalledNow(), errors: t.errors, fatal: t.hlsErrors.filter((e) => e.includes('fatal=true')), levels: t.frags.map((f) => f.level) };
  });
  console.log(`levels loaded: ${s.levels.join(' ')}; stalls (ms): ${s.stallsMs.join(' ') || 'none'}`);
  expect(s.errors).toEqual([]);
  expect(s.fatal).toEqual([]);
  expect(s.stallsMs.filter((ms) => ms > 1000), 'stalls over 1 s').toEqual([]);
  expect(s.now, 'not stalled now').toBeLessThan(1000);
  for (const f of (await seen(page)).frags) expect(f.sha, f.url).toBe(trueSha(f.url, f.range));
});

test('Firefox plays the ladder through hls.js next to Chromium pages, taking most of its bytes from them', async ({ browser }) => {
  test.setTimeout(150_000);
  const { signal, server } = await signalAndLadder();
  // Both on one rendition (PINNED): a page takes from peers what they hold of the rendition
  // it plays, and which renditions two ABRs choose on a busy machine is theirs.
  const chromium = await openHlsPage(browser, server.url, signal.url, 'chromium', PINNED);
  await playedPast(chromium, 6);
  const firefox: FirefoxPage = await openFirefoxPage(hlsPageUrl(server.url, signal.url, PINNED));
  stops.push(() => firefox.close());
  await playedPast(firefox, 12);
  const s = await seen(firefox);
  console.log(`Firefox: ${JSON.stringify(s.stats)}, levels ${[...new Set(s.frags.map((f) => f.level))].join(' ')}`);
  expect(s.errors).toEqual([]);
  expect(s.hlsErrors.filter((e) => e.includes('fatal=true'))).toEqual([]);
  expect(s.frags.length).toBeGreaterThan(4);
  expect(new Set(s.frags.map((f) => f.level)), 'the rendition pinned').toEqual(new Set([1]));
  for (const f of s.frags) expect(f.sha, f.url).toBe(trueSha(f.url, f.range));
  expect(s.stats.bytesFromPeers, `Firefox took more than half its bytes from peers: ${JSON.stringify(s.stats)}`).toBeGreaterThan(s.stats.bytesFromHttp);
});

test('a lying peer is refused: its chunks fail verification, and hls.js gets the true bytes', async ({ browser }) => {
  test.setTimeout(120_000);
  const { signal, server } = await signalAndLadder();
  // The poisoning build corrupts every chunk it serves to peers.
  const liar = await openHlsPage(browser, server.url, signal.url, 'liar', { wasm: '/wasm-poison/ppspp_wasm_bg.wasm' });
  await playedPast(liar, 6);
  const honest = await openHlsPage(browser, server.url, signal.url, 'honest');
  await playedPast(honest, 10);
  const s = await seen(honest);
  console.log(`honest page: ${JSON.stringify(s.stats)}; ${s.errors.length} errors, first: ${s.errors[0]}`);
  expect(s.errors.length, 'the liar\'s chunks were refused').toBeGreaterThan(0);
  for (const e of s.errors) expect(e).toMatch(/^verification-failed: /);
  expect(s.hlsErrors.filter((e) => e.includes('fatal=true'))).toEqual([]);
  for (const f of s.frags) expect(f.sha, f.url).toBe(trueSha(f.url, f.range));
});

test('Video.js plays the ladder through ppspp-web/videojs (hls.js underneath): two pages, every segment the server\'s, the second mostly from the first', async ({ browser }) => {
  test.setTimeout(150_000);
  const { signal, server } = await signalAndLadder();
  // Both on one rendition (PINNED), as in the Firefox test.
  const first = await openHlsPage(browser, server.url, signal.url, 'videojs 0', PINNED, 'videojs');
  await playedPast(first, 4);
  // The second page keeps 4 s ahead (as in the MPEG-TS test): with hls.js's own length it
  // asks for most of the 60 s at once, all from HTTP when its peer comes a few seconds late.
  const second = await openHlsPage(browser, server.url, signal.url, 'videojs 1', { ...PINNED, maxBuffer: '4' }, 'videojs');
  await playedPast(second, 20);
  for (const [i, page] of [first, second].entries()) {
    const s = await seen(page);
    const handler = await page.evaluate(() => (window as unknown as { __t: { handler: string | null } }).__t.handler);
    console.log(`Video.js page ${i}: ${JSON.stringify(s.stats)}, levels ${[...new Set(s.frags.map((f) => f.level))].join(' ')}`);
    expect(handler, 'Video.js chose the ppspp-web source handler').toBe('ppspp-web/videojs');
    expect(new Set(s.frags.map((f) => f.level)), 'the rendition pinned').toEqual(new Set([1]));
    expect(s.errors).toEqual([]);
    expect(s.hlsErrors.filter((e) => e.includes('fatal=true'))).toEqual([]);
    expect(s.frags.length).toBeGreaterThan(3);
    for (const f of s.frags) expect(f.sha, f.url).toBe(trueSha(f.url, f.range));
    if (i === 1) expect(s.stats.bytesFromPeers, `the second page took most of its bytes from the first: ${JSON.stringify(s.stats)}`).toBeGreaterThan(s.stats.bytesFromHttp);
  }
});

test('a page whose first peer comes late takes from it what hls.js buffers ahead; without its video element, from HTTP', async ({ browser }) => {
  test.setTimeout(150_000);
  const { signal, server } = await signalAndLadder();
  // Both later pages on the first page's rendition (PINNED), with hls.js's own 30 s buffer.
  const first = await openHlsPage(browser, server.url, signal.url, 'first', PINNED);
  await playedPast(first, 4);
  // Each later page meets its peers 3 s after its signaling socket opens: by then hls.js
  // has asked for most of 30 s, on a loaded machine too (with 1.5 s, a run with another
  // test beside it had fetched 2.6 MB of it). Given the video element, a segment asked for
  // with more than 6 s buffered ahead waits for them; without it, every one comes from
  // HTTP.
  const lateBy = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 3_000));
  const stats: Record<string, Record<string, number>> = {};
  for (const [label, extra] of [['late', PINNED], ['late, no video element', { ...PINNED, noMedia: '1' }]] as const) {
    const page = await openWatchedPage(browser, report, hlsPageUrl(server.url, signal.url, extra), label, (p) => holdSignaling(p, signal.url, lateBy));
    await playedPast(page, 12);
    const s = await seen(page);
    console.log(`${label}: ${JSON.stringify(s.stats)}, levels ${[...new Set(s.frags.map((f) => f.level))].join(' ')}`);
    expect(s.errors).toEqual([]);
    expect(s.hlsErrors.filter((e) => e.includes('fatal=true'))).toEqual([]);
    for (const f of s.frags) expect(f.sha, f.url).toBe(trueSha(f.url, f.range));
    const stallsMs = await page.evaluate(() => (window as unknown as { __t: { stallsMs: number[] } }).__t.stallsMs);
    expect(stallsMs.filter((ms) => ms > 1000), `${label}: stalls over 1 s (waiting for peers keeps a reserve)`).toEqual([]);
    stats[label] = s.stats;
    await page.context().close();
  }
  const late = stats['late']!;
  const control = stats['late, no video element']!;
  expect(late.bytesFromPeers, `given the video element, the late page took most of its bytes from the first: ${JSON.stringify(late)}`).toBeGreaterThan(late.bytesFromHttp);
  expect(control.bytesFromHttp, `without it, most came from HTTP before the peer did: ${JSON.stringify(control)}`).toBeGreaterThan(control.bytesFromPeers);
});

test('MPEG-TS renditions: hls.js transmuxes segments that came verified from peers; two pages, every segment the server\'s', async ({ browser }) => {
  test.setTimeout(120_000);
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const server = await startOriginServer(ladderFiles('/hlsts', TS_LADDER));
  stops.push(() => server.stop());
  // One rendition (PINNED), as in the Firefox test.
  const first = await openHlsPage(browser, server.url, signal.url, 'ts 0', { base: 'hlsts', ...PINNED });
  await playedPast(first, 4);
  // The second page keeps 4 s ahead, as over a longer video: with hls.js's 30 s it would
  // ask for the whole 20 s at once, all from HTTP when its peer comes a few seconds late.
  const second = await openHlsPage(browser, server.url, signal.url, 'ts 1', { base: 'hlsts', ...PINNED, maxBuffer: '4' });
  await playedPast(second, 16);
  for (const [i, page] of [first, second].entries()) {
    const s = await seen(page);
    console.log(`MPEG-TS page ${i}: ${JSON.stringify(s.stats)}, levels ${[...new Set(s.frags.map((f) => f.level))].join(' ')}`);
    expect(s.errors).toEqual([]);
    expect(s.hlsErrors.filter((e) => e.includes('fatal=true'))).toEqual([]);
    expect(s.frags.length).toBeGreaterThan(3);
    expect(new Set(s.frags.map((f) => f.level)), 'the rendition pinned').toEqual(new Set([1]));
    for (const f of s.frags) {
      expect(f.url).toMatch(/\.ts$/);
      expect(f.sha, f.url).toBe(trueSha(f.url, f.range));
    }
    if (i === 1) expect(s.stats.bytesFromPeers, `the second page took most of its bytes from the first: ${JSON.stringify(s.stats)}`).toBeGreaterThan(s.stats.bytesFromHttp);
  }
});
