/**
 * HTTP-origin tests: the content and its tree file (`ppspp root --tree`) on a
 * plain static web server with Range support, pages that play from it and from each
 * other, all on loopback.
 */
import { type Page, chromium, expect, test } from '@playwright/test';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../playwright.config.js';
import { makeRepeatedWebm } from './big-video.js';
import { FailureReport } from './diagnose.js';
import { ALONE, webForSpec } from './spec-setup.js';
import { type OriginServer, serveOnOrigin, treeFileOf } from './origin.js';
import {
  BIN, ROOT, VIDEO_ORIGIN, VIDEO_ORIGIN_LONG, completeHash, expectPlayedPast, makeOriginVideos, openPages, run, sha256,
  startSignal, startWebWith,
} from './swarm.js';

const { web, stops } = webForSpec(makeOriginVideos);

// The pages of the running test, reported if it fails.
const report = new FailureReport();

/** The origin server with `video` (by default the 20 s one) and its tree file. */
async function serve(
  video: Uint8Array,
  opts: { cors?: boolean; file?: string } = {},
): Promise<{ server: OriginServer; uri: (signal?: string) => Promise<string> }> {
  const served = await serveOnOrigin(opts.file ?? VIDEO_ORIGIN, video, opts);
  stops.push(() => served.server.stop());
  return served;
}

async function signaling(extra: string[] = []): Promise<string> {
  const s = await startSignal('127.0.0.1:0', extra);
  stops.push(() => s.stop());
  return s.url;
}

function t<T>(page: Page, f: (t: Record<string, unknown>) => T): Promise<T> {
  return page.evaluate(`(${f.toString()})(window.__t)`) as Promise<T>;
}

test('six pages play from a static web server and each other; the server sends at most 1.3× the video', ALONE, async ({ browser }) => {
  // The pages play the 60 s video to its end: nobody fetches what playback does not need
  // yet and no peer holds.
  test.setTimeout(240_000);
  const video = new Uint8Array(readFileSync(VIDEO_ORIGIN_LONG));
  const { server, uri } = await serve(video, { file: VIDEO_ORIGIN_LONG });
  const swarmUri = await uri(await signaling());
  const pages = await openPages(browser, web(), swarmUri, 6, '', report.watch('page'));
  for (const page of pages) await expectPlayedPast(page, 5);
  const expected = sha256(video);
  for (const page of pages) expect(await completeHash(page, 120_000)).toBe(expected);
  const sent = server.bytesSent('/v.webm');
  const stats = await Promise.all(pages.map((p) => t(p, (x) => (x.player as { stats(): Record<string, number> }).stats())));
  const fromHttp = stats.reduce((a, s) => a + (s.bytesFromHttp ?? 0), 0);
  const fromPeers = stats.reduce((a, s) => a + (s.bytesFromPeers ?? 0), 0);
  console.log(`per page from HTTP: ${stats.map((s) => s.bytesFromHttp).join(' ')}; first frames: ${(await Promise.all(pages.map((p) => t(p, (x) => x.firstFrameMs)))).map((v) => Math.round(v as number)).join(' ')} ms`);
  console.log(`origin sent ${sent} B = ${(sent / video.length).toFixed(2)}× the video; pages verified ${fromHttp} B from it, ${fromPeers} B from peers`);
  expect(sent / video.length, 'the origin sent at most 1.3 copies').toBeLessThanOrEqual(1.3);
  expect(fromPeers, 'pages fed each other').toBeGreaterThan(3 * video.length);
  expect(server.bytesSent('/video-origin-60s.tree'), 'tree file reads stay small').toBeLessThan(video.length / 20);
  for (const page of pages) expect(await t(page, (x) => x.errors)).toEqual([]);
});

test('below --p2p-min-peers pages play from the origin alone; the page that makes the room big enough gets the video from the others', async ({ browser }) => {
  test.setTimeout(120_000);
  const video = new Uint8Array(readFileSync(VIDEO_ORIGIN));
  const { uri } = await serve(video);
  const swarmUri = await uri(await signaling(['--p2p-min-peers', '3']));
  const stats = (p: Page) => t(p, (x) => (x.player as { stats(): Record<string, number> }).stats());
  const early = await openPages(browser, web(), swarmUri, 2, '', report.watch('early'));
  for (const page of early) await expectPlayedPast(page, 6);
  for (const page of early) {
    const s = await stats(page);
    expect(s.bytesFromPeers, 'a room of two is below the threshold: no peer-to-peer').toBe(0);
    expect(s.connections ?? 0).toBe(0);
    expect(s.bytesFromHttp).toBeGreaterThan(0);
    // Alone by the server's policy is not an error while the origin serves.
    expect(await t(page, (x) => x.errors)).toEqual([]);
  }
  const [third] = await openPages(browser, web(), swarmUri, 1, '', report.watch('third'));
  expect(await completeHash(third!, 90_000)).toBe(sha256(video));
  const s = await stats(third!);
  console.log(`third page: ${s.bytesFromPeers} B from peers, ${s.bytesFromHttp} B from HTTP`);
  expect(s.bytesFromPeers, 'the third page was offered the others').toBeGreaterThan(0);
  expect(await t(third!, (x) => x.errors)).toEqual([]);
});

test('a tampered byte on the server: origin-corrupt, the chunk from peers, nothing corrupt appended', async ({ browser }) => {
  const video = new Uint8Array(readFileSync(VIDEO_ORIGIN));
  // In the first 64 KiB, which every page asks of the origin at once (the head).
  const at = 3 * 8192 + 100;
  const tampered = video.slice();
  tampered[at] = (tampered[at] ?? 0) ^ 0xff;
  const { uri } = await serve(tampered);
  const signal = await signaling();
  const swarmUri = await uri(signal);
  // A native seeder holds the true video (slowly): someone must have the chunk right. It
  // holds everything, so the origin serves each page its head only.
  const seeder = run(join(BIN, 'ppspp'), ['seed', VIDEO_ORIGIN, '--signal', signal, '--bind', '127.0.0.1:0', '--chunk-size', '8192', '--hash', 'sha256', '--upload-limit', '300000']);
  stops.push(() => seeder.stop());
  await seeder.waitLine((l) => l.startsWith('ppspp://'));
  const pages = await openPages(browser, web(), swarmUri, 3, '&appends=1', report.watch('page'));
  const expected = sha256(video);
  for (const page of pages) {
    await expectPlayedPast(page, 15);
    expect(await completeHash(page)).toBe(expected);
  }
  const chunk = Math.floor(at / 8192);
  const reported = (await Promise.all(pages.map((p) => t(p, (x) => x.originCorrupt as number[])))).flat();
  expect(reported.length, 'pages asked the origin for the chunk and found it corrupt').toBeGreaterThan(0);
  expect(new Set(reported)).toEqual(new Set([chunk]));
  // Bytes around the tampered one, as the server has them and as they are: only the true
  // ones reached MediaSource (block data is appended verbatim).
  const window = (bytes: Uint8Array): number[] => [...bytes.subarray(at - 16, at + 16)];
  for (const page of pages) {
    const found = await page.evaluate(
      ([bad, good]) => {
        const appended = (window as unknown as { __t: { appended: Uint8Array[] } }).__t.appended;
        const all = new Uint8Array(appended.reduce((a, b) => a + b.length, 0));
        let o = 0;
        for (const b of appended) {
          all.set(b, o);
          o += b.length;
        }
        const has = (p: number[]): boolean => {
          outer: for (let i = 0; i + p.length <= all.length; i++) {
            for (let j = 0; j < p.length; j++) if (all[i + j] !== p[j]) continue outer;
            return true;
          }
          return false;
        };
        return { bad: has(bad), good: has(good) };
      },
      [window(tampered), window(video)] as const,
    );
    expect(found, 'the corrupt bytes never reached MediaSource; the true ones did').toEqual({ bad: false, good: true });
  }
});

test('within maxMemoryBytes a page plays and seeks an 11 MB video holding at most 1 MiB of it', async ({ browser }) => {
  const video = new Uint8Array(readFileSync(VIDEO_ORIGIN_LONG));
  const { server, uri } = await serve(video, { file: VIDEO_ORIGIN_LONG });
  const bound = 1 << 20;
  const [page] = await openPages(browser, web(), await uri(), 1, `&memory=${bound}&readahead=${256 * 1024}`, report.watch('page'));
  const held = (): Promise<number> => t(page!, (x) => (x.player as { stats(): { chunksHave: number } }).stats().chunksHave * 8192);
  let most = 0;
  const watch = setInterval(() => void held().then((h) => (most = Math.max(most, h)), () => {}), 200);
  try {
    await expectPlayedPast(page!, 12);
    await page!.evaluate(() => {
      document.querySelector('video')!.currentTime = 45;
    });
    await expectPlayedPast(page!, 47, 20_000);
    // Back to the start, which it let go of: fetched again.
    await page!.evaluate(() => {
      document.querySelector('video')!.currentTime = 2;
    });
    await expect.poll(() => page!.evaluate(() => document.querySelector('video')!.currentTime), { timeout: 20_000 }).toBeGreaterThan(3);
    await expect.poll(() => page!.evaluate(() => document.querySelector('video')!.currentTime), { timeout: 20_000 }).toBeLessThan(10);
  } finally {
    clearInterval(watch);
  }
  const stats = await t(page!, (x) => (x.player as { stats(): Record<string, number> }).stats());
  console.log(`held at most ${most} B of ${video.length}; evicted ${stats.chunksEvicted} chunks; origin sent ${server.bytesSent('/v.webm')} B`);
  expect(most, 'bytes held at most').toBeLessThanOrEqual(bound);
  expect(stats.chunksEvicted).toBeGreaterThan(0);
  expect(await t(page!, (x) => x.errors)).toEqual([]);
});

test('a 1 GiB video plays and seeks with the page holding at most its bound and its memory far below the video', ALONE, async () => {
  test.setTimeout(240_000);
  // 95 minutes: the 60 s video's Clusters repeated (no encoding), served from disk.
  const big = join(ROOT, 'target', 'e2e', 'video-1gib.webm');
  const made = makeRepeatedWebm(VIDEO_ORIGIN_LONG, big, 1 << 30);
  stops.push(async () => {
    rmSync(big, { force: true });
    rmSync(treeFileOf(big), { force: true });
  });
  const served = await serveOnOrigin(big, 'from-disk');
  stops.push(() => served.server.stop());
  // Cross-origin isolated, for performance.measureUserAgentSpecificMemory.
  const isolated = await startWebWith([], ['--isolate']);
  stops.push(() => isolated.stop());
  // Chromium answers measureUserAgentSpecificMemory at its next garbage collection (which
  // may be many seconds away) unless told to measure at once.
  const eager = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...CHROMIUM_ARGS, '--enable-blink-features=ForceEagerMeasureMemory'],
  });
  stops.push(() => eager.close());
  const bound = 16 << 20;
  const [page] = await openPages(eager, isolated.url, await served.uri(), 1, `&memory=${bound}`, report.watch('page'));
  const held = (): Promise<number> => t(page!, (x) => (x.player as { stats(): { chunksHave: number } }).stats().chunksHave * 8192);
  // The browser's figure for the JavaScript heaps and DOM of the page and its Workers (it
  // leaves out Wasm memories, ArrayBuffers), plus the engine's Wasm memory, where it holds
  // the video (from its stats: the engine runs in a Worker, out of the page's reach).
  const memory = (): Promise<{ js: number; wasm: number; thread: string }> =>
    page!.evaluate(async () => {
      const perf = performance as unknown as { measureUserAgentSpecificMemory(): Promise<{ bytes: number }> };
      const js = (await perf.measureUserAgentSpecificMemory()).bytes;
      const player = (window as unknown as { __t: { player: { stats(): { wasmMemoryBytes: number; engineThread: string } } } }).__t.player;
      const stats = player.stats();
      return { js, wasm: stats.wasmMemoryBytes, thread: stats.engineThread };
    });
  let most = 0;
  const watch = setInterval(() => void held().then((h) => (most = Math.max(most, h)), () => {}), 200);
  const seen: { js: number; wasm: number; thread: string; rss: number }[] = [];
  const seeks: string[] = [];
  const mib = (b: number): string => (b / 2 ** 20).toFixed(1);
  const measure = async (): Promise<void> => {
    seen.push({ ...(await memory()), rss: rendererRss() });
  };
  try {
    await expectPlayedPast(page!, 3);
    expect(await page!.evaluate(() => crossOriginIsolated), 'the page is cross-origin isolated').toBe(true);
    await measure();
    // Into the middle, near the end, then back: each 20 s into one of the repeats.
    const period = made.seconds / Math.round(made.seconds / 60);
    for (const copy of [47, 90, 10]) {
      const at = copy * period + 20;
      const sent = served.server.bytesSent('/v.webm');
      const started = Date.now();
      await page!.evaluate((s) => {
        document.querySelector('video')!.currentTime = s;
      }, at);
      await expectPlayedPast(page!, at + 3, 30_000);
      seeks.push(`${at.toFixed(0)} s: played 3 s on after ${Date.now() - started} ms, ${mib(served.server.bytesSent('/v.webm') - sent)} MiB from the server`);
      await measure();
    }
  } finally {
    clearInterval(watch);
  }
  const stats = await t(page!, (x) => (x.player as { stats(): Record<string, number> }).stats());
  console.log(`seeks: ${seeks.join('; ')}`);
  console.log(`${mib(made.bytes)} MiB video, ${made.seconds.toFixed(0)} s; bound ${mib(bound)} MiB, held at most ${mib(most)} MiB; origin sent ${mib(served.server.bytesSent('/v.webm'))} MiB; evicted ${stats.chunksEvicted} chunks`);
  console.log(`page memory at the start and after each seek, MiB: JavaScript (measureUserAgentSpecificMemory) ${seen.map((m) => mib(m.js)).join(', ')}; Wasm ${seen.map((m) => mib(m.wasm)).join(', ')}; renderer RSS ${seen.map((m) => mib(m.rss)).join(', ')}`);
  expect(most, 'video bytes held at most').toBeLessThanOrEqual(bound);
  // A seek fetches its probes (512 KiB each) and the media from a few seconds before its
  // time, not a stretch of the file in front of it.
  expect(served.server.bytesSent('/v.webm'), 'bytes from the server').toBeLessThan(2 * bound);
  for (const m of seen) {
    expect(m.thread, 'the engine runs in its Worker (the default)').toBe('worker');
    // Besides the bound: the code, and the verified part of the hash tree (a few hashes
    // per chunk played, which peers count on us to keep).
    expect(m.js + m.wasm, "the page's JavaScript and Wasm memory").toBeLessThan(bound + (12 << 20));
    // The renderer holds MediaSource's buffers and the decoders too.
    expect(m.rss, 'the renderer process').toBeLessThan(made.bytes / 2);
  }
  expect(stats.chunksEvicted).toBeGreaterThan(0);
  expect(await t(page!, (x) => x.errors)).toEqual([]);
});

/** The resident memory of the largest Chromium renderer process (the test's page: earlier tests' contexts are closed). */
function rendererRss(): number {
  let most = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer')) continue;
      const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      most = Math.max(most, Number(kb?.[1] ?? 0) * 1024);
    } catch {
      // The process ended meanwhile.
    }
  }
  return most;
}

test('storage: opfs — a page reloaded mid-video reads back what it saved, fetches under half again, and serves it to a peer', async ({ browser }) => {
  const video = new Uint8Array(readFileSync(VIDEO_ORIGIN));
  const { server, uri } = await serve(video);
  const swarmUri = await uri(await signaling());
  const [page] = await openPages(browser, web(), swarmUri, 1, '&storage=opfs', report.watch('page'));
  await expectPlayedPast(page!, 4);
  const stats = (): Promise<Record<string, number>> =>
    t(page!, (x) => (x.player as { stats(): Record<string, number> }).stats());
  // Saved batches are written a moment after their chunks come.
  await expect.poll(async () => (await stats()).chunksSaved, { timeout: 20_000 }).toBeGreaterThan(0);
  await page!.waitForTimeout(1000);
  const before = await stats();
  const sentBefore = server.bytesSent('/v.webm');
  console.log(`before the reload: played ${await page!.evaluate(() => document.querySelector('video')!.currentTime)} s, ${before.chunksSaved} chunks saved (${before.bytesSaved} B), origin sent ${sentBefore} B`);
  expect(await t(page!, (x) => x.storageFallbacks)).toEqual([]);

  await page!.reload();
  await expectPlayedPast(page!, 3);
  expect(await completeHash(page!)).toBe(sha256(video));
  const after = await stats();
  const again = server.bytesSent('/v.webm') - sentBefore;
  console.log(`after the reload: ${after.bytesFromStorage} B read back (${after.chunksRestored} chunks), origin sent ${again} B again`);
  expect(again, 'fetched again').toBeLessThan(video.length / 2);
  expect(after.bytesFromStorage, 'read back').toBeGreaterThan(video.length / 2);
  expect(after.chunksSavedCorrupt).toBe(0);
  expect(await t(page!, (x) => x.errors)).toEqual([]);

  // A page that does not use the origin gets the video from the reloaded one.
  const [peer] = await openPages(browser, web(), swarmUri, 1, '&origin=0', report.watch('page'));
  await expectPlayedPast(peer!, 3);
  expect(await completeHash(peer!)).toBe(sha256(video));
  expect(server.bytesSent('/v.webm') - sentBefore - again, 'the origin sent it nothing').toBe(0);
});

test('HTTP only: no signaling server, no peers; a server without CORS is origin-unreachable', async ({ browser }) => {
  const video = new Uint8Array(readFileSync(VIDEO_ORIGIN));
  const { server, uri } = await serve(video);
  const [page] = await openPages(browser, web(), await uri(), 1, '', report.watch('page'));
  await expectPlayedPast(page!, 3);
  expect(await completeHash(page!)).toBe(sha256(video));
  expect(server.bytesSent('/v.webm')).toBe(video.length);
  expect(await t(page!, (x) => x.errors)).toEqual([]);
  expect(await t(page!, (x) => x.peersJoined)).toBe(0);

  const blocked = await serve(video, { cors: false });
  const [refused] = await openPages(browser, web(), await blocked.uri(), 1, '', report.watch('page'));
  await expect
    .poll(() => t(refused!, (x) => (x.errors as string[]).join('\n')), { timeout: 20_000 })
    .toMatch(/^origin-unreachable: .*CORS/);
  expect(await t(refused!, (x) => (x.player as { stats(): { chunksHave: number } }).stats().chunksHave)).toBe(0);
});
