/**
 * Live streams: ffmpeg's test source at real time through `ppspp live`, the signaling
 * server, and headless Chromium (and Firefox) pages playing the live URI through
 * `Player.attach`.
 */
import { expect, test } from '@playwright/test';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FailureReport } from './diagnose.js';
import { type FirefoxPage, longestStall, openFirefoxPage, watchStalls } from './firefox.js';
import { BIN, type Evaluable, type Proc, openPages, run, startSignal, startWeb } from './swarm.js';

let web: { url: string; stop(): Promise<void> };

test.beforeAll(async () => {
  web = await startWeb();
});
test.afterAll(async () => {
  await web.stop();
});

// The Chromium pages and the source of the running test, reported if it fails.
const report = new FailureReport();

interface LiveSource {
  live: Proc;
  /** When ffmpeg started reading its source (Unix ms): media time 0. */
  startedAt: number;
  /** Every byte of the stream, as `ppspp live` read it. */
  stream(): Buffer;
  stop(): Promise<void>;
}

/** ffmpeg's test pattern for `seconds` at real time into `ppspp live --signal` (`args`). */
function startLive(signal: string, seconds: number, dir: string, args: string[] = []): LiveSource {
  const startedAt = Date.now();
  const ffmpeg = spawn('ffmpeg', [
    '-loglevel', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', String(seconds),
    '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '400k', '-g', '25', '-f', 'webm', '-',
  ], { stdio: ['ignore', 'pipe', 'ignore'] });
  const live = run(join(BIN, 'ppspp'), [
    'live', '--signal', signal, '--bind', '127.0.0.1:0', '--key', join(dir, 'live.key'), '--linger', '2', ...args,
  ], 'pipe');
  const parts: Buffer[] = [];
  ffmpeg.stdout.on('data', (d: Buffer) => {
    parts.push(d);
    live.child.stdin!.write(d);
  });
  ffmpeg.stdout.on('end', () => live.child.stdin!.end());
  return {
    live,
    startedAt,
    stream: () => Buffer.concat(parts),
    async stop() {
      ffmpeg.kill('SIGKILL');
      await live.stop();
    },
  };
}

interface LiveT {
  error: string | null;
  errors: string[];
  firstFrameMs: number | null;
  rejected: unknown[];
  left: string[];
  liveEnded: boolean;
  appended: Uint8Array[];
  appendTimes: [number, number][];
}

const state = (page: Evaluable): Promise<LiveT> =>
  page.evaluate(() => {
    const t = (window as unknown as { __t: LiveT }).__t;
    return { ...t, appended: [], player: null } as LiveT;
  });

/** The bytes the page appended to MediaSource, after the initialisation segment. */
const appended = (page: Evaluable): Promise<number[][]> =>
  page.evaluate(() => (window as unknown as { __t: LiveT }).__t.appended.slice(1).map((a) => Array.from(a)));

test('six pages play a live stream near its edge, a late one joins at the edge, a forger is banned, and all end with it', async ({ browser }) => {
  test.setTimeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), 'ppspp-live-'));
  const signal = await startSignal();
  // Ends 3 s after the late page joins.
  const source = startLive(signal.url, 33, dir);
  report.keep('live', source.live);
  try {
    const uri = await source.live.waitLine((l) => l.startsWith('ppspp://live/'));
    const query = '&appends=1&liveEnd=3000';
    // The forger: a test-only build that corrupts every chunk it serves.
    const [forger] = await openPages(browser, web.url, uri, 1, `${query}&wasm=/wasm-poison/ppspp_wasm_bg.wasm`, report.watch('forger'));
    const honest = await openPages(browser, web.url, uri, 4, query, report.watch('honest'));
    for (const page of honest) {
      await expect.poll(async () => (await state(page)).firstFrameMs ?? (await state(page)).error, { timeout: 15_000 }).toBeLessThan(6000);
    }
    // A page 30 s into the stream starts at its edge, not at the start of the window.
    await new Promise((r) => setTimeout(r, Math.max(0, source.startedAt + 30_000 - Date.now())));
    const [late] = await openPages(browser, web.url, uri, 1, query, report.watch('late'));
    await expect.poll(async () => (await state(late!)).firstFrameMs ?? (await state(late!)).error, { timeout: 15_000 }).toBeLessThan(6000);
    const lateStart = await late!.evaluate(() => (window as unknown as { __t: { bufferedStartAtFirstFrame: number | null } }).__t.bufferedStartAtFirstFrame);
    expect(lateStart, 'media time where the late page starts').toBeGreaterThan(22);
    const viewers = [...honest, late!];
    for (const page of [...viewers, forger!]) {
      await expect.poll(async () => (await state(page)).liveEnded, { timeout: 30_000, message: 'live-ended' }).toBe(true);
    }

    // Latency from ffmpeg reading a frame to a page appending it.
    const latencies: number[] = [];
    for (const page of viewers) {
      const t = await state(page);
      // Only the forger's chunks are refused.
      expect(t.errors.filter((e) => !e.startsWith('verification-failed'))).toEqual([]);
      for (const [at, mediaEnd] of t.appendTimes) latencies.push(at - (source.startedAt + mediaEnd * 1000));
    }
    latencies.sort((a, b) => a - b);
    const median = latencies[Math.floor(latencies.length / 2)] ?? Infinity;
    console.log(`live: append latency median ${Math.round(median)} ms, max ${Math.round(latencies[latencies.length - 1] ?? 0)} ms over ${latencies.length} appends`);
    expect(median).toBeLessThanOrEqual(5000);

    // The forger was caught, and nothing it forged reached MediaSource.
    const rejected = (await Promise.all(viewers.map(state))).reduce((n, t) => n + t.rejected.length, 0);
    expect(rejected, 'forged chunks rejected by honest pages').toBeGreaterThan(0);
    const stream = source.stream();
    for (const page of viewers) {
      for (const bytes of await appended(page)) {
        expect(stream.indexOf(Buffer.from(bytes)), 'every appended segment is the source\'s').toBeGreaterThanOrEqual(0);
      }
    }
  } finally {
    await source.stop();
    await signal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a Firefox page and a Chromium page play a stream signed chunk by chunk (Sign All) near its edge, without a stall over 1 s, and end with it', async ({ browser }) => {
  test.setTimeout(90_000);
  const dir = mkdtempSync(join(tmpdir(), 'ppspp-live-'));
  const signal = await startSignal();
  const source = startLive(signal.url, 20, dir, ['--chunks-per-signature', '1']);
  report.keep('live', source.live);
  let firefox: FirefoxPage | null = null;
  try {
    const uri = await source.live.waitLine((l) => l.startsWith('ppspp://live/'));
    expect(uri).toContain('sig=1');
    const query = '&appends=1&liveEnd=3000';
    firefox = await openFirefoxPage(`${web.url}/e2e/player.html?uri=${encodeURIComponent(uri)}${query}`);
    const [chromium] = await openPages(browser, web.url, uri, 1, query, report.watch('chromium'));
    const pages: Evaluable[] = [firefox, chromium!];
    for (const page of pages) {
      await expect.poll(async () => (await state(page)).firstFrameMs ?? (await state(page)).error, { timeout: 15_000 }).toBeLessThan(6000);
      await watchStalls(page);
    }
    // Stalls while the stream runs (at its end, playback waits for `liveEnd`).
    await new Promise((r) => setTimeout(r, Math.max(0, source.startedAt + 19_000 - Date.now())));
    const stalls = await Promise.all(pages.map(longestStall));
    for (const page of pages) {
      await expect.poll(async () => (await state(page)).liveEnded, { timeout: 30_000, message: 'live-ended' }).toBe(true);
    }
    const stream = source.stream();
    for (const [i, [name, page]] of ([['firefox', firefox], ['chromium', chromium!]] as const).entries()) {
      const t = await state(page);
      expect(t.errors, name).toEqual([]);
      expect(stalls[i], `${name}: longest stall (s)`).toBeLessThan(1);
      const latencies = t.appendTimes.map(([at, mediaEnd]) => at - (source.startedAt + mediaEnd * 1000)).sort((a, b) => a - b);
      const median = latencies[Math.floor(latencies.length / 2)] ?? Infinity;
      console.log(`live (Sign All), ${name}: append latency median ${Math.round(median)} ms over ${latencies.length} appends`);
      expect(median, `${name}: median append latency (ms)`).toBeLessThanOrEqual(5000);
      for (const bytes of await appended(page)) {
        expect(stream.indexOf(Buffer.from(bytes)), `${name}: every appended segment is the source's`).toBeGreaterThanOrEqual(0);
      }
    }
  } finally {
    await firefox?.close();
    await source.stop();
    await signal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
