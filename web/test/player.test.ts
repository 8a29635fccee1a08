/**
 * Player with the real engine (Wasm) fetching from a seeding Peer over fake WebRTC and a
 * fake signaling server, appending to a fake MediaSource: what it appends, in which
 * order, how it takes a full buffer, a failing SourceBuffer and a seek, and how attach
 * fails.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { PpsppError } from '../src/errors.js';
import { type PeerOptions, type PlayerOptions, resolvePeerOptions } from '../src/options.js';
import { engineOptions } from '../src/engine-start.js';
import { Peer } from '../src/peer.js';
import { Player, type PlayerEvents } from '../src/player.js';
import { WasmPeer } from '../src/wasm.js';
import { concat } from './bytes.js';
import { differsAt } from './fakes/bytes.js';
import { loadEngine } from './fakes/engine.js';
import {
  FakeManagedMediaSource, FakeMediaSource, type FakeSourceBuffer, FakeVideoElement, browserEvicts, installManagedMediaSource, installMedia,
  liveObjectUrls,
} from './fakes/media.js';
import { FAKE_ORIGIN, publishOnFakeOrigin } from './fakes/origin.js';
import { nextEvent, until } from './fakes/tasks.js';
import { syntheticMp4 } from './fakes/mp4.js';
import { type SyntheticWebm, syntheticWebm } from './fakes/webm.js';
import { useFakeWorld } from './fakes/world.js';

const CHUNK = 8192;

const world = useFakeWorld({ installs: [installMedia], beforeClosing: () => vi.restoreAllMocks() });
const players = world.closeAfterEach((p: Player) => p.destroy());
const peers = world.closeAfterEach((p: Peer) => p.close());

beforeAll(loadEngine);

/** Seeds `file` from a Peer (the origin); returns its URI (signal= the fake server). */
async function seed(file: Uint8Array, options: PeerOptions = {}): Promise<{ uri: string; peer: Peer }> {
  const peer = await Peer.create({ statsIntervalMs: 0, ...options });
  peers.push(peer);
  const uri = await peer.seed(file, { signal: world.server.url, chunkSize: CHUNK, name: 'video.webm' });
  return { uri, peer };
}

interface Attached {
  video: FakeVideoElement;
  player: Player;
  mediaSource: FakeMediaSource;
  log: { [K in keyof PlayerEvents]: PlayerEvents[K][] };
}

async function attach(uri: string, options: PlayerOptions = {}, prepare?: (video: FakeVideoElement) => void): Promise<Attached> {
  const video = new FakeVideoElement();
  prepare?.(video);
  const player = await Player.attach(video as unknown as HTMLVideoElement, uri, { statsIntervalMs: 0, ...options });
  players.push(player);
  const log = {} as Attached['log'];
  for (const type of ['error', 'complete', 'first-frame', 'peer-joined', 'peer-left'] as const) {
    log[type] = [] as never;
    player.on(type, (payload) => (log[type] as unknown[]).push(payload));
  }
  const mediaSource = FakeMediaSource.made.at(-1);
  if (!mediaSource) throw new Error('the Player made no MediaSource');
  return { video, player, mediaSource, log };
}

async function sourceBuffer(ms: FakeMediaSource): Promise<FakeSourceBuffer> {
  await until(() => ms.sourceBuffers.length > 0, 'a SourceBuffer');
  return ms.sourceBuffers[0]!;
}

const appendedBytes = (sb: FakeSourceBuffer): number => sb.appends.reduce((n, a) => n + a.length, 0);

/** A Cluster ID with the unknown size, as the Player writes the head of a Cluster it appends in pieces. */
const OPEN_CLUSTER_HEAD = [0x1f, 0x43, 0xb6, 0x75, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

/**
 * Checks that `appends` are the file from `start`, in order, in pieces the Player may
 * make: the init segment alone, whole Clusters, or a Cluster in pieces of whole blocks,
 * the first behind its ID with the unknown size. Returns how many Clusters came in pieces.
 */
function expectFileInPieces(media: SyntheticWebm, appends: Uint8Array[], start: number): number {
  const clusterAt = new Set(media.clusters.map((c) => c.offset));
  const { file } = media;
  let pos = start;
  let opened = 0;
  for (const a of appends) {
    const head = a.length >= 12 && OPEN_CLUSTER_HEAD.every((b, i) => a[i] === b);
    if (head) {
      expect(clusterAt.has(pos), `an open Cluster head at ${pos}, where a Cluster starts`).toBe(true);
      const sizeLength = Math.clz32(file[pos + 4]!) - 24 + 1;
      pos += 4 + sizeLength;
      expect(differsAt(a.subarray(12), file.subarray(pos, pos + a.length - 12)), `open Cluster piece at ${pos}`).toBeNull();
      pos += a.length - 12;
      opened += 1;
    } else {
      const at = pos;
      expect(differsAt(a, file.subarray(at, at + a.length)), `append at ${at}`).toBeNull();
      pos += a.length;
    }
    const boundary = pos === media.initLength || clusterAt.has(pos) || media.blockEnds.has(pos) || pos === file.length;
    expect(boundary, `an append ends at ${pos}: not a segment or block boundary`).toBe(true);
  }
  expect(pos, 'appended up to the end').toBe(file.length);
  return opened;
}

describe('Player.attach rejects', () => {
  /** A real URI of some content, signal= the fake server, with nobody seeding it. */
  const someUri = (signal = world.server.url): string => {
    const engine = WasmPeer.seeder(new Uint8Array(1000), 1024, 'sha256', signal, undefined, engineOptions(resolvePeerOptions()), 0);
    const uri = engine.uri();
    engine.free();
    return uri;
  };
  const video = (): HTMLVideoElement => new FakeVideoElement() as unknown as HTMLVideoElement;

  it('with mse-unsupported where there is no MediaSource', async () => {
    const g = globalThis as { MediaSource?: unknown };
    const ms = g.MediaSource;
    delete g.MediaSource;
    try {
      await expect(Player.attach(video(), someUri())).rejects.toMatchObject({ code: 'mse-unsupported' });
    } finally {
      g.MediaSource = ms;
    }
  });

  it('with webrtc-unsupported where there is no RTCPeerConnection', async () => {
    const g = globalThis as { RTCPeerConnection?: unknown };
    delete g.RTCPeerConnection;
    await expect(Player.attach(video(), someUri())).rejects.toMatchObject({ code: 'webrtc-unsupported' });
    expect(world.server.received).toEqual([]);
  });

  it('with bad-option for something that is not a video element, or an unknown option', async () => {
    await expect(Player.attach({} as HTMLVideoElement, someUri())).rejects.toMatchObject({ code: 'bad-option' });
    await expect(Player.attach(video(), someUri(), { speed: 2 } as PlayerOptions)).rejects.toMatchObject({
      code: 'bad-option',
      message: expect.stringContaining('speed'),
    });
  });

  it('with mse-unsupported for a mimeType option MediaSource cannot play, before joining the swarm', async () => {
    FakeMediaSource.supports = (type) => !type.includes('av01');
    await expect(Player.attach(video(), someUri(), { mimeType: 'video/mp4; codecs="av01.0.05M.08"' })).rejects.toMatchObject({
      code: 'mse-unsupported',
      message: expect.stringContaining('av01'),
    });
    expect(world.server.received).toEqual([]);
  });

  it('with bad-uri for a URI that is not one', async () => {
    await expect(Player.attach(video(), 'ppspp://not-a-root?len=5')).rejects.toMatchObject({ code: 'bad-uri' });
  });

  it('with signaling-unreachable, and lets go of the MediaSource', async () => {
    await expect(Player.attach(video(), someUri('ws://nowhere.test/ws'))).rejects.toMatchObject({ code: 'signaling-unreachable' });
    expect(liveObjectUrls()).toBe(0);
  });

  it('with signaling-unreachable within signalingTimeoutMs when the server never answers (no HTTP origin)', async () => {
    world.server.silent = true;
    const started = performance.now();
    await expect(Player.attach(video(), someUri(), { signalingTimeoutMs: 1000 })).rejects.toMatchObject({
      code: 'signaling-unreachable',
      message: expect.stringContaining('no welcome within 1000 ms'),
    });
    expect(performance.now() - started).toBeLessThan(3000);
    expect(liveObjectUrls()).toBe(0);
  });
});

describe('Player with an HTTP origin (fake fetch) and no signaling server', () => {
  /** `file` on a fake web server with its tree file; the URI names neither signaling nor the origin. */
  function publish(file: Uint8Array, misbehave?: (url: string) => 'not-found' | undefined): string {
    const { uri, http, restore } = publishOnFakeOrigin(file, CHUNK);
    if (misbehave) http.misbehave = misbehave;
    world.undoAfter(restore);
    return uri;
  }
  const httpOrigin = FAKE_ORIGIN;

  it('plays from HTTP alone: every chunk from the origin, appended in order to the end', async () => {
    const media = syntheticWebm(10, 30_000);
    const uri = publish(media.file);
    const { mediaSource, log, player } = await attach(uri, { httpOrigin });
    const sb = await sourceBuffer(mediaSource);
    await until(() => mediaSource.endOfStreamCalls > 0, 'endOfStream');
    expect(differsAt(concat(...sb.appends), media.file), 'the appends differ from the file at').toBeNull();
    expect(log.error).toEqual([]);
    expect(player.stats()).toMatchObject({ bytesFromHttp: media.file.length, bytesFromPeers: 0, connections: 0 });
  });

  /** `attach` with the p2p-unavailable events recorded (those held until it resolved too). */
  async function attachWatched(uri: string, options: PlayerOptions): Promise<Attached & { noP2p: PlayerEvents['p2p-unavailable'][] }> {
    const a = await attach(uri, options);
    const noP2p: PlayerEvents['p2p-unavailable'][] = [];
    a.player.on('p2p-unavailable', (e) => noP2p.push(e));
    return { ...a, noP2p };
  }

  /** Plays `media` to its end from HTTP; the appends are the file. */
  async function playsToTheEnd(a: Attached, media: SyntheticWebm): Promise<void> {
    const sb = await sourceBuffer(a.mediaSource);
    await until(() => a.mediaSource.endOfStreamCalls > 0, 'endOfStream');
    expect(differsAt(concat(...sb.appends), media.file), 'the appends differ from the file at').toBeNull();
    expect(a.log.error).toEqual([]);
    expect(a.player.stats()).toMatchObject({ bytesFromHttp: media.file.length, bytesFromPeers: 0 });
  }

  it('signal: false (or an empty list) plays from HTTP alone and never contacts signaling', async () => {
    for (const signal of [false, []] as const) {
      const media = syntheticWebm(6, 20_000);
      const uri = publish(media.file);
      const a = await attachWatched(uri, { httpOrigin, signal });
      await playsToTheEnd(a, media);
      expect(a.noP2p).toEqual([]);
    }
    expect(world.server.received).toEqual([]);
  });

  it('signal: false without an HTTP origin is a bad-option', async () => {
    const media = syntheticWebm(2, 5_000);
    const uri = publish(media.file);
    await expect(attach(uri, { signal: false })).rejects.toMatchObject({ code: 'bad-option', message: expect.stringContaining('HTTP origin') });
  });

  it('no WebRTC: plays from HTTP, with p2p-unavailable webrtc-unsupported, and never contacts signaling', async () => {
    const g = globalThis as { RTCPeerConnection?: unknown };
    delete g.RTCPeerConnection;
    const media = syntheticWebm(6, 20_000);
    const uri = publish(media.file);
    const a = await attachWatched(uri, { httpOrigin, signal: world.server.url });
    await playsToTheEnd(a, media);
    expect(a.noP2p).toMatchObject([{ reason: 'webrtc-unsupported' }]);
    expect(world.server.received).toEqual([]);
  });

  it('signaling unreachable: attach resolves at once, plays from HTTP with p2p-unavailable, and joins once the server is back', async () => {
    const media = syntheticWebm(6, 20_000);
    const uri = publish(media.file);
    world.server.close();
    const a = await attachWatched(uri, { httpOrigin, signal: world.server.url });
    await until(() => a.noP2p.length > 0, 'p2p-unavailable');
    expect(a.noP2p).toMatchObject([{ reason: 'signaling-unreachable' }]);
    await playsToTheEnd(a, media);
    world.server.reopen();
    await until(() => a.player.startup.joinedMs !== null, 'joined once the server is back', 4_000);
    expect(world.server.room(a.player.content.root)).toHaveLength(1);
  });

  it('signaling silent: attach does not wait for it; p2p-unavailable after signalingTimeoutMs', async () => {
    world.server.silent = true;
    const media = syntheticWebm(6, 20_000);
    const uri = publish(media.file);
    const started = performance.now();
    const a = await attachWatched(uri, { httpOrigin, signal: world.server.url, signalingTimeoutMs: 1000 });
    expect(performance.now() - started).toBeLessThan(1000);
    await playsToTheEnd(a, media);
    await until(() => a.noP2p.length > 0, 'p2p-unavailable', 5_000);
    expect(a.noP2p[0]).toMatchObject({ reason: 'signaling-unreachable', message: expect.stringContaining('no welcome within 1000 ms') });
  });

  it('fetches readAheadSeconds of media ahead of the playhead and no more; more as it plays; bytes per second played', async () => {
    // 60 s at 100 kB/s: 20 s ahead is 2 MB of 6.
    const media = syntheticWebm(60, 100_000);
    const { uri, http, restore } = publishOnFakeOrigin(media.file, CHUNK);
    world.undoAfter(restore);
    const sent = (): number => http.served.get(FAKE_ORIGIN.url) ?? 0;
    // 12 s buffered ahead, played to 8 s: the window is open to its full 20 s (it opens
    // by 2 s per second played, from 5 s).
    const a = await attach(uri, { httpOrigin, readAheadSeconds: 20, httpReadAheadSeconds: 0 }, (v) => (v.ranges = [[0, 12]]));
    const ahead = (seconds: number): number => media.clusters[seconds]!.offset;
    const playTo = (end: number): void => {
      for (let t = a.video.currentTime + 1; t <= end; t++) {
        a.video.currentTime = t;
        a.video.ranges = [[0, t + 12]];
        a.video.dispatchEvent(new Event('timeupdate'));
      }
    };
    playTo(8);
    await until(() => sent() >= ahead(28) - 2 * CHUNK, '28 s fetched');
    await new Promise((r) => setTimeout(r, 300));
    expect(sent(), 'nothing much beyond 28 s').toBeLessThan(ahead(29) + 2 * CHUNK);
    // Played to 30 s: fetched to 50 s.
    playTo(30);
    await until(() => sent() >= ahead(50) - 2 * CHUNK, '50 s fetched');
    await new Promise((r) => setTimeout(r, 300));
    expect(sent()).toBeLessThan(ahead(51) + 2 * CHUNK);
    const stats = a.player.stats();
    expect(stats.mediaSecondsPlayed).toBe(30);
    expect(stats.bytesPerSecondPlayed).toBeCloseTo(stats.bytesFromHttp / 30, 3);
    expect(a.log.error).toEqual([]);
  });

  it('the read-ahead opens as the page plays: 5 s before anything is played, 2 s more per second played', async () => {
    // 30 s at 300 kB/s: 5 s is above the 1 MiB floor.
    const media = syntheticWebm(30, 300_000);
    const { uri, http, restore } = publishOnFakeOrigin(media.file, CHUNK);
    world.undoAfter(restore);
    const sent = (): number => http.served.get(FAKE_ORIGIN.url) ?? 0;
    const a = await attach(uri, { httpOrigin, httpReadAheadSeconds: 0 }, (v) => (v.ranges = [[0, 2]]));
    const ahead = (seconds: number): number => media.clusters[seconds]!.offset;
    await until(() => sent() >= ahead(5) - 2 * CHUNK, '5 s fetched');
    await new Promise((r) => setTimeout(r, 300));
    expect(sent()).toBeLessThan(ahead(6) + 2 * CHUNK);
    // 14 s buffered, nothing played: still 5 s.
    a.video.ranges = [[0, 14]];
    a.video.dispatchEvent(new Event('timeupdate'));
    await new Promise((r) => setTimeout(r, 300));
    expect(sent()).toBeLessThan(ahead(6) + 2 * CHUNK);
    // Played to 4 s, 14 s buffered ahead: 13 s ahead, to 17 s.
    for (let t = 1; t <= 4; t++) {
      a.video.currentTime = t;
      a.video.ranges = [[0, t + 14]];
      a.video.dispatchEvent(new Event('timeupdate'));
    }
    await until(() => sent() >= ahead(17) - 2 * CHUNK, '17 s fetched');
    await new Promise((r) => setTimeout(r, 300));
    expect(sent()).toBeLessThan(ahead(18) + 2 * CHUNK);
  });

  it('httpReadAheadSeconds: alone, the page asks the origin for that much ahead', async () => {
    const media = syntheticWebm(60, 100_000);
    const { uri, http, restore } = publishOnFakeOrigin(media.file, CHUNK);
    world.undoAfter(restore);
    const sent = (): number => http.served.get(FAKE_ORIGIN.url) ?? 0;
    // Media buffered ahead: playback does not wait (it would be served whatever it waits
    // for). Played to 4 s, the read-ahead window (13 s) holds the origin's 12.
    const a = await attach(uri, { httpOrigin, httpReadAheadSeconds: 12 }, (v) => (v.ranges = [[0, 8]]));
    for (let t = 1; t <= 4; t++) {
      a.video.currentTime = t;
      a.video.ranges = [[0, t + 8]];
      a.video.dispatchEvent(new Event('timeupdate'));
    }
    const ahead = (seconds: number): number => media.clusters[seconds]!.offset;
    await until(() => sent() >= ahead(16) - 2 * CHUNK, '12 s fetched ahead of 4 s');
    await new Promise((r) => setTimeout(r, 300));
    expect(sent()).toBeLessThan(ahead(17) + 2 * CHUNK);
  });

  it('an error emitted while attach() was pending reaches a listener added after it resolved', async () => {
    const media = syntheticWebm(4, 10_000);
    const uri = publish(media.file, (url) => (url.endsWith('.tree') ? 'not-found' : undefined));
    // MediaSource opens late: the origin's 404 comes while attach() still waits for it.
    vi.spyOn(FakeMediaSource.prototype, 'open').mockImplementation(function (this: FakeMediaSource) {
      setTimeout(() => {
        this.readyState = 'open';
        this.dispatchEvent(new Event('sourceopen'));
      }, 200);
    });
    const { log } = await attach(uri, { httpOrigin });
    await until(() => log.error.length > 0, 'an error event');
    expect(log.error[0]).toMatchObject({ code: 'origin-status', fatal: true });
  });
});

describe('viewer controls', () => {
  /** A video seeded by a Peer and on a fake web server; the URI names the signaling server. */
  async function seededWithOrigin(media: SyntheticWebm): Promise<string> {
    const { uri } = await seed(media.file);
    const { restore } = publishOnFakeOrigin(media.file, CHUNK);
    world.undoAfter(restore);
    return uri;
  }

  /** Runs `f` with `navigator.connection` as given (Node has no Network Information API). */
  async function withConnection<T>(connection: object, f: () => Promise<T>): Promise<T> {
    const g = globalThis as { navigator?: unknown };
    const had = Object.getOwnPropertyDescriptor(g, 'navigator');
    Object.defineProperty(g, 'navigator', { value: { ...(had?.value as object), connection }, configurable: true, writable: true });
    try {
      return await f();
    } finally {
      if (had) Object.defineProperty(g, 'navigator', had);
      else delete g.navigator;
    }
  }

  it('upload: false: the page fetches but serves nothing; setUpload(true) lets a later page fetch from it', async () => {
    const media = syntheticWebm(6, 20_000);
    const { uri, peer } = await seed(media.file);
    const a = await attach(uri, { upload: false });
    expect(a.player.uploading).toBe(false);
    await until(() => a.player.stats().chunksHave === a.player.stats().chunkCount, 'the first page holds everything');
    peer.close();
    const b = await attach(uri);
    await until(() => b.player.stats().connections > 0, 'the second page meets the first');
    await new Promise((r) => setTimeout(r, 500));
    expect(b.player.stats().chunksHave, 'nothing from a page that does not upload').toBe(0);
    expect(a.player.stats().bytesUploaded).toBe(0);
    a.player.setUpload(true);
    await until(() => b.player.stats().chunksHave === b.player.stats().chunkCount, 'the second page completes from the first');
    expect(() => a.player.setUpload('never' as never)).toThrow(/setUpload/);
  });

  it("upload: 'auto' does not upload where the browser asks to save data or is on a cellular connection", async () => {
    const media = syntheticWebm(2, 5_000);
    const { uri } = await seed(media.file);
    for (const [connection, uploads] of [[{ saveData: true }, false], [{ type: 'cellular' }, false], [{ type: 'wifi' }, true], [{}, true]] as const) {
      const uploading = await withConnection(connection, async () => (await attach(uri)).player.uploading);
      expect(uploading, JSON.stringify(connection)).toBe(uploads);
    }
  });

  it('p2p: false: HTTP only, the signaling server unheard of, until enableP2P()', async () => {
    const media = syntheticWebm(6, 20_000);
    const uri = await seededWithOrigin(media);
    const joins = (): number => world.server.received.filter((r) => r.msg.type === 'join').length;
    const before = joins();
    const a = await attach(uri, { httpOrigin: FAKE_ORIGIN, p2p: false });
    await until(() => a.mediaSource.endOfStreamCalls > 0, 'played to the end from HTTP');
    expect(joins()).toBe(before);
    expect(a.player.stats()).toMatchObject({ bytesFromHttp: media.file.length, connections: 0 });
    a.player.enableP2P();
    await until(() => a.player.startup.joinedMs !== null, 'joined after enableP2P');
    expect(joins()).toBe(before + 1);
  });

  it('p2p: false needs an HTTP origin', async () => {
    const media = syntheticWebm(2, 5_000);
    const { uri } = await seed(media.file);
    await expect(attach(uri, { p2p: false })).rejects.toMatchObject({ code: 'bad-option', message: expect.stringContaining('HTTP origin') });
  });

  it("iceTransportPolicy: 'relay' reaches every RTCPeerConnection", async () => {
    const media = syntheticWebm(2, 5_000);
    const { uri } = await seed(media.file, { iceTransportPolicy: 'relay' });
    const a = await attach(uri, { iceTransportPolicy: 'relay' });
    await until(() => a.player.stats().connections > 0, 'a connection');
    expect(world.net.connections.length).toBeGreaterThan(0);
    for (const pc of world.net.connections) expect(pc.getConfiguration().iceTransportPolicy).toBe('relay');
  });
});

describe('ManagedMediaSource (iPhone, Safari)', () => {
  function publishHttp(file: Uint8Array): { uri: string; sent: () => number } {
    const { uri, http, restore } = publishOnFakeOrigin(file, CHUNK);
    world.undoAfter(restore);
    return { uri, sent: () => http.served.get(FAKE_ORIGIN.url) ?? 0 };
  }

  it('where MediaSource is missing: plays through ManagedMediaSource, appending only while it streams', async () => {
    world.undoAfter(installManagedMediaSource());
    // 3 MB: appended in pieces of about 1 MiB.
    const media = syntheticWebm(10, 300_000);
    const { uri } = publishHttp(media.file);
    const a = await attach(uri, { httpOrigin: FAKE_ORIGIN, readAheadSeconds: 0 });
    const ms = a.mediaSource as FakeManagedMediaSource;
    expect(ms).toBeInstanceOf(FakeManagedMediaSource);
    expect((a.video as unknown as { disableRemotePlayback?: boolean }).disableRemotePlayback).toBe(true);
    await until(() => a.player.stats().chunksHave === a.player.stats().chunkCount, 'everything fetched');
    await new Promise((r) => setTimeout(r, 100));
    const sb = ms.sourceBuffers[0];
    expect(sb?.appends.length ?? 0, 'nothing appended before startstreaming').toBe(0);
    ms.startStreaming();
    await until(() => (sb?.appends.length ?? 0) >= 2, 'appends once streaming');
    ms.endStreaming();
    const during = sb!.appends.length;
    await new Promise((r) => setTimeout(r, 200));
    // At most the append in flight when endstreaming came.
    expect(sb!.appends.length).toBeLessThanOrEqual(during + 1);
    ms.startStreaming();
    await until(() => ms.endOfStreamCalls > 0, 'endOfStream');
    expect(differsAt(concat(...sb!.appends), media.file)).toBeNull();
    expect(sb!.appendsNotStreaming).toBe(0);
    expect(a.log.error).toEqual([]);
  });

  it("mediaSource: 'managed' takes ManagedMediaSource where both exist; missing, it is mse-unsupported", async () => {
    const media = syntheticWebm(2, 5_000);
    const { uri } = publishHttp(media.file);
    const plain = await attach(uri, { httpOrigin: FAKE_ORIGIN });
    expect(plain.mediaSource).not.toBeInstanceOf(FakeManagedMediaSource);
    await expect(attach(uri, { httpOrigin: FAKE_ORIGIN, mediaSource: 'managed' })).rejects.toMatchObject({ code: 'mse-unsupported' });
    world.undoAfter(installManagedMediaSource({ keepMediaSource: true }));
    const managed = await attach(uri, { httpOrigin: FAKE_ORIGIN, mediaSource: 'managed' });
    expect(managed.mediaSource).toBeInstanceOf(FakeManagedMediaSource);
    const g = globalThis as Record<string, unknown>;
    const [ms, mms] = [g.MediaSource, g.ManagedMediaSource];
    delete g.MediaSource;
    delete g.ManagedMediaSource;
    try {
      await expect(attach(uri, { httpOrigin: FAKE_ORIGIN })).rejects.toMatchObject({ code: 'mse-unsupported', message: expect.stringContaining('ManagedMediaSource') });
    } finally {
      g.MediaSource = ms;
      g.ManagedMediaSource = mms;
    }
  });

  it('media the browser evicts ahead of the playhead is appended again from the engine, not fetched again', async () => {
    world.undoAfter(installManagedMediaSource());
    const media = syntheticWebm(10, 30_000);
    const { uri, sent } = publishHttp(media.file);
    const a = await attach(uri, { httpOrigin: FAKE_ORIGIN, readAheadSeconds: 0 });
    const ms = a.mediaSource as FakeManagedMediaSource;
    ms.startStreaming();
    await until(() => ms.endOfStreamCalls > 0, 'all appended');
    const sb = ms.sourceBuffers[0]!;
    sb.ranges = [[0, 10]];
    a.video.ranges = [[0, 10]];
    const fetched = sent();
    const before = sb.appends.length;
    a.video.currentTime = 2;
    browserEvicts(sb, 4, 10);
    a.video.ranges = [[0, 4]];
    await until(() => ms.endOfStreamCalls > 1, 'appended again to the end');
    const again = concat(...sb.appends.slice(before));
    // From the Cluster at or before 4 s to the end of the file.
    const from = media.file.length - again.length;
    expect(media.clusters.some((c) => c.offset === from && c.time <= 4), `appended again from byte ${from}`).toBe(true);
    expect(differsAt(again, media.file.subarray(from))).toBeNull();
    expect(sent(), 'nothing fetched again').toBe(fetched);
    expect(a.player.stats().browserEvictions).toBe(1);
  });
});

describe('Player over fake WebRTC and MediaSource, with the real engine', () => {
  it('appends the init segment alone, then whole Clusters in order, sets the duration and ends the stream', async () => {
    const media = syntheticWebm(20, 20_000);
    const { uri } = await seed(media.file);
    const { mediaSource, log, player } = await attach(uri);
    const sb = await sourceBuffer(mediaSource);
    await until(() => mediaSource.endOfStreamCalls > 0, 'endOfStream');

    expect(mediaSource.sourceBuffers).toHaveLength(1);
    expect(sb.mimeType).toBe(media.mimeType);
    expect(mediaSource.duration).toBe(20);
    const appends = sb.appends;
    expect(appends[0]).toEqual(media.file.subarray(0, media.initLength));
    expect(differsAt(concat(...appends), media.file), 'the appends differ from the file at').toBeNull();
    const clusterAt = new Set(media.clusters.map((c) => c.offset));
    let at = media.initLength;
    for (const a of appends.slice(1)) {
      expect(clusterAt.has(at), `an append starts at ${at}, not at a Cluster`).toBe(true);
      at += a.length;
    }
    expect(sb.ops.filter((o) => o.op !== 'append')).toEqual([]);
    expect(mediaSource.endOfStreamCalls).toBe(1);
    expect(mediaSource.readyState).toBe('ended');
    expect(log.error).toEqual([]);
    expect(log.complete).toHaveLength(1);
    expect(log['peer-joined']).toMatchObject([{ seeder: true }]);
    expect(differsAt(player.read(0, media.file.length), media.file)).toBeNull();
    expect(player.stats()).toMatchObject({ bytesFromSeeders: media.file.length, rebufferMs: 0, stalls: 0 });
  });

  it('a fragmented MP4: the init segment alone, then whole moof + mdat fragments in order', async () => {
    // 20 fragments of 40 KB from a seeder sending 1 MB/s: fragments arrive in pieces.
    const media = syntheticMp4(20, 40_000);
    const { uri } = await seed(media.file, { uploadLimit: 1_000_000 });
    const { mediaSource, log } = await attach(uri);
    const sb = await sourceBuffer(mediaSource);
    await until(() => mediaSource.endOfStreamCalls > 0, 'endOfStream');
    expect(sb.mimeType).toMatch(/^video\/mp4; codecs="avc1\.64001f,mp4a\.40\.2"$/);
    expect(mediaSource.duration).toBe(20);
    const appends = sb.appends;
    expect(appends[0]).toEqual(media.file.subarray(0, media.initLength));
    expect(differsAt(concat(...appends), media.file), 'the appends differ from the file at').toBeNull();
    const fragmentAt = new Set(media.fragments.map((f) => f.offset));
    let at = media.initLength;
    for (const a of appends.slice(1)) {
      expect(fragmentAt.has(at), `an append starts at ${at}, not at a moof`).toBe(true);
      at += a.length;
    }
    expect(appends.length, 'several appends (the fragments arrived over time)').toBeGreaterThan(2);
    expect(log.error).toEqual([]);
  });

  it('appends a Cluster still arriving as its whole blocks behind an unknown-size head', async () => {
    // 256 KiB Clusters of 32 blocks, from a seeder sending 400 KB/s: each takes over 0.6 s.
    const media = syntheticWebm(4, 256 * 1024, 32);
    const { uri } = await seed(media.file, { uploadLimit: 400_000 });
    const { mediaSource, log } = await attach(uri);
    const sb = await sourceBuffer(mediaSource);
    await until(() => mediaSource.endOfStreamCalls > 0, 'endOfStream', 20_000);
    expect(sb.appends[0]).toEqual(media.file.subarray(0, media.initLength));
    const opened = expectFileInPieces(media, sb.appends.slice(1), media.initLength);
    expect(opened, 'Clusters appended in pieces').toBeGreaterThan(0);
    expect(log.error).toEqual([]);
  }, 30_000);

  it('within maxMemoryBytes: holds at most that, lets played chunks go, and appends the whole file in order', async () => {
    // 2.4 MB of video against a bound of 1 MiB.
    const media = syntheticWebm(40, 60_000);
    const { uri } = await seed(media.file);
    const bound = 1 << 20;
    const { video, mediaSource, log, player } = await attach(uri, { maxMemoryBytes: bound });
    const sb = await sourceBuffer(mediaSource);
    // Playback: a second of media every 20 ms, as far as what was appended.
    let most = 0;
    for (let i = 0; i < 2000 && mediaSource.endOfStreamCalls === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      const appendedSeconds = (appendedBytes(sb) / media.file.length) * 40;
      video.currentTime = Math.min(video.currentTime + 1, Math.max(0, appendedSeconds - 2));
      video.dispatchEvent(new Event('timeupdate'));
      most = Math.max(most, player.stats().chunksHave * CHUNK);
    }
    expect(mediaSource.endOfStreamCalls).toBe(1);
    expect(differsAt(concat(...sb.appends), media.file), 'the appends differ from the file at').toBeNull();
    expect(most, 'bytes held at most').toBeLessThanOrEqual(bound);
    const stats = player.stats();
    expect(stats.chunksEvicted).toBeGreaterThan(0);
    expect(stats.chunksVerified).toBe(Math.ceil(media.file.length / CHUNK));
    expect(log.error).toEqual([]);
  }, 60_000);

  it('first-frame fires once, on the first loadeddata', async () => {
    const media = syntheticWebm(5, 10_000);
    const { uri } = await seed(media.file);
    const { video, mediaSource, log, player } = await attach(uri);
    const sb = await sourceBuffer(mediaSource);
    await until(() => sb.appends.length >= 2, 'a media segment appended');
    expect(player.timeToFirstFrameMs).toBeNull();
    video.dispatchEvent(new Event('loadeddata'));
    video.dispatchEvent(new Event('loadeddata'));
    expect(log['first-frame']).toHaveLength(1);
    expect(log['first-frame'][0]!.ms).toBeGreaterThan(0);
    expect(player.timeToFirstFrameMs).toBe(log['first-frame'][0]!.ms);
  });

  it('startup: every step to the first frame is timed, in the order they happen', async () => {
    const media = syntheticWebm(5, 10_000);
    const { uri } = await seed(media.file);
    const { video, mediaSource, player } = await attach(uri);
    const atAttach = player.startup;
    expect(atAttach.engineMs).not.toBeNull();
    expect(atAttach.joinedMs).not.toBeNull();
    expect(atAttach.firstFrameMs).toBeNull();
    const sb = await sourceBuffer(mediaSource);
    // What the element reports once the first keyframe is in (appends decode nothing here).
    video.ranges = [[0, 1]];
    await until(() => sb.appends.length >= 2 && player.startup.firstBufferedMs !== null, 'a media segment appended and buffered');
    video.dispatchEvent(new Event('loadeddata'));
    const s = player.startup;
    const steps = [s.engineMs, s.joinedMs, s.firstPeerMs, s.firstChunkMs, s.firstAppendMs, s.firstBufferedMs, s.firstFrameMs];
    for (const v of steps) expect(v).not.toBeNull();
    for (let i = 1; i < steps.length; i++) expect(steps[i]!, `step ${i} after step ${i - 1}`).toBeGreaterThanOrEqual(steps[i - 1]!);
    expect(s.firstFrameMs).toBe(player.timeToFirstFrameMs);
    // A copy: the caller cannot change the Player's record.
    s.engineMs = -1;
    expect(player.startup.engineMs).not.toBe(-1);
  });

  it('after QuotaExceededError, removes played media behind the playhead and appends the same segment again', async () => {
    const media = syntheticWebm(10, 20_000);
    FakeMediaSource.onSourceBuffer = (sb) => {
      sb.ranges = [[0, 20]];
      sb.throwOnAppend.push(undefined, new DOMException('the buffer is full', 'QuotaExceededError'));
    };
    const { uri } = await seed(media.file);
    const { video, mediaSource, log } = await attach(uri);
    video.currentTime = 20;
    const sb = await sourceBuffer(mediaSource);
    await until(() => mediaSource.endOfStreamCalls > 0, 'endOfStream');
    expect(differsAt(concat(...sb.appends), media.file), 'the appends differ from the file at').toBeNull();
    // The init segment, then the refused append (not recorded), a remove keeping 5 s, the same append.
    expect(sb.ops[0]?.op).toBe('append');
    expect(sb.ops[1]).toEqual({ op: 'remove', start: 0, end: 15 });
    expect(sb.ops[2]?.op).toBe('append');
    expect(log.error).toEqual([]);
  });

  it('after QuotaExceededError with nothing to remove, waits and appends the same segment again', async () => {
    const media = syntheticWebm(10, 20_000);
    FakeMediaSource.onSourceBuffer = (sb) => {
      sb.throwOnAppend.push(undefined, new DOMException('the buffer is full', 'QuotaExceededError'));
    };
    const { uri } = await seed(media.file);
    const { mediaSource, log } = await attach(uri);
    const sb = await sourceBuffer(mediaSource);
    await until(() => mediaSource.endOfStreamCalls > 0, 'endOfStream');
    expect(differsAt(concat(...sb.appends), media.file), 'the appends differ from the file at').toBeNull();
    expect(sb.ops.every((o) => o.op === 'append')).toBe(true);
    expect(log.error).toEqual([]);
  });

  it('an append MediaSource refuses is a media-error; nothing more is appended or fetched', async () => {
    const media = syntheticWebm(10, 20_000);
    FakeMediaSource.onSourceBuffer = (sb) => {
      sb.throwOnAppend.push(undefined, new DOMException('cannot parse', 'NotSupportedError'));
    };
    const { uri, peer } = await seed(media.file);
    // Slow enough that the download is under way when the second append fails.
    const { player, mediaSource } = await attach(uri, { downloadLimit: 100_000 });
    const left = nextEvent(peer, 'peer-left');
    let completed = false;
    player.on('complete', () => (completed = true));
    const e = await nextEvent(player, 'error');
    expect(e).toMatchObject({ code: 'media-error', fatal: true, message: expect.stringContaining('NotSupportedError: cannot parse') });
    // The player left the swarm: the seeder sees it go, and the download stops there.
    await left;
    const held = player.stats().bytesDownloaded;
    const have = player.have();
    await new Promise((r) => setTimeout(r, 300));
    expect(player.stats().bytesDownloaded).toBe(held);
    expect(held).toBeLessThan(media.file.length);
    expect(player.have()).toEqual(have);
    expect(completed).toBe(false);
    expect(() => player.read(0, 1)).toThrow(/swarm was left/);
    const sb = mediaSource.sourceBuffers[0]!;
    expect(sb.appends).toEqual([media.file.subarray(0, media.initLength)]);
    expect(mediaSource.endOfStreamCalls).toBe(0);
    player.destroy(); // still releases the video element
  });

  it('a file whose codecs MediaSource cannot play is an mse-unsupported error event', async () => {
    const media = syntheticWebm(5, 10_000);
    FakeMediaSource.supports = (type) => !type.includes('vp9');
    const { uri } = await seed(media.file);
    const { player, mediaSource } = await attach(uri);
    const e: PpsppError = await nextEvent(player, 'error');
    expect(e.code).toBe('mse-unsupported');
    expect(e.message).toContain(media.mimeType);
    expect(mediaSource.sourceBuffers).toEqual([]);
  });

  it("the video element's error is a media-error event", async () => {
    const media = syntheticWebm(5, 10_000);
    const { uri } = await seed(media.file);
    const { player, video } = await attach(uri);
    const error = nextEvent(player, 'error');
    video.failWith('PIPELINE_ERROR_DECODE');
    expect(await error).toMatchObject({ code: 'media-error', message: expect.stringContaining('PIPELINE_ERROR_DECODE') });
  });

  it('a seek outside the buffer moves the engine playhead near the new position, and appending goes on from the Cluster there', async () => {
    // 40 s of 60 KB Clusters (2.4 MB), from a seeder sending 1 MB/s.
    const media = syntheticWebm(40, 60_000);
    const { uri } = await seed(media.file, { uploadLimit: 1_000_000 });
    const { video, mediaSource, log } = await attach(uri, { readAheadBytes: 1 << 20 });
    const sb = await sourceBuffer(mediaSource);
    await until(() => sb.appends.length >= 2, 'a first media segment');
    expect(appendedBytes(sb)).toBeLessThan(media.file.length / 4);

    let resumed: number | null = null;
    sb.onAppend = () => {
      if (resumed === null && sb.ops.some((o) => o.op === 'abort')) resumed = sb.ops.length;
    };
    const playhead = vi.spyOn(WasmPeer.prototype, 'setPlayhead');
    video.seekTo(30);
    // The engine's playhead moved at once: to the byte estimate of 30 s, less the up to
    // 512 KiB the Player steps back to find a Cluster start (under 9 Clusters here).
    expect(playhead).toHaveBeenCalled();
    const moved = playhead.mock.calls[0]![0] * CHUNK;
    expect(moved).toBeGreaterThan(media.clusters[20]!.offset);
    expect(moved).toBeLessThanOrEqual(media.clusters[30]!.offset);
    await until(() => resumed !== null, 'an append after the seek', 15_000);
    const abortAt = sb.ops.findIndex((o) => o.op === 'abort');
    const first = sb.ops[resumed! - 1];
    if (first?.op !== 'append') throw new Error('no append after the abort');
    // It starts at the first Cluster from the engine's new playhead: at or before the target.
    const cluster = media.clusters.find((c) => c.offset >= moved);
    expect(cluster).toBeDefined();
    expect(first.bytes.subarray(0, 64)).toEqual(media.file.subarray(cluster!.offset, cluster!.offset + 64));
    expect(cluster!.time).toBeLessThanOrEqual(30);
    // Until it was found, the Player did not move the engine back to where it was appending.
    expect(playhead.mock.calls.every(([chunk]) => chunk * CHUNK >= moved)).toBe(true);
    playhead.mockRestore();

    // From there on, in order to the end, and the stream ends.
    await until(() => mediaSource.endOfStreamCalls > 0, 'endOfStream', 15_000);
    const after = sb.ops.slice(abortAt + 1).flatMap((o) => (o.op === 'append' ? [o.bytes] : []));
    expect(differsAt(concat(...after), media.file.subarray(cluster!.offset)), 'the appends after the seek differ at').toBeNull();
    expect(log.error).toEqual([]);
  }, 40_000);

  it('within maxMemoryBytes, a seek probes no further than the engine fetches, which then fetches on from the Cluster found', async () => {
    // 600 KB Clusters against a 1 MiB bound: the engine fetches 768 KiB from its playhead,
    // and the Player's 512 KiB probe at some targets lies inside one Cluster. Doubled, the
    // probe would wait for bytes beyond that window forever; and the Cluster found ends
    // beyond it, so the engine must fetch on from the Cluster.
    const media = syntheticWebm(12, 600_000);
    const { uri } = await seed(media.file);
    const { video, mediaSource, log } = await attach(uri, { maxMemoryBytes: 1 << 20 });
    const sb = await sourceBuffer(mediaSource);
    await until(() => sb.appends.length >= 2, 'a first media segment');
    // A target whose probe (the estimate less 512 KiB, chunk-aligned, 512 KiB long) holds
    // no Cluster start.
    const { file, initLength, clusters, durationSeconds } = media;
    const probe = 512 << 10;
    const probeStart = (t: number): number => {
      const estimate = initLength + Math.floor((t / durationSeconds) * (file.length - initLength));
      return Math.floor(Math.max(initLength, estimate - probe) / CHUNK) * CHUNK;
    };
    let target: number | null = null;
    for (let t = 6; t < durationSeconds && target === null; t += 0.01) {
      const start = probeStart(t);
      if (!clusters.some((c) => c.offset >= start && c.offset < start + probe)) target = t;
    }
    if (target === null) throw new Error('no target with a probe inside one Cluster');
    let resumed: number | null = null;
    sb.onAppend = () => {
      if (resumed === null && sb.ops.some((o) => o.op === 'abort')) resumed = sb.ops.length;
    };
    video.seekTo(target);
    await until(() => resumed !== null, 'an append after the seek', 15_000);
    const first = sb.ops[resumed! - 1];
    if (first?.op !== 'append') throw new Error('no append after the abort');
    // A Cluster start at or before the target.
    const cluster = clusters.find((c) => differsAt(first.bytes.subarray(0, 64), file.subarray(c.offset, c.offset + 64)) === null);
    expect(cluster, 'the first append after the seek starts a Cluster').toBeDefined();
    expect(cluster!.time).toBeLessThanOrEqual(target);
    expect(log.error).toEqual([]);
  }, 30_000);

  it('destroy leaves the swarm and lets go of the video element', async () => {
    const media = syntheticWebm(5, 10_000);
    const { uri, peer } = await seed(media.file);
    const { player, video, mediaSource } = await attach(uri);
    await sourceBuffer(mediaSource);
    const left = nextEvent(peer, 'peer-left');
    let after = 0;
    player.on('progress', () => (after += 1));
    player.destroy();
    expect(liveObjectUrls()).toBe(0);
    expect(video.src).toBe('');
    expect(video.loads).toBe(1);
    expect(mediaSource.readyState).toBe('closed');
    await left;
    expect(after).toBe(0);
    player.destroy(); // twice is harmless
  });
});
