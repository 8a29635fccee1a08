/**
 * Swarm with the real engine (Wasm) over fake WebRTC and a fake signaling server: what
 * peers exchange is real PPSPP, so content, verification, progress and peer events are
 * the engine's own.
 */
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PpsppError } from '../src/errors.js';
import { type PeerOptions, type ResolvedPeerOptions, resolvePeerOptions } from '../src/options.js';
import { engineOptions } from '../src/engine-start.js';
import { Swarm, type SwarmEvents } from '../src/swarm.js';
import { WasmPeer, parseUriLoaded } from '../src/wasm.js';
import { differsAt } from './fakes/bytes.js';
import { loadEngine } from './fakes/engine.js';
import { nextEvent, until, untilTasks } from './fakes/tasks.js';
import { randomBytes } from './fakes/webm.js';
import { useFakeWorld } from './fakes/world.js';

const CHUNK = 1024;

const world = useFakeWorld({ beforeClosing: () => vi.useRealTimers() });
const swarms = world.closeAfterEach((s: Swarm) => s.close());

beforeAll(loadEngine);

function resolved(o: PeerOptions = {}): ResolvedPeerOptions {
  return resolvePeerOptions({ statsIntervalMs: 0, ...o });
}

function seeder(data: Uint8Array, o: PeerOptions = {}): Swarm {
  const r = resolved(o);
  const engine = WasmPeer.seeder(data, CHUNK, 'sha256', world.server.url, 'test.bin', engineOptions(r), performance.now());
  const swarm = new Swarm(engine, parseUriLoaded(engine.uri()), { signal: world.server.url, options: r, seeding: true });
  swarms.push(swarm);
  return swarm;
}

function fetcher(uri: string, o: PeerOptions = {}): Swarm {
  const r = resolved(o);
  const engine = WasmPeer.fetcher(uri, engineOptions(r), performance.now());
  const swarm = new Swarm(engine, parseUriLoaded(uri), { signal: world.server.url, options: r, seeding: false });
  swarms.push(swarm);
  return swarm;
}

type Log = { [K in keyof SwarmEvents]: SwarmEvents[K][] };

/** Every event `swarm` emits, by type. */
function record(swarm: Swarm): Log {
  const log = {
    'peer-joined': [],
    'peer-left': [],
    'chunk-verified': [],
    'chunk-rejected': [],
    'origin-corrupt': [],
    'p2p-unavailable': [],
    'storage-fallback': [],
    progress: [],
    complete: [],
    'live-edge': [],
    'live-restarted': [],
    stats: [],
    error: [],
  } as Log;
  for (const type of Object.keys(log) as (keyof SwarmEvents)[]) {
    swarm.on(type, (payload) => (log[type] as unknown[]).push(payload));
  }
  return log;
}

/** The swarm's peer id in the fake server's room (the remote its peers see). */
function idOf(swarm: Swarm, index: number): string {
  const id = world.server.room(swarm.content.root)[index];
  if (id === undefined) throw new Error(`no peer ${index} in the room`);
  return id;
}

describe('Swarm over fake WebRTC, with the real engine', () => {
  it('a fetcher gets the content from a seeder: every chunk verified once, progress to the end, complete once', async () => {
    const data = randomBytes(200 * CHUNK + 123, 7);
    const chunks = Math.ceil(data.length / CHUNK);
    const seed = seeder(data);
    await seed.start();
    const seedLog = record(seed);
    const fetch = fetcher(seed.uri);
    const log = record(fetch);
    const complete = nextEvent(fetch, 'complete');
    await fetch.start();
    await complete;

    expect(fetch.complete).toBe(true);
    expect(differsAt(fetch.read(0, data.length), data)).toBeNull();
    expect(fetch.haveRanges()).toEqual([[0, chunks]]);
    expect(fetch.verifiedEnd(0)).toBe(data.length);
    const verified = log['chunk-verified'].map((e) => e.chunk).sort((a, b) => a - b);
    expect(verified).toEqual([...Array(chunks).keys()]);
    const seederHandle = log['peer-joined'][0]?.peer;
    expect(log['peer-joined']).toEqual([{ peer: seederHandle, remote: idOf(seed, 0), seeder: true }]);
    expect(log['chunk-verified'].every((e) => e.peer === seederHandle)).toBe(true);
    const haves = log.progress.map((p) => p.have);
    expect(haves).toEqual([...haves].sort((a, b) => a - b));
    expect(log.progress.at(-1)).toEqual({ have: chunks, total: chunks });
    expect(log.complete).toHaveLength(1);
    expect(log.error).toEqual([]);
    expect(log['chunk-rejected']).toEqual([]);

    const stats = fetch.stats();
    expect(stats).toMatchObject({
      chunksHave: chunks,
      chunkCount: chunks,
      chunksVerified: chunks,
      chunksRejected: 0,
      connections: 1,
      bytesFromSeeders: data.length,
      bytesFromPeers: 0,
      offload: 0,
    });
    expect(stats.channels).toHaveLength(1);
    expect(stats.channels[0]).toMatchObject({ peer: seederHandle, remote: idOf(seed, 0), seeder: true });
    // The seeder saw a viewer, not a seeder, and uploaded at least the whole content.
    expect(seedLog['peer-joined']).toEqual([{ peer: expect.any(Number), remote: idOf(fetch, 1), seeder: false }]);
    expect(seed.stats().bytesUploaded).toBeGreaterThanOrEqual(data.length);
    expect(await fetch.selectedPairs()).toEqual([{ local: '127.0.0.1', remote: '127.0.0.1', localType: 'host', remoteType: 'host' }]);
  });

  it('chunks share messages between pages that both read them so, and go one per message otherwise', async () => {
    const data = randomBytes(300 * CHUNK, 11);
    const chunks = data.length / CHUNK;
    /** The fetcher's datagrams received, with `seederOptions` and `fetcherOptions`. */
    const received = async (seederOptions: PeerOptions, fetcherOptions: PeerOptions): Promise<number> => {
      const seed = seeder(data, seederOptions);
      await seed.start();
      const fetch = fetcher(seed.uri, fetcherOptions);
      const complete = nextEvent(fetch, 'complete');
      await fetch.start();
      await complete;
      expect(differsAt(fetch.read(0, data.length), data)).toBeNull();
      expect(fetch.stats()).toMatchObject({ chunksVerified: chunks, chunksRejected: 0 });
      const got = fetch.stats().datagramsReceived;
      fetch.close();
      seed.close();
      return got;
    };
    const batched = await received({}, {});
    expect(batched).toBeLessThan(chunks / 2);
    // Either side may keep to one chunk per message: the seeder by its own option, the
    // fetcher by not saying it reads batches.
    expect(await received({ dataBatchBytes: 0 }, {})).toBeGreaterThanOrEqual(chunks);
    expect(await received({}, { dataBatchBytes: 0 })).toBeGreaterThanOrEqual(chunks);
  });

  it('a fetcher that completed serves a late one after the seeder left: all from peers, offload 1', async () => {
    const data = randomBytes(120 * CHUNK, 8);
    const seed = seeder(data);
    await seed.start();
    const first = fetcher(seed.uri);
    const firstLog = record(first);
    const firstDone = nextEvent(first, 'complete');
    await first.start();
    await firstDone;
    const seederId = idOf(seed, 0);
    const firstId = idOf(first, 1);
    const left = nextEvent(first, 'peer-left');
    seed.close();
    expect(await left).toMatchObject({ remote: seederId });
    await until(() => world.server.room(seed.content.root).length === 1, 'the seeder left the room');
    expect(world.server.room(seed.content.root)).toEqual([firstId]);

    const late = fetcher(seed.uri);
    const log = record(late);
    const done = nextEvent(late, 'complete');
    await late.start();
    await done;
    expect(differsAt(late.read(0, data.length), data)).toBeNull();
    expect(log['peer-joined']).toEqual([{ peer: expect.any(Number), remote: firstId, seeder: false }]);
    expect(late.stats()).toMatchObject({ bytesFromPeers: data.length, bytesFromSeeders: 0, offload: 1 });
    expect(first.stats().bytesUploaded).toBeGreaterThanOrEqual(data.length);
    // The seeder's departure was one peer-left, whichever came first: its PPSPP close or the channel's.
    expect(firstLog['peer-left']).toHaveLength(1);
  });

  it('a peer whose data channel closes mid-transfer is a peer-left, and the engine forgets it', async () => {
    const data = randomBytes(400 * CHUNK, 9);
    const seed = seeder(data, { uploadLimit: 100_000 });
    await seed.start();
    const fetch = fetcher(seed.uri);
    const log = record(fetch);
    const joined = nextEvent(fetch, 'peer-joined');
    await fetch.start();
    const { peer } = await joined;
    await nextEvent(fetch, 'progress', (p) => p.have >= 10);
    // The seeder's end of the channel closes (its tab crashed, its network went away).
    const ends = world.net.openChannels();
    expect(ends).toHaveLength(2);
    const seederEnd = ends.find((c) => c.pc.localDescription?.type === 'answer');
    expect(seederEnd).toBeDefined();
    const left = nextEvent(fetch, 'peer-left');
    seederEnd?.close();
    expect(await left).toEqual({ peer, remote: idOf(seed, 0), reason: 'connection closed' });
    expect(fetch.stats()).toMatchObject({ connections: 0, peers: 0 });
    expect(fetch.complete).toBe(false);
    // What was verified stays readable: the run of chunks from the first one verified
    // (rarest-first goes through the content in the engine's own order, not from 0).
    const first = log['chunk-verified'][0]!.chunk * CHUNK;
    const end = fetch.verifiedEnd(first);
    expect(end).toBeGreaterThan(first);
    expect(differsAt(fetch.read(first, end), data.subarray(first, end))).toBeNull();
    expect(log['peer-left']).toHaveLength(1);
  });

  it('a chunk corrupted on the way is rejected: chunk-rejected, a verification-failed error, the peer dropped, nothing of it kept', async () => {
    const data = randomBytes(100 * CHUNK, 10);
    const seed = seeder(data);
    await seed.start();
    let corrupted = 0;
    world.net.intercept = ({ data: bytes }) => {
      // The first datagram that carries a whole chunk: its last byte is chunk data.
      if (corrupted === 0 && bytes.length > CHUNK) {
        corrupted += 1;
        const copy = new Uint8Array(bytes);
        copy[copy.length - 1]! ^= 0xff;
        return copy;
      }
      return bytes;
    };
    const fetch = fetcher(seed.uri);
    const log = record(fetch);
    const joined = nextEvent(fetch, 'peer-joined');
    const rejected = nextEvent(fetch, 'chunk-rejected');
    const left = nextEvent(fetch, 'peer-left');
    await fetch.start();
    const { peer } = await joined;
    const r = await rejected;
    expect(r).toMatchObject({ peer, reason: expect.any(String) });
    const l = await left;
    expect(l).toMatchObject({ peer, remote: idOf(seed, 0) });
    expect(log.error.map((e: PpsppError) => e.code)).toEqual(['verification-failed']);
    expect(log.error[0]?.message).toContain(`chunk ${r.chunk}`);
    expect(fetch.stats()).toMatchObject({ chunksRejected: 1, connections: 0 });
    const held = fetch.haveRanges().some(([a, b]) => a <= r.chunk && r.chunk < b);
    expect(held, 'the rejected chunk is not held').toBe(false);
    // Its connection is closed, and the seeder's end learns of it.
    const offered = world.net.connections.find((pc) => pc.localDescription?.type === 'offer');
    expect(offered?.connectionState).toBe('closed');
    await until(() => seed.stats().connections === 0, "the seeder's connection closes too");
  });

  it('a URI whose len= is wrong: one fatal bad-uri error with the real length, and the honest seeder kept', async () => {
    const data = randomBytes(100 * CHUNK + 300, 11);
    const seed = seeder(data);
    await seed.start();
    const wrong = seed.uri.replace(`len=${data.length}`, `len=${data.length - 100}`);
    expect(wrong).not.toBe(seed.uri);
    const fetch = fetcher(wrong);
    const log = record(fetch);
    const failed = nextEvent(fetch, 'error');
    await fetch.start();
    const err: PpsppError = await failed;
    expect(err).toMatchObject({ code: 'bad-uri', fatal: true });
    expect(err.message).toContain(`len=${data.length - 100}`);
    expect(err.message).toContain(`the content is ${data.length} bytes`);
    // A while on: nothing more is reported, and the seeder stays.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(log.error).toHaveLength(1);
    expect(log['chunk-rejected']).toEqual([]);
    expect(log['peer-left']).toEqual([]);
    expect(fetch.stats()).toMatchObject({ chunksRejected: 0, connections: 1 });
  });

  it('completes through a network that loses a tenth of the datagrams (the engine resends)', async () => {
    const data = randomBytes(80 * CHUNK, 11);
    const seed = seeder(data);
    await seed.start();
    let n = 0;
    world.net.intercept = ({ data: bytes }) => (++n % 10 === 0 ? null : bytes);
    const fetch = fetcher(seed.uri);
    const done = nextEvent(fetch, 'complete', undefined, 25_000);
    await fetch.start();
    await done;
    expect(differsAt(fetch.read(0, data.length), data)).toBeNull();
    expect(world.net.delivered).toBeLessThan(world.net.sent);
    expect(seed.stats().retransmissions).toBeGreaterThan(0);
  }, 30_000);

  it('a seeder that leaves mid-transfer is one peer-left; the fetcher completes from the other seeder', async () => {
    const data = randomBytes(200 * CHUNK, 12);
    const a = seeder(data, { uploadLimit: 100_000 });
    await a.start();
    const b = seeder(data, { uploadLimit: 100_000 });
    await b.start();
    expect(b.content.root).toBe(a.content.root);
    const fetch = fetcher(a.uri);
    const log = record(fetch);
    const done = nextEvent(fetch, 'complete', undefined, 15_000);
    await fetch.start();
    await until(() => log['peer-joined'].length === 2 && fetch.stats().chunksHave >= 20, 'both seeders joined, some chunks in');
    const aId = idOf(a, 0);
    a.close();
    await done;
    expect(differsAt(fetch.read(0, data.length), data)).toBeNull();
    expect(log['peer-left']).toEqual([{ peer: expect.any(Number), remote: aId, reason: expect.any(String) }]);
    expect(fetch.stats()).toMatchObject({ connections: 1, bytesFromSeeders: data.length });
  }, 20_000);

  it('keeps to maxConnections', async () => {
    const data = randomBytes(50 * CHUNK, 13);
    const seeds = [seeder(data), seeder(data), seeder(data)];
    for (const seed of seeds) await seed.start();
    const fetch = fetcher(seeds[0]!.uri, { maxConnections: 2 });
    const log = record(fetch);
    const done = nextEvent(fetch, 'complete');
    await fetch.start();
    await done;
    expect(differsAt(fetch.read(0, data.length), data)).toBeNull();
    expect(log['peer-joined']).toHaveLength(2);
    expect(fetch.stats().connections).toBe(2);
    const served = seeds.filter((seed) => seed.stats().channels.some((c) => !c.seeder));
    expect(served).toHaveLength(2);
  });

  // An origin is asked only for chunks due for playback or held by no other peer; other
  // origins do not count as such peers, or with two seeders and no playhead (Peer.fetch)
  // neither would be asked (engine_pair.rs has the engine's side).
  it('two seeders and no other peer, preferPeers on (the default): the fetch completes', async () => {
    const data = randomBytes(50 * CHUNK, 20);
    const seeds = [seeder(data), seeder(data)];
    for (const seed of seeds) await seed.start();
    const fetch = fetcher(seeds[0]!.uri);
    const done = nextEvent(fetch, 'complete', undefined, 1_000);
    await fetch.start();
    await done;
  });

  it('stats() after close() gives the figures at close, not an error from the freed engine', async () => {
    const data = randomBytes(20 * CHUNK, 21);
    const seed = seeder(data);
    await seed.start();
    const fetch = fetcher(seed.uri);
    const done = nextEvent(fetch, 'complete', undefined, 1_000);
    await fetch.start();
    await done;
    const before = fetch.stats();
    fetch.close();
    const after = fetch.stats();
    expect(after.chunksHave).toBe(20);
    expect(after.bytesDownloaded).toBe(before.bytesDownloaded);
    expect(fetch.stats()).toBe(after);
  });

  it('start() rejects with signaling-unreachable when the server cannot be reached', async () => {
    const data = randomBytes(10 * CHUNK, 14);
    const seed = seeder(data);
    world.server.close();
    await expect(seed.start()).rejects.toMatchObject({ code: 'signaling-unreachable' });
  });

  it('ignores malformed signaling, and drops a connection whose offer cannot be used', async () => {
    const data = randomBytes(10 * CHUNK, 15);
    const seed = seeder(data);
    const log = record(seed);
    await seed.start();
    const me = idOf(seed, 0);
    const stranger = 'f'.repeat(32);
    for (const junk of [null, 'offer', 42, { kind: 'answer', sdp: 'v=0' }, { kind: 'candidate', candidate: {} }, { kind: 'offer' }]) {
      world.server.inject(me, stranger, junk);
    }
    world.server.inject(me, stranger, { kind: 'offer', sdp: 'v=0 not a real offer' });
    await until(() => world.net.connections.length === 1 && world.net.connections[0]!.connectionState === 'closed', 'the bad offer\'s connection is closed');
    expect(seed.stats().connections).toBe(0);
    expect(log['peer-joined']).toEqual([]);
    expect(log['peer-left']).toEqual([]);
    // And it still serves a real peer.
    const fetch = fetcher(seed.uri);
    const done = nextEvent(fetch, 'complete');
    await fetch.start();
    await done;
    expect(differsAt(fetch.read(0, data.length), data)).toBeNull();
  });
});

describe('Swarm timers (fake time)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance', 'Date'] });
  });

  const joinsOf = (): number => world.server.received.filter((r) => r.msg.type === 'join').length;

  it('alone, a fetcher rejoins signaling every 5 s and reports no-peers once, after 10 s', async () => {
    const data = randomBytes(10 * CHUNK, 16);
    const seed = seeder(data);
    const uri = seed.uri;
    seed.close();
    const fetch = fetcher(uri);
    const log = record(fetch);
    await fetch.start();
    expect(joinsOf()).toBe(1);
    await vi.advanceTimersByTimeAsync(4_900);
    expect(joinsOf()).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    expect(joinsOf()).toBe(2);
    expect(world.server.received.filter((r) => r.msg.type === 'leave')).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(4_800);
    expect(log.error).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(log.error.map((e) => e.code)).toEqual(['no-peers']);
    expect(joinsOf()).toBe(3);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(log.error.map((e) => e.code)).toEqual(['no-peers']);
  });

  it('held back by the server (p2pFrom), a lone fetcher rejoins every 30 s instead of 5 s', async () => {
    world.server.p2pMinPeers = 3;
    const seed = seeder(randomBytes(10 * CHUNK, 18));
    const uri = seed.uri;
    await seed.start();
    const fetch = fetcher(uri);
    await fetch.start();
    // Two in the room: the fetcher's welcome listed nobody, the seeder's neither.
    expect(world.server.room(fetch.content.root)).toHaveLength(2);
    expect(joinsOf()).toBe(2);
    await vi.advanceTimersByTimeAsync(29_000);
    expect(joinsOf()).toBe(2);
    await vi.advanceTimersByTimeAsync(1_500);
    expect(joinsOf()).toBe(4); // both rejoined once
    expect(fetch.stats().connections).toBe(0);
  });

  it('a seeder alone reports no no-peers error (it has everything)', async () => {
    const seed = seeder(randomBytes(10 * CHUNK, 17));
    const log = record(seed);
    await seed.start();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(log.error).toEqual([]);
  });

  it('drops a connection whose channel does not open within connectTimeoutMs, without peer events', async () => {
    world.net.connectable = false;
    const seed = seeder(randomBytes(10 * CHUNK, 18));
    await seed.start();
    const fetch = fetcher(seed.uri, { connectTimeoutMs: 3000 });
    const log = record(fetch);
    await fetch.start();
    // The offer, answer and candidates go through; ICE never completes.
    await untilTasks(
      () => world.net.connections[0]?.remoteDescription?.type === 'answer' && world.net.connections[0].candidates.length === 1,
      "the answer and the seeder's candidate reach the fetcher",
    );
    const offered = world.net.connections[0]!;
    expect(offered.localDescription?.type).toBe('offer');
    expect(fetch.stats().connections).toBe(1);
    await vi.advanceTimersByTimeAsync(2_990);
    expect(offered.connectionState).toBe('new');
    await vi.advanceTimersByTimeAsync(20);
    expect(offered.connectionState).toBe('closed');
    expect(fetch.stats().connections).toBe(0);
    expect(log['peer-joined']).toEqual([]);
    expect(log['peer-left']).toEqual([]);
  });

  it('with reportOffload, reports its bytes by source every reportEvery seconds, and a last one as it leaves', async () => {
    world.server.reportEvery = 5;
    const data = randomBytes(40 * CHUNK + 5, 23);
    const seed = seeder(data);
    await seed.start();
    const quiet = fetcher(seed.uri);
    const reporting = fetcher(seed.uri, { reportOffload: true });
    const done = Promise.all([nextEvent(quiet, 'complete'), nextEvent(reporting, 'complete')]);
    await Promise.all([quiet.start(), reporting.start()]);
    await vi.advanceTimersByTimeAsync(4_000);
    await done;
    const reports = () => world.server.received.filter((r) => r.msg.type === 'report');
    expect(reports()).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    const me = idOf(reporting, 2);
    expect(reports().map((r) => r.from)).toEqual([me]);
    const first = reports()[0]!.msg as { bytes: { peers: number; http: number; seeders: number }; stalls: number; stallMs: number };
    // Everything came from the seeder or the other fetcher, nothing from HTTP; no stall source here.
    expect(first.bytes.http).toBe(0);
    expect(first.bytes.peers + first.bytes.seeders).toBe(data.length);
    expect(first.bytes.seeders).toBe(reporting.stats().bytesFromSeeders);
    expect([first.stalls, first.stallMs]).toEqual([0, 0]);
    await vi.advanceTimersByTimeAsync(3_000);
    reporting.close();
    await vi.advanceTimersByTimeAsync(10); // the fake socket delivers in a later task
    expect(reports()).toHaveLength(2);
    expect(reports()[1]!.msg.bytes).toEqual(first.bytes);
  });

  it('emits stats every statsIntervalMs with the engine figures', async () => {
    const seed = seeder(randomBytes(10 * CHUNK, 19), { statsIntervalMs: 500 });
    const log = record(seed);
    await seed.start();
    await vi.advanceTimersByTimeAsync(1_600);
    expect(log.stats).toHaveLength(3);
    expect(log.stats[2]).toMatchObject({ chunksHave: 10, chunkCount: 10, connections: 0, elapsedMs: expect.any(Number) });
    expect(log.stats[2]!.elapsedMs).toBeGreaterThanOrEqual(1_500);
  });
});

// A peer, for `no-peers`, is a connection whose data channel is open.
// Attempts still in ICE may fail late or never; they must not hold `no-peers` off, nor a
// connection slot past `connectTimeoutMs`.
describe('no-peers counts open data channels only (fake time)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance', 'Date'] });
  });

  const codes = (log: Log): string[] => log.error.map((e) => e.code);
  const joinsOf = (): number => world.server.received.filter((r) => r.msg.type === 'join').length;

  it('an offer whose ICE failed is made again after a back-off, and the second attempt connects', async () => {
    world.net.connectable = false;
    world.net.failAfterMs = 2_000;
    const data = randomBytes(10 * CHUNK, 31);
    const seed = seeder(data);
    await seed.start();
    const before = world.net.connections.length;
    const fetch = fetcher(seed.uri);
    const log = record(fetch);
    await fetch.start();
    const offers = (): typeof world.net.connections =>
      world.net.connections.slice(before).filter((pc) => pc.localDescription?.type === 'offer');
    await untilTasks(() => offers().length === 1 && offers()[0]!.iceConnectionState === 'checking', 'the offer is in ICE checks');
    await vi.advanceTimersByTimeAsync(2_100);
    expect(offers()[0]!.connectionState).toBe('closed');
    // The path works now (a NAT mapping or TURN permission made too late the first time).
    world.net.connectable = true;
    await vi.advanceTimersByTimeAsync(500);
    expect(offers()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(offers()).toHaveLength(2);
    await untilTasks(() => log['peer-joined'].length === 1, 'the second attempt opens');
    expect(log['peer-joined'][0]!.seeder).toBe(true);
  });

  it.each([
    { what: 'fails after 20 s', failAfterMs: 20_000, connectTimeoutMs: 60_000, endsAt: 20_000 },
    { what: 'never completes', failAfterMs: Infinity, connectTimeoutMs: 15_000, endsAt: 15_000 },
  ])(
    'every ICE attempt $what: one non-fatal no-peers after 10 s while they still check; closed at $endsAt ms, then retried',
    async ({ failAfterMs, connectTimeoutMs, endsAt }) => {
      world.net.connectable = false;
      world.net.failAfterMs = failAfterMs;
      const data = randomBytes(10 * CHUNK, 30);
      const seeds = [seeder(data), seeder(data)];
      for (const seed of seeds) await seed.start();
      const before = world.net.connections.length;
      const fetch = fetcher(seeds[0]!.uri, { connectTimeoutMs });
      const log = record(fetch);
      await fetch.start();
      const offers = (): typeof world.net.connections =>
        world.net.connections.slice(before).filter((pc) => pc.localDescription?.type === 'offer');
      await untilTasks(
        () => offers().length === 2 && offers().every((pc) => pc.iceConnectionState === 'checking'),
        "the fetcher's offers to both seeders are in ICE checks",
      );
      const attempts = offers();
      expect(fetch.stats().connections).toBe(2);

      await vi.advanceTimersByTimeAsync(9_900);
      expect(codes(log)).toEqual([]);
      await vi.advanceTimersByTimeAsync(200);
      expect(codes(log)).toEqual(['no-peers']);
      expect(log.error[0]!.fatal).toBe(false);
      expect(log.error[0]!.message).toContain('2 connection attempts not open yet');
      expect(attempts.map((pc) => pc.connectionState)).toEqual(['connecting', 'connecting']);

      // The attempts end (ICE fails, or connectTimeoutMs) and free their slots.
      await vi.advanceTimersByTimeAsync(endsAt - 10_100 - 100);
      expect(attempts.map((pc) => pc.connectionState)).toEqual(['connecting', 'connecting']);
      await vi.advanceTimersByTimeAsync(200);
      expect(attempts.map((pc) => pc.connectionState)).toEqual(['closed', 'closed']);
      expect(fetch.stats().connections).toBe(0);

      // It keeps trying (offers again after 1, 2 and 4 s, then rejoins for fresh peers),
      // and says no-peers only once.
      const joins = joinsOf();
      await vi.advanceTimersByTimeAsync(150_000);
      expect(joinsOf()).toBeGreaterThan(joins);
      expect(offers().length).toBeGreaterThan(2);
      expect(codes(log)).toEqual(['no-peers']);
      expect(log['peer-joined']).toEqual([]);
    },
  );

  it('an open peer holds no-peers off while another attempt hangs; 10 s after it leaves, pending attempts or not, no-peers', async () => {
    // The open peer is another fetcher with nothing yet, so the fetch never completes (a
    // complete swarm has no use for no-peers).
    const data = randomBytes(10 * CHUNK, 31);
    const gone = seeder(data);
    const uri = gone.uri;
    gone.close();
    const reachable = fetcher(uri);
    await reachable.start();
    const fetch = fetcher(uri);
    const log = record(fetch);
    await fetch.start();
    await untilTasks(() => log['peer-joined'].length === 1, 'the fetcher joins the other fetcher');
    // A seeder that comes later cannot be reached: its attempts check forever.
    world.net.connectable = false;
    world.net.failAfterMs = Infinity;
    const hostile = seeder(data);
    await hostile.start();
    await untilTasks(() => fetch.stats().connections === 2, "the hostile seeder's attempt reaches the fetcher");

    await vi.advanceTimersByTimeAsync(30_000);
    expect(codes(log)).toEqual([]);
    reachable.close();
    await untilTasks(() => log['peer-left'].length === 1, 'the other fetcher left');

    // Now only attempts to and from the hostile seeder (it rejoins and offers again) come
    // and go: none is a peer.
    await vi.advanceTimersByTimeAsync(9_500);
    expect(codes(log)).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_600);
    expect(codes(log)).toEqual(['no-peers']);
    expect(fetch.stats().connections, 'an attempt still checking').toBe(1);
    expect(log['peer-joined']).toHaveLength(1);
  });

  it('an attempt that never completes holds its slot until connectTimeoutMs only: a peer that comes later gets it and connects', async () => {
    world.net.connectable = false;
    world.net.failAfterMs = Infinity;
    const data = randomBytes(10 * CHUNK, 32);
    const hostile = seeder(data);
    await hostile.start();
    const before = world.net.connections.length;
    const fetch = fetcher(hostile.uri, { maxConnections: 1, connectTimeoutMs: 12_000 });
    const log = record(fetch);
    await fetch.start();
    await untilTasks(
      () => world.net.connections[before]?.iceConnectionState === 'checking',
      "the fetcher's offer is in ICE checks",
    );
    const attempt = world.net.connections[before]!;
    expect(attempt.localDescription?.type).toBe('offer');
    expect(fetch.stats().connections).toBe(1);

    await vi.advanceTimersByTimeAsync(10_100);
    expect(codes(log)).toEqual(['no-peers']);
    expect(attempt.connectionState).toBe('connecting');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(attempt.connectionState).toBe('closed');
    expect(fetch.stats().connections).toBe(0);

    // A reachable seeder joins and offers: the freed slot takes it.
    world.net.connectable = true;
    const reachable = seeder(data);
    await reachable.start();
    await untilTasks(() => log['peer-joined'].length === 1, 'the fetcher joins the seeder that came later');
    expect(log['peer-joined'][0]).toMatchObject({ remote: idOf(reachable, 2), seeder: true });
    await untilTasks(() => fetch.complete, 'the fetch completes from it');
    expect(differsAt(fetch.read(0, data.length), data)).toBeNull();
    expect(codes(log)).toEqual(['no-peers']);
  });
});
