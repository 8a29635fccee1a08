/** The presentation manifest (src/presentation/manifest.ts): checks, URLs and the segment index. */
import { describe, expect, it } from 'vitest';
import { PpsppError } from '../src/errors.js';
import { Goodput } from '../src/presentation/goodput.js';
import { type Manifest, SegmentIndex, parseManifest, renditionUri } from '../src/presentation/manifest.js';

const URL_ = 'https://cdn.example/video/master.ppspp.json';

function manifest(edit: (m: Record<string, unknown> & { renditions: Record<string, unknown>[] }) => void = () => {}): string {
  const m = {
    format: 'ppspp-presentation',
    version: 1,
    type: 'vod',
    source: 'master.m3u8',
    renditions: [
      {
        id: 'v0/index.m3u8', kind: 'video', bandwidth: 440000, resolution: '426x240',
        root: 'AB'.repeat(32), hash: 'sha256', chunkSize: 8192, length: 300, tree: 'v0/index.ppspp-tree',
        parts: [{ uri: 'v0/init.mp4', length: 100 }, { uri: 'v0/seg%20000.m4s', length: 200 }],
      },
      {
        id: 'v1/index.m3u8', kind: 'video', root: 'cd'.repeat(32), hash: 'sha256', chunkSize: 8192, length: 250,
        tree: 'v1/index.ppspp-tree',
        parts: [{ uri: 'v1/all.mp4', offset: 0, length: 50 }, { uri: 'v1/all.mp4', offset: 50, length: 200 }],
      },
    ],
  };
  edit(m as never);
  return JSON.stringify(m);
}

/** An on-demand manifest read from `text`. */
function vod(text: string): Manifest {
  const m = parseManifest(text, URL_);
  if (m.type !== 'vod') throw new Error('not an on-demand manifest');
  return m;
}

function refusal(text: string): string {
  try {
    parseManifest(text, URL_);
  } catch (err) {
    expect(err).toBeInstanceOf(PpsppError);
    expect((err as PpsppError).code).toBe('bad-manifest');
    return (err as PpsppError).message;
  }
  throw new Error('accepted');
}

describe('parseManifest', () => {
  it('resolves every URL against the manifest and keeps what a swarm needs', () => {
    const m = vod(manifest());
    expect(m.source).toBe('https://cdn.example/video/master.m3u8');
    const r = m.renditions[0]!;
    expect(r).toMatchObject({ id: 'v0/index.m3u8', kind: 'video', bandwidth: 440000, resolution: '426x240', root: 'ab'.repeat(32), chunkSize: 8192, length: 300 });
    expect(r.tree).toBe('https://cdn.example/video/v0/index.ppspp-tree');
    expect(r.parts.map((p) => p.url)).toEqual(['https://cdn.example/video/v0/init.mp4', 'https://cdn.example/video/v0/seg%20000.m4s']);
    expect(r.parts[0]!.offset).toBeNull();
    expect(m.renditions[1]!.bandwidth).toBeNull();
    expect(renditionUri(r)).toBe(`ppspp://${'ab'.repeat(32)}?len=300&cs=8192&hash=sha256`);
  });

  it('refuses what is not a manifest of this version, naming the field', () => {
    expect(refusal('{')).toMatch(/not JSON/);
    expect(refusal(manifest((m) => { m.format = 'x'; }))).toMatch(/format/);
    expect(refusal(manifest((m) => { m.version = 2; }))).toMatch(/version 2/);
    expect(refusal(manifest((m) => { m.type = 'recorded'; }))).toMatch(/type "recorded"/);
    // A live manifest is read as one: these renditions have no live swarm.
    expect(refusal(manifest((m) => { m.type = 'live'; }))).toMatch(/renditions\[0\]\.swarm must be a string/);
    expect(refusal(manifest((m) => { m.renditions = []; }))).toMatch(/renditions/);
    expect(refusal(manifest((m) => { m.renditions[0]!.kind = 'text'; }))).toMatch(/renditions\[0\]\.kind/);
    expect(refusal(manifest((m) => { m.renditions[0]!.root = 'xyz'; }))).toMatch(/root must be hex/);
    expect(refusal(manifest((m) => { m.renditions[1]!.length = 251; }))).toMatch(/add up to 250 bytes, not its length 251/);
    expect(refusal(manifest((m) => { m.renditions[0]!.chunkSize = -1; }))).toMatch(/chunkSize/);
    expect(refusal(manifest((m) => { (m.renditions[0]!.parts as Record<string, unknown>[])[1]!.length = 0; }))).toMatch(/parts\[1\]\.length/);
  });
});

describe('SegmentIndex', () => {
  const index = new SegmentIndex(vod(manifest()));

  it('finds whole-file parts by URL, with or without the query or fragment', () => {
    expect(index.find('https://cdn.example/video/v0/init.mp4')).toEqual({ rendition: 0, start: 0, end: 100 });
    expect(index.find('https://cdn.example/video/v0/seg%20000.m4s?token=1#x')).toEqual({ rendition: 0, start: 100, end: 300 });
    expect(index.find('https://cdn.example/video/v0/other.m4s')).toBeNull();
  });

  it('finds byte ranges (end exclusive) within a part, and refuses those across parts or past them', () => {
    const all = 'https://cdn.example/video/v1/all.mp4';
    expect(index.find(all, 0, 50)).toEqual({ rendition: 1, start: 0, end: 50 });
    expect(index.find(all, 50, 250)).toEqual({ rendition: 1, start: 50, end: 250 });
    expect(index.find(all, 60, 70)).toEqual({ rendition: 1, start: 60, end: 70 });
    expect(index.find(all, 40, 60)).toBeNull();
    expect(index.find(all, 200, 300)).toBeNull();
    // The whole file is no part of it.
    expect(index.find(all)).toBeNull();
    // A range of a whole-file part.
    expect(index.find('https://cdn.example/video/v0/init.mp4', 10, 20)).toEqual({ rendition: 0, start: 10, end: 20 });
  });
});

describe('Goodput', () => {
  it('reports a load as at least its bytes at the measured rate, once there is one', () => {
    const g = new Goodput();
    expect(g.reportedMs(100_000, 3)).toBe(3);
    g.sample(1000, 100); // too small to say anything
    expect(g.bytesPerMs).toBeNull();
    g.sample(100_000, 100);
    expect(g.bytesPerMs).toBe(1000);
    // Read ahead from peers: 3 ms, reported as the network's 200 ms.
    expect(g.reportedMs(200_000, 3)).toBe(200);
    // Slower than the estimate: as it was.
    expect(g.reportedMs(200_000, 900)).toBe(900);
    g.sample(100_000, 1000);
    expect(g.bytesPerMs).toBeCloseTo(0.3 * 100 + 0.7 * 1000);
    // After a slow spell, loads too fast to time lift it again (as at least 20 ms each).
    const before = g.bytesPerMs!;
    g.sample(100_000, 2);
    expect(g.bytesPerMs).toBeCloseTo(0.3 * 5000 + 0.7 * before);
  });
});
