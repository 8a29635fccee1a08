/**
 * The lower-level Peer API between pages (seed in one, fetch and stream in others) and
 * the typed errors a web developer sees.
 */
import { expect, test } from '@playwright/test';
import { type Swarm, startSignal, startSwarm, startWeb } from './swarm.js';

/** What e2e/pages/peer.html gives its tests. */
interface PeerApi {
  seed(signal: string, size: number): Promise<{ uri: string; sha256: string }>;
  fetch(
    target: string,
    options?: { signal?: string },
  ): Promise<{ sha256: string; length: number; fromSeeders: number; fromPeers: number; fetchMs: number }>;
  stream(uri: string): Promise<{ sha256: string; pieces: number }>;
  errorOf(what: string, arg: unknown): Promise<string>;
}
declare global {
  interface Window {
    peerApi: PeerApi;
  }
}

let web: { url: string; stop(): Promise<void> };
let swarm: Swarm;

test.beforeAll(async () => {
  web = await startWeb();
  swarm = await startSwarm(); // for its signaling server (and a seeder the error tests use)
});
test.afterAll(async () => {
  await swarm.stop();
  await web.stop();
});

async function peerPage(browser: import('@playwright/test').Browser) {
  const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
  const page = await context.newPage();
  await page.goto(`${web.url}/e2e/peer.html`);
  await page.waitForFunction(() => (window as unknown as { peerApiReady?: boolean }).peerApiReady === true);
  return page;
}

test('a page seeds bytes; other pages fetch and stream them, verified', async ({ browser }) => {
  const seeder = await peerPage(browser);
  const { uri, sha256 } = await seeder.evaluate(
    ([signal]) => window.peerApi.seed(signal, 3_000_000 + 123),
    [swarm.signal],
  );
  expect(uri).toMatch(/^ppspp:\/\/[0-9a-f]{64}\?len=3000123&cs=4096&hash=sha256&signal=/);
  const fetcher = await peerPage(browser);
  const got = await fetcher.evaluate((u) => window.peerApi.fetch(u), uri);
  expect(got.sha256).toBe(sha256);
  expect(got.length).toBe(3_000_123);
  // The seeding page said it seeds: its bytes count as from seeders.
  expect(got.fromSeeders).toBeGreaterThan(0);
  const streamer = await peerPage(browser);
  const streamed = await streamer.evaluate((u) => window.peerApi.stream(u), uri);
  expect(streamed.sha256).toBe(sha256);
  expect(streamed.pieces).toBeGreaterThan(1);
  // By the root hash alone: chunk size and length come from the peers, verified.
  const root = uri.slice('ppspp://'.length, uri.indexOf('?'));
  const byRoot = await peerPage(browser);
  const gotByRoot = await byRoot.evaluate(([r, s]) => window.peerApi.fetch(r, { signal: s }), [root, swarm.signal]);
  expect(gotByRoot.sha256).toBe(sha256);
  expect(gotByRoot.length).toBe(3_000_123);
});

test('clear, typed errors', async ({ browser }) => {
  const page = await peerPage(browser);
  const err = (what: string, arg: unknown) => page.evaluate(([w, a]) => window.peerApi.errorOf(w, a), [what, arg] as const);
  expect(await err('attach', { uri: 'http://example.com/a.webm' })).toMatch(/^PpsppError bad-uri: .*ppspp:\/\//);
  expect(await err('attach', { uri: swarm.uri, options: { maxConnections: 0 } })).toMatch(/^PpsppError bad-option: option maxConnections must be at least 1/);
  const noSignal = swarm.uri.replace(/&signal=[^&]*/, '');
  expect(await err('attach', { uri: noSignal })).toMatch(/^PpsppError bad-option: no signaling server/);
  const deadSignal = swarm.uri.replace(/signal=[^&]*/, `signal=${encodeURIComponent('ws://127.0.0.1:9/ws')}`);
  expect(await err('attach', { uri: deadSignal })).toMatch(/^PpsppError signaling-unreachable: cannot reach the signaling server at ws:\/\/127\.0\.0\.1:9\/ws/);
  expect(await err('attach', { uri: swarm.uri, options: { mimeType: 'video/x-unknown; codecs="nope"' } })).toMatch(/^PpsppError mse-unsupported: .*video\/x-unknown/);
  expect(await err('create', { signal: 'http://x' })).toMatch(/^PpsppError bad-option: option signal must be a ws:\/\/ or wss:\/\/ URL/);
  expect(await err('fetchWith', { target: 'ab'.repeat(20) })).toMatch(/^PpsppError bad-option: fetching by root hash needs the signal option/);
  expect(await err('attach', { uri: 'ab'.repeat(20) })).toMatch(/^PpsppError bad-option: fetching by root hash needs the signal option/);
  expect(await err('fetchWith', { target: 'ab'.repeat(21), options: { signal: swarm.signal } })).toMatch(/^PpsppError bad-uri: a root hash of 42 hex digits matches no Merkle hash function/);
});

test('a page reconnects to a restarted signaling server and is found again', async ({ browser }) => {
  const first = await startSignal();
  const bind = first.url.replace(/^ws:\/\/([^/]+)\/ws$/, '$1');
  const seeder = await peerPage(browser);
  const { uri, sha256 } = await seeder.evaluate(([signal]) => window.peerApi.seed(signal, 200_000), [first.url]);
  // The server goes away and comes back on the same address: the seeding page must rejoin.
  await first.stop();
  const again = await startSignal(bind);
  try {
    const fetcher = await peerPage(browser);
    // Reconnection backs off from about a second; the fetch waits for the seeder to rejoin.
    const got = await fetcher.evaluate((u) => window.peerApi.fetch(u), uri);
    expect(got.sha256).toBe(sha256);
  } finally {
    await again.stop();
  }
});
