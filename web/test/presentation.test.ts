/**
 * A Presentation with the real engine, HTTP only, over a fake web server holding a
 * rendition's parts, its tree file and the manifest.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Presentation } from '../src/presentation/presentation.js';
import { resolvePeerOptions } from '../src/options.js';
import { engineOptions } from '../src/engine-start.js';
import { WasmPeer, treeFile } from '../src/wasm.js';
import { differsAt } from './fakes/bytes.js';
import { loadEngine } from './fakes/engine.js';
import { type FakeHttp, installFetch } from './fakes/http.js';
import { randomBytes } from './fakes/webm.js';

const BASE = 'http://cdn.test/video/';
const CHUNK = 8192;
const undo: (() => void)[] = [];
const open: Presentation[] = [];

beforeAll(loadEngine);
afterEach(() => {
  for (const p of open.splice(0)) p.close();
  for (const u of undo.splice(0).reverse()) u();
});

/**
 * Two video renditions (`hi/`, `lo/`) of an init file and two segments each on the fake
 * server; `data` and `cuts` are the first's (`BASE` + `hi/`).
 */
function publish(): { http: FakeHttp; data: Uint8Array; cuts: number[] } {
  const files = new Map<string, Uint8Array>();
  const renditions = [];
  let first: { data: Uint8Array; cuts: number[] } | null = null;
  for (const [dir, size, seed] of [['hi/', 1, 5], ['lo/', 0.5, 6]] as const) {
    const lengths = [846, Math.round(40_000 * size), Math.round(70_000 * size)];
    const data = randomBytes(lengths.reduce((a, b) => a + b, 0), seed);
    const cuts = [0, lengths[0]!, lengths[0]! + lengths[1]!, data.length];
    first ??= { data, cuts };
    const seeder = WasmPeer.seeder(data, CHUNK, 'sha256', undefined, undefined, engineOptions(resolvePeerOptions()), 0);
    const root = seeder.uri().slice('ppspp://'.length).split('?')[0]!;
    seeder.free();
    const names = ['init.mp4', 'seg0.m4s', 'seg1.m4s'].map((n) => dir + n);
    renditions.push({
      id: `${dir}index.m3u8`, kind: 'video', root, hash: 'sha256', chunkSize: CHUNK, length: data.length, tree: `${dir}index.ppspp-tree`,
      parts: names.map((uri, i) => ({ uri, length: cuts[i + 1]! - cuts[i]! })),
    });
    files.set(`${BASE}${dir}index.ppspp-tree`, treeFile(data, CHUNK, 'sha256'));
    names.forEach((n, i) => files.set(`${BASE}${n}`, data.subarray(cuts[i]!, cuts[i + 1]!)));
  }
  const manifest = { format: 'ppspp-presentation', version: 1, type: 'vod', source: 'master.m3u8', renditions };
  const { data, cuts } = first!;
  const [http, restore] = installFetch(files);
  undo.push(restore);
  // The manifest is read whole (the fake server answers Range requests only).
  const ranged = globalThis.fetch;
  const text = JSON.stringify(manifest);
  globalThis.fetch = (input, init) =>
    String(input) === `${BASE}master.ppspp.json` ? Promise.resolve(new Response(text, { status: 200 })) : ranged(input, init);
  return { http, data, cuts };
}

async function presentation(): Promise<Presentation> {
  const p = await Presentation.load(`${BASE}master.ppspp.json`, { signal: false });
  open.push(p);
  return p;
}

describe('Presentation, HTTP only', () => {
  it('serves segments in any order, each verified, a later segment before the init segment too, across switches', async () => {
    const { data, cuts } = publish();
    const p = await presentation();
    const switched: string[] = [];
    p.on('rendition-switched', (e) => switched.push(`${e.kind} ${e.from} -> ${e.to}`));
    const seg1 = p.find(`${BASE}hi/seg1.m4s`)!;
    expect(seg1).toEqual({ rendition: 0, start: cuts[2], end: cuts[3] });
    const later = await p.load(seg1, { timeoutMs: 5000 });
    expect('bytes' in later && differsAt(later.bytes, data.subarray(cuts[2]!, cuts[3]!))).toBeNull();
    // A switch down and back, as an ABR makes: the first rendition idled meanwhile.
    expect('bytes' in (await p.load(p.find(`${BASE}lo/init.mp4`)!, { timeoutMs: 5000 }))).toBe(true);
    expect('bytes' in (await p.load(p.find(`${BASE}lo/seg0.m4s`)!, { timeoutMs: 5000 }))).toBe(true);
    const init = await p.load(p.find(`${BASE}hi/init.mp4`)!, { timeoutMs: 5000 });
    expect('bytes' in init && differsAt(init.bytes, data.subarray(0, cuts[1]!))).toBeNull();
    const seg0 = await p.load(p.find(`${BASE}hi/seg0.m4s`)!, { timeoutMs: 5000 });
    expect('bytes' in seg0 && differsAt(seg0.bytes, data.subarray(cuts[1]!, cuts[2]!))).toBeNull();
    expect(p.stats()).toMatchObject({ segmentsLoaded: 5, bytesFromPeers: 0, switches: 2 });
    expect(switched).toEqual(['video null -> 0', 'video 0 -> 1', 'video 1 -> 0']);
  });

  it('an init segment and a media segment asked for at once both come (the swarm has one playhead)', async () => {
    const { data, cuts } = publish();
    const p = await presentation();
    const [init, seg1] = await Promise.all([
      p.load(p.find(`${BASE}hi/init.mp4`)!, { timeoutMs: 3000 }),
      p.load(p.find(`${BASE}hi/seg1.m4s`)!, { timeoutMs: 3000 }),
    ]);
    expect('bytes' in init && differsAt(init.bytes, data.subarray(0, cuts[1]!))).toBeNull();
    expect('bytes' in seg1 && differsAt(seg1.bytes, data.subarray(cuts[2]!, cuts[3]!))).toBeNull();
  });

  it('an aborted load settles as aborted; a load nobody can serve times out', async () => {
    const { http } = publish();
    const p = await presentation();
    http.misbehave = (url) => (url.endsWith('hi/seg1.m4s') ? 'hang' : undefined);
    const controller = new AbortController();
    const pending = p.load(p.find(`${BASE}hi/seg1.m4s`)!, { timeoutMs: 5000, signal: controller.signal });
    controller.abort();
    expect(await pending).toEqual({ aborted: true });
    expect(await p.load(p.find(`${BASE}hi/seg1.m4s`)!, { timeoutMs: 300 })).toEqual({ timedOut: true });
  });

  it('given a video element with media ahead, an HTTP-only page still loads at once: nobody to wait for', async () => {
    const { data, cuts } = publish();
    const p = await presentation();
    const media = { currentTime: 0, playbackRate: 1, buffered: { length: 1, start: () => 0, end: () => 20 } };
    p.attachMedia(media as unknown as HTMLMediaElement);
    const seg1 = await p.load(p.find(`${BASE}hi/seg1.m4s`)!, { timeoutMs: 3000 });
    expect('bytes' in seg1 && differsAt(seg1.bytes, data.subarray(cuts[2]!, cuts[3]!))).toBeNull();
    expect('bytes' in seg1 && seg1.ms, 'not held for peers').toBeLessThan(1000);
    expect(p.stats().goodputBps, 'a load nothing held back is a sample').toBeGreaterThan(0);
  });

  it('a closed presentation settles pending loads with closed', async () => {
    const { http } = publish();
    const p = await presentation();
    http.misbehave = () => 'hang';
    const pending = p.load(p.find(`${BASE}hi/seg0.m4s`)!, { timeoutMs: 5000 });
    p.close();
    const o = await pending;
    expect('error' in o && o.error.code).toBe('closed');
  });

  it('starts the first engine\'s Worker as it loads, before the player asks for a segment, and ends it on close', async () => {
    publish();
    const made: { terminated: boolean }[] = [];
    vi.stubGlobal('Worker', class {
      terminated = false;
      constructor() {
        made.push(this);
      }
      terminate(): void {
        this.terminated = true;
      }
    });
    undo.push(() => vi.unstubAllGlobals());
    const p = await presentation();
    expect(made).toHaveLength(1);
    p.close();
    expect(made[0]!.terminated).toBe(true);
    expect(made, 'none started after it').toHaveLength(1);
  });
});
