/**
 * A swarm with an HTTP origin (src/http-origin.ts), with the real engine: a fake web
 * server holds the content and its tree file; peers, where there are any, talk over fake
 * WebRTC and a fake signaling server.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { PpsppError } from '../src/errors.js';
import type { HttpOriginSettings } from '../src/http-origin.js';
import { resolvePeerOptions } from '../src/options.js';
import { engineOptions } from '../src/engine-start.js';
import { Swarm } from '../src/swarm.js';
import { WasmPeer, parseUriLoaded, treeFile } from '../src/wasm.js';
import { differsAt } from './fakes/bytes.js';
import { loadEngine } from './fakes/engine.js';
import { type FakeHttp, installFetch } from './fakes/http.js';
import { nextEvent } from './fakes/tasks.js';
import { randomBytes } from './fakes/webm.js';
import { useFakeWorld } from './fakes/world.js';

const CHUNK = 1024;
const CONTENT_URL = 'http://origin.test/v.bin';
const TREE_URL = 'http://origin.test/v.tree';

const world = useFakeWorld();
const swarms = world.closeAfterEach((s: Swarm) => s.close());
let http: FakeHttp;

beforeAll(loadEngine);

function settings(o: Partial<HttpOriginSettings> = {}): HttpOriginSettings {
  return { url: CONTENT_URL, tree: TREE_URL, maxRequests: 4, timeoutMs: 2_000, headBytes: 256 << 10, ...o };
}

/** The content on the fake server (`served` in place of it, if given), and its swarm URI. */
function publish(data: Uint8Array, served = data): string {
  const seeder = WasmPeer.seeder(data, CHUNK, 'sha256', undefined, undefined, engineOptions(resolvePeerOptions()), 0);
  const uri = seeder.uri();
  seeder.free();
  const [fake, restore] = installFetch(
    new Map([
      [CONTENT_URL, served],
      [TREE_URL, treeFile(data, CHUNK, 'sha256')],
    ]),
  );
  http = fake;
  world.undoAfter(restore);
  return uri;
}

function fetcher(uri: string, origin: HttpOriginSettings, signal: string | null): Swarm {
  const r = resolvePeerOptions({ statsIntervalMs: 0 });
  const engine = WasmPeer.fetcher(uri, engineOptions(r), performance.now());
  const swarm = new Swarm(engine, parseUriLoaded(uri), { signal, options: r, seeding: false, origin });
  swarms.push(swarm);
  return swarm;
}

function errors(swarm: Swarm): PpsppError[] {
  const out: PpsppError[] = [];
  swarm.on('error', (e) => out.push(e));
  return out;
}

describe('Swarm with an HTTP origin', () => {
  it('HTTP only (no signaling server): every byte from Range requests, verified, once, within the request limit', async () => {
    const data = randomBytes(700 * CHUNK + 33, 3);
    const uri = publish(data);
    const swarm = fetcher(uri, settings({ maxRequests: 3 }), null);
    const verified: (number | null)[] = [];
    swarm.on('chunk-verified', (e) => verified.push(e.peer));
    const errs = errors(swarm);
    const done = nextEvent(swarm, 'complete');
    await swarm.start();
    await done;
    expect(differsAt(swarm.read(0, data.length), data)).toBeNull();
    expect(verified).toHaveLength(Math.ceil(data.length / CHUNK));
    expect(verified.every((p) => p === null)).toBe(true);
    expect(http.served.get(CONTENT_URL)).toBe(data.length);
    expect(http.mostInFlight).toBeLessThanOrEqual(3);
    expect(errs).toEqual([]);
    const stats = swarm.stats();
    expect(stats).toMatchObject({ bytesFromHttp: data.length, bytesFromPeers: 0, offload: 0, httpBytesReceived: data.length });
    expect(stats.originRequests).toBe(http.requests.length);
  });

  it('content made of parts (segment files, byte ranges of one file): each file asked for its own bytes, all verified', async () => {
    const data = randomBytes(300 * CHUNK + 77, 9);
    const seeder = WasmPeer.seeder(data, CHUNK, 'sha256', undefined, undefined, engineOptions(resolvePeerOptions()), 0);
    const uri = seeder.uri();
    seeder.free();
    // Parts: an init file; two byte ranges of one file, next to each other there; a
    // segment file whose length is no multiple of the chunk size; the rest.
    const cuts = [850, 850 + 40_000, 850 + 90_000, 850 + 90_000 + 12_345, data.length];
    const slice = (i: number): Uint8Array => data.subarray(i === 0 ? 0 : cuts[i - 1]!, cuts[i]!);
    const joined = new Uint8Array(1000 + slice(1).length + slice(2).length);
    joined.set(slice(1), 1000);
    joined.set(slice(2), 1000 + slice(1).length);
    const base = 'http://origin.test/';
    const [fake, restore] = installFetch(new Map([
      [`${base}init.mp4`, slice(0)],
      [`${base}joined.m4s`, joined],
      [`${base}seg2.m4s`, slice(3)],
      [`${base}seg3.m4s`, slice(4)],
      [TREE_URL, treeFile(data, CHUNK, 'sha256')],
    ]));
    http = fake;
    world.undoAfter(restore);
    const parts = [
      { url: `${base}init.mp4`, offset: null, length: slice(0).length },
      { url: `${base}joined.m4s`, offset: 1000, length: slice(1).length },
      { url: `${base}joined.m4s`, offset: 1000 + slice(1).length, length: slice(2).length },
      { url: `${base}seg2.m4s`, offset: null, length: slice(3).length },
      { url: `${base}seg3.m4s`, offset: null, length: slice(4).length },
    ];
    const swarm = fetcher(uri, settings({ url: parts[0]!.url, parts }), null);
    const errs = errors(swarm);
    const done = nextEvent(swarm, 'complete');
    await swarm.start();
    await done;
    expect(differsAt(swarm.read(0, data.length), data)).toBeNull();
    expect(errs).toEqual([]);
    expect(swarm.stats().bytesFromHttp).toBe(data.length);
    // Every file was asked only for bytes it holds, the two ranges of one file at once
    // where a request spans both.
    const lengths = new Map([[`${base}init.mp4`, slice(0).length], [`${base}joined.m4s`, joined.length], [`${base}seg2.m4s`, slice(3).length], [`${base}seg3.m4s`, slice(4).length]]);
    for (const r of http.requests.filter((q) => q.url !== TREE_URL)) {
      expect(r.end, `${r.url} ${r.start}-${r.end}`).toBeLessThanOrEqual(lengths.get(r.url)!);
      if (r.url.endsWith('joined.m4s')) expect(r.start).toBeGreaterThanOrEqual(1000);
    }
    expect(http.requests.some((q) => q.url.endsWith('joined.m4s') && q.start < 1000 + slice(1).length && q.end > 1000 + slice(1).length)).toBe(true);
  });

  it('a corrupt byte on the server: origin-corrupt names the chunk, which comes from a peer; nothing corrupt is kept', async () => {
    const data = randomBytes(200 * CHUNK, 4);
    const served = data.slice();
    served[37 * CHUNK + 5] = (served[37 * CHUNK + 5] ?? 0) ^ 0x40;
    const uri = publish(data, served);
    const r = resolvePeerOptions({ statsIntervalMs: 0 });
    const seedEngine = WasmPeer.seeder(data, CHUNK, 'sha256', world.server.url, undefined, engineOptions(r), performance.now());
    const seeder = new Swarm(seedEngine, parseUriLoaded(seedEngine.uri()), { signal: world.server.url, options: r, seeding: true });
    swarms.push(seeder);
    await seeder.start();
    // The origin serves the first 64 chunks (its head), the seeder the rest.
    const swarm = fetcher(uri, settings({ headBytes: 64 * CHUNK }), world.server.url);
    const corrupt = nextEvent(swarm, 'origin-corrupt');
    const done = nextEvent(swarm, 'complete');
    await swarm.start();
    expect(await corrupt).toMatchObject({ chunk: 37 });
    await done;
    expect(differsAt(swarm.read(0, data.length), data)).toBeNull();
    const stats = swarm.stats();
    expect(stats.chunksOriginCorrupt).toBe(1);
    expect(stats.bytesFromHttp).toBe(63 * CHUNK);
    expect(stats.bytesFromSeeders).toBe(data.length - 63 * CHUNK);
    // The origin was asked for chunk 37 once.
    const asked = http.requests.filter((q) => q.url === CONTENT_URL && q.start <= 37 * CHUNK && 37 * CHUNK < q.end);
    expect(asked).toHaveLength(1);
  });

  it('a server that ignores Range: origin-no-range, fatal when nothing else can deliver', async () => {
    const uri = publish(randomBytes(50 * CHUNK, 5));
    http.misbehave = () => 'ignore-range';
    const swarm = fetcher(uri, settings(), null);
    const error = nextEvent(swarm, 'error');
    await swarm.start();
    expect(await error).toMatchObject({ code: 'origin-no-range', fatal: true });
  });

  it('a missing file: origin-status with the status; with signaling it is not fatal', async () => {
    const uri = publish(randomBytes(50 * CHUNK, 6));
    http.misbehave = (url) => (url === TREE_URL ? 'not-found' : undefined);
    const swarm = fetcher(uri, settings(), world.server.url);
    const error = nextEvent(swarm, 'error');
    await swarm.start();
    const e = await error;
    expect(e).toMatchObject({ code: 'origin-status', fatal: false });
    expect(e.message).toContain('404');
    expect(swarm.stats().chunksHave).toBe(0);
  });

  it('a network failure (or a CORS refusal) is retried after a wait, then the fetch completes', async () => {
    const data = randomBytes(80 * CHUNK, 7);
    const uri = publish(data);
    let failures = 2;
    http.misbehave = () => (failures-- > 0 ? 'network' : undefined);
    const swarm = fetcher(uri, settings(), null);
    const errs = errors(swarm);
    const done = nextEvent(swarm, 'complete');
    await swarm.start();
    await done;
    expect(differsAt(swarm.read(0, data.length), data)).toBeNull();
    expect(errs.length).toBeGreaterThan(0);
    expect(errs.every((e) => e.code === 'origin-unreachable' && !e.fatal && e.message.includes('retrying'))).toBe(true);
  });

  it('a request with no answer in timeoutMs fails as origin-timeout and is retried', async () => {
    const data = randomBytes(20 * CHUNK, 8);
    const uri = publish(data);
    let hangs = 1;
    http.misbehave = () => (hangs-- > 0 ? 'hang' : undefined);
    const swarm = fetcher(uri, settings({ timeoutMs: 200 }), null);
    const error = nextEvent(swarm, 'error');
    const done = nextEvent(swarm, 'complete');
    await swarm.start();
    expect(await error).toMatchObject({ code: 'origin-timeout', fatal: false });
    await done;
    expect(differsAt(swarm.read(0, data.length), data)).toBeNull();
  });
});
