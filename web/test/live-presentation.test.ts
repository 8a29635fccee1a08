/**
 * A live presentation (src/presentation/live-delivery.ts) with the real engine, over a fake
 * web server holding a manifest `ppspp hls live` wrote (trimmed to one segment per
 * rendition: each record is signed on its own) and an initialisation segment ffmpeg wrote.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PpsppError } from '../src/errors.js';
import { parseManifest } from '../src/presentation/manifest.js';
import { Presentation } from '../src/presentation/presentation.js';
import { loadEngine } from './fakes/engine.js';

const BASE = 'https://cdn.test/live/';
const MANIFEST = readFileSync(new URL('./fakes/live/master.ppspp.json', import.meta.url), 'utf8');
const INIT = new Uint8Array(readFileSync(new URL('./fakes/live/init_0.mp4', import.meta.url)));
const KEY = (JSON.parse(MANIFEST) as { key: string }).key;

const undo: (() => void)[] = [];
const open: Presentation[] = [];
beforeAll(loadEngine);
afterEach(() => {
  for (const p of open.splice(0)) p.close();
  for (const u of undo.splice(0).reverse()) u();
});

/** Serves `files` whole (URL → text or bytes); 404 for the rest. */
function serve(files: Map<string, string | Uint8Array>): void {
  const real = globalThis.fetch;
  globalThis.fetch = (input: RequestInfo | URL) => {
    const body = files.get(String(input));
    return Promise.resolve(body === undefined ? new Response('not found', { status: 404 }) : new Response(body.slice(), { status: 200 }));
  };
  undo.push(() => {
    globalThis.fetch = real;
  });
}

function edited(edit: (m: { key: string; renditions: Record<string, unknown>[] }) => void): string {
  const m = JSON.parse(MANIFEST) as { key: string; renditions: Record<string, unknown>[] };
  edit(m);
  return JSON.stringify(m);
}

async function refusal(text: string, options: Record<string, unknown>): Promise<PpsppError> {
  serve(new Map([[`${BASE}master.ppspp.json`, text]]));
  try {
    open.push(await Presentation.load(`${BASE}master.ppspp.json`, { signal: false, ...options }));
  } catch (err) {
    expect(err).toBeInstanceOf(PpsppError);
    return err as PpsppError;
  }
  throw new Error('accepted');
}

describe('live presentation manifest', () => {
  it('is read with its URLs resolved and its records kept for the engine', () => {
    const m = parseManifest(MANIFEST, `${BASE}master.ppspp.json`);
    if (m.type !== 'live') throw new Error('not live');
    expect(m.source).toBe(`${BASE}master.m3u8`);
    expect(m.renditions.map((r) => r.init?.url)).toEqual([`${BASE}init_0.mp4`, `${BASE}init_1.mp4`]);
    const part = m.renditions[0]!.parts[0]!;
    expect(part.url).toBe(`${BASE}seg_0_00015.m4s`);
    expect(part.chunks).toBeGreaterThan(0);
    expect(Array.isArray(part.record.munros)).toBe(true);
  });

  it('refuses a live manifest of the wrong shape, naming the field', () => {
    const bad = (edit: (m: { key: string; renditions: Record<string, unknown>[] }) => void): string => {
      try {
        parseManifest(edited(edit), `${BASE}master.ppspp.json`);
      } catch (err) {
        expect((err as PpsppError).code).toBe('bad-manifest');
        return (err as PpsppError).message;
      }
      throw new Error('accepted');
    };
    expect(bad((m) => (m.renditions[0]!.swarm = 'ppspp://abcd'))).toMatch(/renditions\[0\]\.swarm must be a live swarm URI/);
    expect(bad((m) => ((m.renditions[1]!.parts as Record<string, unknown>[])[0]!.firstChunk = -1))).toMatch(/renditions\[1\]\.parts\[0\]\.firstChunk must be a whole number/);
    expect(bad((m) => delete (m.renditions[0]!.init as Record<string, unknown>).hash)).toMatch(/renditions\[0\]\.init\.hash must be a string/);
  });
});

describe('Presentation of a live manifest', () => {
  it('needs the stream key, and refuses a manifest of another key or a record the key did not sign', async () => {
    expect((await refusal(MANIFEST, {})).code).toBe('bad-option');
    expect((await refusal(MANIFEST, { streamKey: 'zz' })).code).toBe('bad-option');
    const other = await refusal(MANIFEST, { streamKey: KEY.replace(/.$/, (c) => (c === '0' ? '1' : '0')) });
    expect(other.code).toBe('bad-manifest');
    expect(other.message).toMatch(/not of the one given/);
    // The web server (or anyone on the way) changed what the init segment is.
    const forged = await refusal(
      edited((m) => {
        const init = m.renditions[0]!.init as { hash: string };
        init.hash = init.hash.replace(/^./, (c) => (c === '0' ? '1' : '0'));
      }),
      { streamKey: KEY },
    );
    expect(forged.code).toBe('bad-manifest');
    expect(forged.message).toMatch(/stream_0\.m3u8: its record is not signed by the stream key/);
  });

  it('finds segments, takes the init segment only as signed, and refuses an old recording of the stream', async () => {
    const files = new Map<string, string | Uint8Array>([
      [`${BASE}master.ppspp.json`, MANIFEST],
      [`${BASE}init_0.mp4`, INIT],
    ]);
    serve(files);
    const p = await Presentation.load(`${BASE}master.ppspp.json`, { signal: false, streamKey: KEY });
    open.push(p);
    expect(p.find(`${BASE}init_0.mp4`)).toEqual({ live: true, url: `${BASE}init_0.mp4`, rendition: 0, init: true });
    expect(p.find(`${BASE}seg_1_00015.m4s#t=1`)).toEqual({ live: true, url: `${BASE}seg_1_00015.m4s`, rendition: 1, init: false });
    // Newer than the manifest, beside its segments: it will name it.
    expect(p.find(`${BASE}seg_0_00016.m4s`)).toEqual({ live: true, url: `${BASE}seg_0_00016.m4s`, rendition: null, init: false });
    expect(p.find(`${BASE}stream_0.m3u8`)).toBeNull();
    expect(p.find(`${BASE}other/seg_0_00016.m4s`)).toBeNull();
    expect(p.find(`${BASE}seg_0_00015.m4s`, 0, 100)).toBeNull();

    const init = await p.load(p.find(`${BASE}init_0.mp4`)!, { timeoutMs: 5000 });
    expect('bytes' in init && init.bytes).toEqual(INIT);
    // The segments were signed long ago: a recording replayed is not the live stream.
    const old = await p.load(p.find(`${BASE}seg_0_00015.m4s`)!, { timeoutMs: 5000 });
    expect('error' in old && old.error.code).toBe('verification-failed');
    expect('error' in old && old.error.message).toMatch(/dated outside the accepted time/);
  });

  it('refuses an init segment the web server changed', async () => {
    const tampered = INIT.slice();
    tampered[100] = (tampered[100] ?? 0) ^ 0xff;
    serve(new Map<string, string | Uint8Array>([
      [`${BASE}master.ppspp.json`, MANIFEST],
      [`${BASE}init_0.mp4`, tampered],
    ]));
    const p = await Presentation.load(`${BASE}master.ppspp.json`, { signal: false, streamKey: KEY });
    open.push(p);
    const corrupt: string[] = [];
    p.on('origin-corrupt', (e) => corrupt.push(e.reason));
    const out = await p.load(p.find(`${BASE}init_0.mp4`)!, { timeoutMs: 5000 });
    expect('error' in out && out.error.code).toBe('verification-failed');
    expect(corrupt).toHaveLength(1);
  });

  it('settles a load for a segment the manifest never names once the stream ended', async () => {
    serve(new Map([[`${BASE}master.ppspp.json`, edited((m) => Object.assign(m, { ended: true }))]]));
    const p = await Presentation.load(`${BASE}master.ppspp.json`, { signal: false, streamKey: KEY });
    open.push(p);
    // Ended: a file the manifest does not name is not the presentation's.
    expect(p.find(`${BASE}seg_0_00016.m4s`)).toBeNull();
    const waiting = p.load({ live: true, url: `${BASE}seg_0_00016.m4s`, rendition: null, init: false }, { timeoutMs: 5000 });
    expect(await waiting).toEqual({ error: expect.objectContaining({ code: 'bad-manifest' }) });
  });
});
