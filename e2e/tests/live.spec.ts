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
import { ALONE } from './spec-setup.js';

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
  /**
   * When ffmpeg had written the stream's first `bytes` bytes (Unix ms). Latencies are
   * counted from there, not from media time: on a loaded machine ffmpeg encodes behind
   * real time, and that lag is not the swarm's.
   */
  writtenAt(bytes: number): number;
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
  // [Unix ms, bytes written by then], one entry per read.
  const written: [number, number][] = [];
  let total = 0;
  ffmpeg.stdout.on('data', (d: Buffer) => {
    parts.push(d);
    total += d.length;
    written.push([Date.now(), total]);
    live.child.stdin!.write(d);
  });
  ffmpeg.stdout.on('end', () => live.child.stdin!.end());
  return {
    live,
    startedAt,
    stream: () => Buffer.concat(parts),
    writtenAt: (bytes) => (written.find(([, n]) => n >= bytes) ?? [Infinity])[0],
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
  /** [Unix ms, buffered end, index in `appended`] of each append that buffered media. */
  appendTimes: [number, number, number][];
}

const state = (page: Evaluable): Promise<LiveT> =>
  page.evaluate(() => {
    const t = (window as unknown as { __t: LiveT }).__t;
    return { ...t, appended: [], player: null } as LiveT;
  });

/**
 * What `page` appended to MediaSource, held against the source's stream: for each append
 * that buffered media, when it was done (Unix ms), where the buffered media ended then
 * (s), and when ffmpeg had written the last byte of it (Infinity: not the source's); and
 * how many appends after the initialisation segment are not the source's. The source puts
 * the initialisation segment (the first append) in front of each media segment: an
 * append's runs between its copies are each found in the stream.
 */
async function appendsOf(page: Evaluable, source: LiveSource): Promise<{ timed: { at: number; mediaEnd: number; written: number }[]; foreign: number }> {
  const [times, all] = await page.evaluate(() => {
    const t = (window as unknown as { __t: LiveT }).__t;
    return [t.appendTimes, t.appended.map((a) => Array.from(a))] as const;
  });
  const stream = source.stream();
  const init = Buffer.from(all[0] ?? []);
  /** Where the end of `a`'s last run is in the stream (0: it has none, only a copy of the
   * initialisation segment); -1 if a run is not there. */
  const endIn = (a: Buffer): number => {
    let end = 0;
    for (let at = 0; at < a.length; ) {
      const copy = init.length > 0 ? a.indexOf(init, at) : -1;
      const run = a.subarray(at, copy < 0 ? a.length : copy);
      if (run.length > 0) {
        const offset = stream.indexOf(run);
        if (offset < 0) return -1;
        end = offset + run.length;
      }
      at = copy < 0 ? a.length : copy + init.length;
    }
    return end;
  };
  const ends = all.map((a, i) => (i === 0 ? init.length : endIn(Buffer.from(a))));
  const timed = times.map(([at, mediaEnd, index]) => {
    const end = ends[index] ?? -1;
    return { at, mediaEnd, written: end < 0 ? Infinity : source.writtenAt(end) };
  });
  return { timed, foreign: ends.slice(1).filter((o) => o < 0).length };
}

/** The median of `values` (Infinity for none). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Infinity;
}

test('six pages play a live stream near its edge, a late one joins at the edge, a forger is banned, and all end with it', async ({ browser }) => {
  test.setTimeout(150_000);
  const dir = mkdtempSync(join(tmpdir(), 'ppspp-live-'));
  const signal = await startSignal();
  // Ends 6 s after the late page opens: on a busy machine a late page has met its peers
  // 2 s after opening, with only a second of the stream left when it ended 3 s after.
  const source = startLive(signal.url, 36, dir);
  report.keep('live', source.live);
  try {
    const uri = await source.live.waitLine((l) => l.startsWith('ppspp://live/'));
    // Videos not displayed (player.html?hidden=1): compositing seven in software takes CPU
    // that ffmpeg, encoding at real time, and the pages need. The stream ends for a page
    // 6 s after its last new signed chunk: on a busy machine a page starting beside five
    // others once waited 3 s for its first after the edge.
    const query = '&appends=1&liveEnd=6000&hidden=1';
    // The forger: a test-only build that corrupts every chunk it serves.
    const [forger] = await openPages(browser, web.url, uri, 1, `${query}&wasm=/wasm-poison/ppspp_wasm_bg.wasm`, report.watch('forger'));
    const honest = await openPages(browser, web.url, uri, 4, query, report.watch('honest'));
    for (const page of honest) {
      await expect.poll(async () => (await state(page)).firstFrameMs ?? (await state(page)).error, { timeout: 15_000 }).toBeLessThan(6000);
    }
    // A page 30 s into the stream starts at its edge, not at the start of the window: its
    // first media was written by the source at most 7 s before the page opened (3 s of
    // latency target, 2 s of margin behind it, a second-long segment written whole, a
    // second to spare).
    await new Promise((r) => setTimeout(r, Math.max(0, source.startedAt + 30_000 - Date.now())));
    const lateOpenedAt = Date.now();
    const [late] = await openPages(browser, web.url, uri, 1, query, report.watch('late'));
    await expect.poll(async () => (await state(late!)).firstFrameMs ?? (await state(late!)).error, { timeout: 15_000 }).toBeLessThan(6000);
    const lateStart = await late!.evaluate(() => (window as unknown as { __t: { bufferedStartAtFirstFrame: number | null } }).__t.bufferedStartAtFirstFrame);
    const [first] = (await appendsOf(late!, source)).timed;
    const behind = lateOpenedAt - (first?.written ?? -Infinity);
    // How far behind real time ffmpeg wrote that media, for the message.
    const encoderLag = first ? (first.written - (source.startedAt + first.mediaEnd * 1000)) / 1000 : NaN;
    expect(behind, `ms from ffmpeg writing the late page's first media (from ${lateStart} s; written ${encoderLag.toFixed(1)} s after its media time) to the page opening`).toBeLessThanOrEqual(7000);
    const viewers = [...honest, late!];
    for (const page of [...viewers, forger!]) {
      await expect.poll(async () => (await state(page)).liveEnded, { timeout: 30_000, message: 'live-ended' }).toBe(true);
    }

    // Latency from ffmpeg writing a segment to a page appending it; every appended
    // segment is the source's (nothing the forger forged reached MediaSource).
    const latencies: number[] = [];
    for (const page of viewers) {
      const t = await state(page);
      // Only the forger's chunks are refused.
      expect(t.errors.filter((e) => !e.startsWith('verification-failed'))).toEqual([]);
      const { timed, foreign } = await appendsOf(page, source);
      expect(foreign, 'appended segments that are not the source\'s').toBe(0);
      for (const { at, written } of timed) latencies.push(at - written);
    }
    const middle = median(latencies);
    console.log(`live: append latency median ${Math.round(middle)} ms, max ${Math.round(Math.max(0, ...latencies))} ms over ${latencies.length} appends`);
    expect(middle, 'median append latency (ms)').toBeLessThanOrEqual(5000);

    // The forger was caught.
    const rejected = (await Promise.all(viewers.map(state))).reduce((n, t) => n + t.rejected.length, 0);
    expect(rejected, 'forged chunks rejected by honest pages').toBeGreaterThan(0);
  } finally {
    await source.stop();
    await signal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

// Stalls timed with a signature checked per chunk: the machine to itself.
test('a Firefox page and a Chromium page play a stream signed chunk by chunk (Sign All) near its edge, without a stall over 1 s, and end with it', ALONE, async ({ browser }) => {
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
    for (const [i, [name, page]] of ([['firefox', firefox], ['chromium', chromium!]] as const).entries()) {
      const t = await state(page);
      expect(t.errors, name).toEqual([]);
      expect(stalls[i], `${name}: longest stall (s)`).toBeLessThan(1);
      const { timed, foreign } = await appendsOf(page, source);
      const latencies = timed.map(({ at, written }) => at - written);
      const middle = median(latencies);
      console.log(`live (Sign All), ${name}: append latency median ${Math.round(middle)} ms over ${latencies.length} appends`);
      expect(middle, `${name}: median append latency (ms)`).toBeLessThanOrEqual(5000);
      expect(foreign, `${name}: appended segments that are not the source's`).toBe(0);
    }
  } finally {
    await firefox?.close();
    await source.stop();
    await signal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
