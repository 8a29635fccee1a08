/**
 * HTTP as the safety net: with an HTTP origin, a page plays whatever happens to P2P. The
 * URI names a signaling server and the web server (720p H.264, 2 s keyframes); then the
 * browser has no WebRTC, the signaling server is down, it accepts connections and never
 * answers, every peer goes away mid-video, or the page asks for HTTP only.
 */
import { type Page, expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { join } from 'node:path';
import { FailureReport } from './diagnose.js';
import { webForSpec } from './spec-setup.js';
import { serveOnOrigin } from './origin.js';
import { BIN, VIDEO_HD_MP4, expectPlayedPast, makeHdVideos, openPages, run, startSignal } from './swarm.js';

const { web, stops } = webForSpec(makeHdVideos);
const report = new FailureReport();

/** The video on a web server; its URI names `signal` as the signaling server. */
async function published(signal: string): Promise<{ uri: string; bytesSent: () => number }> {
  const served = await serveOnOrigin(VIDEO_HD_MP4, new Uint8Array(readFileSync(VIDEO_HD_MP4)));
  stops.push(() => served.server.stop());
  return { uri: await served.uri(signal), bytesSent: () => served.server.bytesSent('/v.webm') };
}

/** A TCP server on loopback that accepts connections and never says a word. */
async function silentServer(): Promise<string> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stops.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `ws://127.0.0.1:${address.port}/ws`;
}

/** A signaling URL where nothing listens (a server started, then stopped). */
async function deadSignal(): Promise<string> {
  const s = await startSignal();
  await s.stop();
  return s.url;
}

interface Seen {
  error: string | null;
  errors: string[];
  firstFrameMs: number | null;
  noP2p: [number, string, string][];
  peersJoined: number;
  /**
   * Stalls over 1 s but those of cause `decode` (media buffered, the decoder behind: on a
   * busy machine, its CPU's): what falling back to HTTP must prevent is waiting for media.
   */
  longStalls: string[];
  fromHttp: number;
}

function seen(page: Page): Promise<Seen> {
  return page.evaluate(() => {
    type Stall = { durationMs: number; cause: string; position: number };
    const t = (window as unknown as {
      __t: {
        error: string | null; errors: string[]; firstFrameMs: number | null; noP2p: [number, string, string][]; peersJoined: number;
        stalls: Stall[]; player: { stats(): Record<string, number> } | null;
      };
    }).__t;
    return {
      error: t.error,
      errors: t.errors,
      firstFrameMs: t.firstFrameMs === null ? null : Math.round(t.firstFrameMs),
      noP2p: t.noP2p,
      peersJoined: t.peersJoined,
      longStalls: t.stalls.filter((x) => x.durationMs > 1000 && x.cause !== 'decode').map((x) => `${Math.round(x.durationMs)} ms ${x.cause} at ${x.position.toFixed(1)} s`),
      fromHttp: t.player?.stats().bytesFromHttp ?? 0,
    };
  });
}

/**
 * A first frame later than this waited for P2P: it is well under the signaling timeout
 * (10 s by default, 6 s where a test sets it), and far over a first frame on a busy
 * machine. How fast first frames are is `make bench`'s.
 */
const NO_WAIT_MS = 5_000;

/** The page plays past 6 s from HTTP: a first frame with no wait for P2P, no stall over 1 s, no error. */
async function playsFromHttp(page: Page): Promise<Seen> {
  await expectPlayedPast(page, 6, 30_000);
  const s = await seen(page);
  const message = JSON.stringify(s);
  expect(s.error, message).toBeNull();
  expect(s.errors, message).toEqual([]);
  expect(s.firstFrameMs, message).not.toBeNull();
  expect(s.firstFrameMs!, message).toBeLessThan(NO_WAIT_MS);
  expect(s.longStalls, message).toEqual([]);
  expect(s.fromHttp, message).toBeGreaterThan(0);
  return s;
}

test('no WebRTC (RTCPeerConnection removed): plays from HTTP, p2p-unavailable webrtc-unsupported', async ({ browser }) => {
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const { uri } = await published(signal.url);
  const [page] = await openPages(browser, web(), uri, 1, '', async (p) => {
    await report.watch('page')(p);
    await p.addInitScript(() => {
      delete (window as { RTCPeerConnection?: unknown }).RTCPeerConnection;
    });
  });
  const s = await playsFromHttp(page!);
  expect(s.noP2p.map((e) => e[1])).toEqual(['webrtc-unsupported']);
});

test('signaling down: plays from HTTP at once, p2p-unavailable signaling-unreachable', async ({ browser }) => {
  const { uri } = await published(await deadSignal());
  const [page] = await openPages(browser, web(), uri, 1, '', report.watch('page'));
  const s = await playsFromHttp(page!);
  expect(s.noP2p.map((e) => e[1])).toEqual(['signaling-unreachable']);
});

test('signaling silent (accepts, never answers): plays from HTTP; p2p-unavailable after signalingTimeoutMs', async ({ browser }) => {
  const { uri } = await published(await silentServer());
  const [page] = await openPages(browser, web(), uri, 1, '&signalingTimeout=6000', report.watch('page'));
  await playsFromHttp(page!);
  await expect.poll(async () => (await seen(page!)).noP2p.length, { timeout: 15_000, message: 'p2p-unavailable after the timeout' }).toBeGreaterThan(0);
  const s = await seen(page!);
  expect(s.noP2p.map((e) => e[1])).toEqual(['signaling-unreachable']);
  expect(s.noP2p[0]![2]).toContain('no welcome within 6000 ms');
});

test('signal=off (signal: false): HTTP only, the signaling server never hears of the page', async ({ browser }) => {
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const { uri } = await published(signal.url);
  // A second page that does use signaling: it would meet the first if that one joined.
  const [page] = await openPages(browser, web(), uri, 1, '&signal=off', report.watch('page'));
  const [other] = await openPages(browser, web(), uri, 1, '', report.watch('page'));
  const s = await playsFromHttp(page!);
  await expectPlayedPast(other!, 3, 30_000);
  expect(s.noP2p).toEqual([]);
  expect(s.peersJoined, 'no peer met').toBe(0);
  expect((await seen(other!)).peersJoined).toBe(0);
});

test('every peer gone mid-video (the seeder and the other page): the page plays on from HTTP', async ({ browser }) => {
  test.setTimeout(120_000);
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const { uri } = await published(signal.url);
  const seeder = run(join(BIN, 'ppspp'), [
    'seed', VIDEO_HD_MP4, '--signal', signal.url, '--bind', '127.0.0.1:0', '--chunk-size', '8192', '--hash', 'sha256',
    // Little more than the video's rate: most of it is still to fetch when the peers go.
    '--upload-limit', '500000',
  ]);
  report.keep('seeder', seeder);
  stops.push(() => seeder.stop());
  await seeder.waitLine((l) => l.startsWith('ppspp://'));
  const [page, other] = await openPages(browser, web(), uri, 2, '', report.watch('page'));
  await expectPlayedPast(page!, 3, 30_000);
  expect((await seen(page!)).peersJoined).toBeGreaterThan(0);
  await seeder.stop();
  await other!.context().close();
  await expectPlayedPast(page!, 25, 60_000);
  const s = await seen(page!);
  const message = JSON.stringify(s);
  expect(s.errors, message).toEqual([]);
  expect(s.longStalls, message).toEqual([]);
  expect(s.fromHttp, message).toBeGreaterThan(4 << 20);
});
