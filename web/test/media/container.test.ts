import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type InitInfo,
  detectContainer,
  findSegmentStart,
  parseInit,
  completeChildrenEnd,
  openClusterHead,
  segmentStartTime,
  wholeSegmentsLength,
} from '../../src/media/container.js';

// ------------------------------------------------------------ byte builders

const concat = (...parts: Array<Uint8Array | number[]>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};
const text = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));
const be = (v: number, n: number): number[] => {
  const out: number[] = [];
  for (let i = n - 1; i >= 0; i--) out.push(Math.floor(v / 2 ** (8 * i)) % 256);
  return out;
};

/** EBML element; `id` as written (marker included), size as a minimal vint. */
function el(id: number, ...children: Array<Uint8Array | number[]>): Uint8Array {
  const data = concat(...children);
  let len = 1;
  while (data.length >= 2 ** (7 * len) - 1) len++;
  const size = be(data.length, len);
  size[0] = (size[0] ?? 0) | (0x80 >> (len - 1));
  const idBytes = be(id, Math.ceil(Math.log2(id + 1) / 8));
  return concat(idBytes, size, data);
}
const UNKNOWN_SIZE = [0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
const f64 = (x: number): number[] => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, x);
  return [...b];
};

/** ISO BMFF box and full box. */
const box = (type: string, ...children: Array<Uint8Array | number[]>): Uint8Array => {
  const data = concat(...children);
  return concat(be(data.length + 8, 4), text(type), data);
};
const fullbox = (type: string, version: number, ...children: Array<Uint8Array | number[]>): Uint8Array =>
  box(type, [version, 0, 0, 0], ...children);

// --------------------------------------------------------- synthetic WebM

/** Cluster IDs in frame data: a valid size and child but no Timecode; a bad size; a Timecode longer than 8 bytes. */
const DECOY = [
  ...[0x1f, 0x43, 0xb6, 0x75, 0x84, 0xa3, 0x81, 0x05, 0x00],
  ...[0x1f, 0x43, 0xb6, 0x75, 0x00, 0xe7, 0x81, 0x00],
  ...[0x1f, 0x43, 0xb6, 0x75, 0x8b, 0xe7, 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0],
];

function cluster(timecode: number, payload: number[] = [1, 2, 3]): Uint8Array {
  return el(0x1f43b675, el(0xe7, be(timecode, 2)), el(0xa3, [0x81, 0, 0, 0x80], ...[payload]));
}

function webm(opts: { unknownSize?: boolean; audioOnly?: boolean } = {}): { file: Uint8Array; clusters: number[] } {
  const header = el(0x1a45dfa3, el(0x4286, [1]), el(0x4282, text('webm')));
  const tracks = [
    ...(opts.audioOnly ? [] : [el(0xae, el(0xd7, [1]), el(0x83, [1]), el(0x86, text('V_VP9')))]),
    el(0xae, el(0xd7, [2]), el(0x83, [2]), el(0x86, text('A_OPUS'))),
  ];
  const init = concat(
    el(0x114d9b74, el(0xec, [0, 0, 0, 0])), // SeekHead
    el(0x1549a966, el(0x2ad7b1, be(1_000_000, 3)), el(0x4489, f64(3000))), // Info
    el(0x1654ae6b, ...tracks),
    el(0xec, new Array<number>(20).fill(0)), // Void
    el(0x1254c367, el(0x7373, [])), // Tags
  );
  const c = [cluster(0, DECOY), cluster(1000, [9, ...DECOY, 9]), cluster(2000)];
  const body = concat(init, ...c);
  const seg = opts.unknownSize ? concat([0x18, 0x53, 0x80, 0x67], UNKNOWN_SIZE, body) : el(0x18538067, body);
  const file = concat(header, seg);
  const first = file.length - c.reduce((n, x) => n + x.length, 0);
  const clusters = [first, first + (c[0]?.length ?? 0), first + (c[0]?.length ?? 0) + (c[1]?.length ?? 0)];
  return { file, clusters };
}

// ---------------------------------------------------------- synthetic fMP4

const VISUAL_ENTRY_HEAD = new Array<number>(78).fill(0);
const AUDIO_ENTRY_HEAD = new Array<number>(28).fill(0);

function trak(id: number, timescale: number, handler: string, entry: Uint8Array): Uint8Array {
  return box(
    'trak',
    fullbox('tkhd', 0, be(0, 8), be(id, 4), new Array<number>(68).fill(0)),
    box(
      'mdia',
      fullbox('mdhd', 0, be(0, 8), be(timescale, 4), be(0, 4), [0x55, 0xc4, 0, 0]),
      fullbox('hdlr', 0, be(0, 4), text(handler), new Array<number>(13).fill(0)),
      box('minf', box('stbl', fullbox('stsd', 0, be(1, 4), entry))),
    ),
  );
}

const ESDS = fullbox(
  'esds',
  0,
  [0x03, 0x80, 0x80, 0x80, 0x22, 0x00, 0x02, 0x00], // ES_Descriptor, ES_ID 2, no flags
  [0x04, 0x80, 0x80, 0x80, 0x14, 0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], // DecoderConfig, OTI 0x40
  [0x05, 0x80, 0x80, 0x80, 0x02, 0x12, 0x10], // AudioSpecificConfig: AOT 2
  [0x06, 0x80, 0x80, 0x80, 0x01, 0x02],
);

function moof(seq: number, trafs: Array<{ id: number; time: number; v1?: boolean }>, mdat: number[] = [1, 2, 3]): Uint8Array {
  return concat(
    box(
      'moof',
      fullbox('mfhd', 0, be(seq, 4)),
      ...trafs.map((t) =>
        box('traf', fullbox('tfhd', 0, be(t.id, 4)), t.v1 ? fullbox('tfdt', 1, be(t.time, 8)) : fullbox('tfdt', 0, be(t.time, 4))),
      ),
    ),
    box('mdat', mdat),
  );
}

function fmp4(opts: { mehd?: boolean; sidx?: boolean } = {}): { file: Uint8Array; moofs: number[] } {
  const init = concat(
    box('ftyp', text('iso5'), be(512, 4), text('iso5iso6mp41')),
    box(
      'moov',
      fullbox('mvhd', 0, be(0, 8), be(1000, 4), be(opts.mehd ? 0 : 4000, 4), new Array<number>(80).fill(0)),
      trak(1, 90000, 'vide', box('avc1', VISUAL_ENTRY_HEAD, box('avcC', [1, 0x64, 0x00, 0x1f, 0xff]))),
      trak(2, 48000, 'soun', box('mp4a', AUDIO_ENTRY_HEAD, ESDS)),
      box('mvex', ...(opts.mehd ? [fullbox('mehd', 0, be(3000, 4))] : []), fullbox('trex', 0, be(1, 4), new Array<number>(16).fill(0))),
    ),
    ...(opts.sidx ? [fullbox('sidx', 0, new Array<number>(24).fill(0))] : []),
  );
  // Decoy 'moof's inside mdat: first child not mfhd; mfhd of the wrong size; moof too small.
  const decoy = [
    ...[0, 0, 0, 40, ...text('moof'), 0, 0, 0, 16, ...text('mfhx'), 0, 0, 0, 0],
    ...[0, 0, 0, 40, ...text('moof'), 0, 0, 0, 99, ...text('mfhd'), 0, 0, 0, 0],
    ...[0, 0, 0, 16, ...text('moof'), 0, 0, 0, 16, ...text('mfhd'), 0, 0, 0, 0],
  ];
  const m = [
    moof(1, [{ id: 1, time: 0 }, { id: 2, time: 0 }], decoy),
    moof(2, [{ id: 1, time: 90000 }, { id: 2, time: 48000 }]),
    moof(3, [{ id: 1, time: 180000, v1: true }, { id: 2, time: 96000 }]),
  ];
  const file = concat(init, ...m);
  const moofs: number[] = [];
  let o = init.length;
  for (const x of m) {
    moofs.push(o);
    o += x.length;
  }
  return { file, moofs };
}

/** All segment starts found by scanning from 0. */
function scan(info: InitInfo, bytes: Uint8Array): number[] {
  const out: number[] = [];
  for (let at = findSegmentStart(info, bytes, 0); at !== null; at = findSegmentStart(info, bytes, at + 1)) out.push(at);
  return out;
}

function info(file: Uint8Array): InitInfo {
  const i = parseInit(file);
  if (!i) throw new Error('parseInit returned null');
  return i;
}

// ---------------------------------------------------------------- tests

describe('detectContainer', () => {
  it('recognizes EBML and ftyp, nothing else', () => {
    expect(detectContainer(webm().file)).toBe('webm');
    expect(detectContainer(fmp4().file)).toBe('mp4');
    expect(detectContainer(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]))).toBeNull();
    expect(detectContainer(new Uint8Array([0x1a, 0x45]))).toBeNull();
  });
});

describe('WebM', () => {
  it('parses init length, mime type, duration and timecode scale', () => {
    const { file, clusters } = webm();
    const i = info(file);
    expect(i.kind).toBe('webm');
    expect(i.initLength).toBe(clusters[0]);
    expect(i.mimeType).toBe('video/webm; codecs="vp9,opus"');
    expect(i.durationSeconds).toBeCloseTo(3, 9);
    expect(i.timecodeScaleNs).toBe(1e6);
  });

  it('handles an unknown-size Segment', () => {
    const { file, clusters } = webm({ unknownSize: true });
    const i = info(file);
    expect(i.initLength).toBe(clusters[0]);
    expect(scan(i, file)).toEqual(clusters);
  });

  it('labels audio-only files audio/webm', () => {
    expect(info(webm({ audioOnly: true }).file).mimeType).toBe('audio/webm; codecs="opus"');
  });

  it('returns null for every truncation before the first Cluster header', () => {
    const { file, clusters } = webm();
    const first = clusters[0] ?? 0;
    for (let n = 0; n < first + 5; n++) expect(parseInit(file.subarray(0, n)), `n=${n}`).toBeNull();
    for (let n = first + 5; n <= file.length; n++) expect(parseInit(file.subarray(0, n))?.initLength).toBe(first);
  });

  it('finds clusters, skipping decoy cluster IDs without a Timecode', () => {
    const { file, clusters } = webm();
    const i = info(file);
    expect(scan(i, file)).toEqual(clusters);
    expect(findSegmentStart(i, file, (clusters[0] ?? 0) + 1)).toBe(clusters[1]);
    // A window at an arbitrary offset reports indices relative to the window.
    const off = (clusters[0] ?? 0) + 3;
    expect(findSegmentStart(i, file.subarray(off))).toBe((clusters[1] ?? 0) - off);
    // Validation bytes cut off by the window's end: not found.
    // (ID 4 + size 1 + Timecode ID 1 + size 1 + value 2 = 9 bytes)
    expect(findSegmentStart(i, file.subarray(0, (clusters[2] ?? 0) + 8), (clusters[1] ?? 0) + 1)).toBeNull();
    expect(findSegmentStart(i, file.subarray(0, (clusters[2] ?? 0) + 9), (clusters[1] ?? 0) + 1)).toBe(clusters[2]);
  });

  it('reads cluster start times', () => {
    const { file, clusters } = webm();
    const i = info(file);
    expect(clusters.map((c) => segmentStartTime(i, file.subarray(c)))).toEqual([0, 1, 2]);
    expect(segmentStartTime({ ...i, timecodeScaleNs: 1e3 }, file.subarray(clusters[1]))).toBeCloseTo(0.001, 12);
    expect(segmentStartTime(i, file.subarray(0))).toBeNull();
    expect(segmentStartTime(i, file.subarray(clusters[1], (clusters[1] ?? 0) + 6))).toBeNull();
  });

  it('rejects malformed or unsupported files with clear errors', () => {
    const header = el(0x1a45dfa3, el(0x4282, text('webm')));
    const tracks = (codec: string): Uint8Array => el(0x1654ae6b, el(0xae, el(0x86, text(codec))));
    expect(() => parseInit(concat(header, el(0x18538067, tracks('V_MPEG4/ISO/AVC'), cluster(0))))).toThrow(/unsupported codec V_MPEG4/);
    expect(() => parseInit(concat(header, el(0x18538067, tracks('V_VP8'))))).toThrow(/without a Cluster/);
    expect(() => parseInit(concat(header, el(0x18538067, cluster(0))))).toThrow(/no audio or video track/);
    expect(() => parseInit(concat(el(0x1a45dfa3, el(0x4282, text('mkvx'))), el(0x18538067)))).toThrow(/DocType/);
    expect(() => parseInit(concat(header, [0x18, 0x53, 0x80, 0x67, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]))).toThrow(/malformed element/);
  });
});

describe('fragmented MP4', () => {
  it('parses init length, mime type, timescales and mvhd duration', () => {
    const { file, moofs } = fmp4();
    const i = info(file);
    expect(i.kind).toBe('mp4');
    expect(i.initLength).toBe(moofs[0]);
    expect(i.mimeType).toBe('video/mp4; codecs="avc1.64001f,mp4a.40.2"');
    expect(i.durationSeconds).toBe(4);
    expect([...i.timescales]).toEqual([
      [1, 90000],
      [2, 48000],
    ]);
  });

  it('prefers mehd fragment_duration and skips sidx', () => {
    const { file, moofs } = fmp4({ mehd: true, sidx: true });
    const i = info(file);
    expect(i.initLength).toBe(moofs[0]);
    expect(i.durationSeconds).toBe(3);
  });

  it('returns null for every truncation before the first moof header', () => {
    const { file, moofs } = fmp4();
    const first = moofs[0] ?? 0;
    for (let n = 0; n < first + 8; n++) expect(parseInit(file.subarray(0, n)), `n=${n}`).toBeNull();
    expect(parseInit(file.subarray(0, first + 8))?.initLength).toBe(first);
  });

  it('finds moofs, skipping a decoy moof without mfhd', () => {
    const { file, moofs } = fmp4();
    const i = info(file);
    expect(scan(i, file)).toEqual(moofs);
    const off = (moofs[0] ?? 0) + 1;
    expect(findSegmentStart(i, file.subarray(off))).toBe((moofs[1] ?? 0) - off);
    expect(findSegmentStart(i, file.subarray(0, (moofs[1] ?? 0) + 15), off)).toBeNull();
    expect(findSegmentStart(i, file.subarray(0, (moofs[1] ?? 0) + 16), off)).toBe(moofs[1]);
  });

  it('reads the smallest tfdt in seconds, including 64-bit tfdt', () => {
    const { file, moofs } = fmp4();
    const i = info(file);
    expect(moofs.map((m) => segmentStartTime(i, file.subarray(m)))).toEqual([0, 1, 2]);
    const big = moof(9, [
      { id: 1, time: 90000 * 100_000, v1: true }, // > 2^32 ticks
      { id: 2, time: 48000 * 100_000.5, v1: true },
    ]);
    expect(segmentStartTime(i, big)).toBe(100_000);
    const reversed = moof(9, [
      { id: 1, time: 90000 * 7 },
      { id: 2, time: 48000 * 6.5 },
    ]);
    expect(segmentStartTime(i, reversed)).toBe(6.5);
    expect(segmentStartTime(i, big.subarray(0, 40))).toBeNull(); // moof cut off
    expect(segmentStartTime(i, file)).toBeNull(); // ftyp, not a segment
  });

  it('rejects non-fragmented and malformed files with clear errors', () => {
    const ftyp = box('ftyp', text('isom'), be(0, 4));
    expect(() => parseInit(concat(ftyp, box('moov', fullbox('mvhd', 0, new Array<number>(96).fill(0))), box('mdat', [1])))).toThrow(
      /not fragmented/,
    );
    expect(() => parseInit(concat(ftyp, [0, 0, 0, 4, ...text('free')]))).toThrow(/malformed box header/);
    expect(() => parseInit(concat(ftyp, box('moof', fullbox('mfhd', 0, be(1, 4)))))).toThrow(/moof before moov/);
    expect(() => parseInit(concat(ftyp, box('moov', box('trak')), box('moof')))).toThrow(/no mvhd/);
  });
});

describe('garbage', () => {
  it('throws a clear error for content that is neither container', () => {
    expect(() => parseInit(new TextEncoder().encode('<!doctype html><html>'))).toThrow(/not a WebM or MP4/);
    expect(parseInit(new Uint8Array([0x1a, 0x45]))).toBeNull(); // could still become WebM
    expect(parseInit(new Uint8Array([0, 0, 0, 24, 0x66, 0x74]))).toBeNull(); // could still become MP4
  });

  it('never throws RangeError or hangs on random and mutated input', () => {
    let seed = 12345;
    const rand = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const bases = [webm().file, webm({ unknownSize: true }).file, fmp4().file, fmp4({ mehd: true }).file];
    const infos = bases.map(info);
    for (let round = 0; round < 4000; round++) {
      const base = bases[round % bases.length] ?? new Uint8Array();
      const bytes = round % 5 === 0 ? new Uint8Array(Math.floor(rand() * 200)).map(() => rand() * 256) : base.slice();
      for (let k = 0; k < 1 + rand() * 4; k++) bytes[Math.floor(rand() * bytes.length)] = rand() * 256;
      const cut = bytes.subarray(0, Math.floor(rand() * (bytes.length + 1)));
      try {
        parseInit(cut);
      } catch (err) {
        expect(err).toBeInstanceOf(Error);
        expect(err).not.toBeInstanceOf(RangeError);
        expect(err).not.toBeInstanceOf(TypeError);
      }
      for (const i of infos) {
        const at = findSegmentStart(i, cut, rand() * 50);
        if (at !== null) expect(at).toBeLessThan(cut.length);
        segmentStartTime(i, cut);
        if (at !== null) segmentStartTime(i, cut.subarray(at));
      }
    }
  });
});

describe('wholeSegmentsLength', () => {
  /** For every cut of the media after the init segment: the whole segments in it. */
  const everyCut = (i: InitInfo, file: Uint8Array, starts: number[], step = 1): void => {
    const ends = [...starts.slice(1), file.length];
    for (let e = i.initLength; e <= file.length; e += step) {
      const whole = wholeSegmentsLength(i, file.subarray(i.initLength, e));
      const expected = Math.max(i.initLength, ...ends.filter((x) => x <= e)) - i.initLength;
      expect(whole, `cut at ${e}`).toBe(expected);
    }
  };

  it('counts whole WebM Clusters only, walking their sizes', () => {
    const { file, clusters } = webm();
    everyCut(info(file), file, clusters);
  });

  it('counts an MP4 moof only with its mdat', () => {
    const { file, moofs } = fmp4();
    everyCut(info(file), file, moofs);
  });

  it('finds the end of unknown-size Clusters at the next Cluster (live streams)', () => {
    const { file } = webm({ unknownSize: true });
    const i = info(file);
    const open = (tc: number, payload: number[]): Uint8Array => {
      const sized = cluster(tc, payload);
      return concat([0x1f, 0x43, 0xb6, 0x75], UNKNOWN_SIZE, sized.subarray(5));
    };
    const live = concat(file.subarray(0, i.initLength), open(0, [1, 2, 3, 4]), open(1000, [5, 6]), open(2000, [7]));
    const starts = scan(i, live);
    expect(starts).toHaveLength(3);
    const media = live.subarray(i.initLength);
    // A Cluster of unknown size is whole once the next one starts; the last one never is
    // by itself (the Player appends it when the content ends).
    for (let e = 0; e <= media.length; e++) {
      // Whole up to the last Cluster start that can be recognised in the cut.
      const seen = scan(i, live.subarray(0, i.initLength + e)).filter((x) => x > i.initLength);
      const expected = Math.max(0, ...seen.map((x) => x - i.initLength));
      expect(wholeSegmentsLength(i, media.subarray(0, e)), `cut at ${e}`).toBe(expected);
    }
    expect(wholeSegmentsLength(i, media)).toBe((starts[2] ?? 0) - i.initLength);
  });

  it('waits for a Cluster larger than any read-ahead window, then takes it whole', () => {
    const { file } = webm();
    const i = info(file);
    const big = cluster(3000, new Array<number>(3 << 20).fill(7));
    const media = concat(big, cluster(4000));
    for (const e of [1, 1000, 1 << 20, big.length - 1]) expect(wholeSegmentsLength(i, media.subarray(0, e))).toBe(0);
    expect(wholeSegmentsLength(i, media.subarray(0, big.length))).toBe(big.length);
    expect(wholeSegmentsLength(i, media)).toBe(media.length);
  });

  it('refuses bytes that are no element, with a clear error', () => {
    const { file } = webm();
    expect(() => wholeSegmentsLength(info(file), new Uint8Array([0x00, 0x00, 0x00, 0x00]))).toThrow(/malformed element/);
    const mp4 = fmp4().file;
    expect(() => wholeSegmentsLength(info(mp4), new Uint8Array([0, 0, 0, 4, 0x6d, 0x6f, 0x6f, 0x66]))).toThrow(/malformed box/);
  });
});

describe('openClusterHead', () => {
  it('gives a growing Cluster as an unknown-size Cluster of its complete blocks', () => {
    const c = cluster(1000, new Array<number>(300).fill(5));
    // Timecode (E7 82 hi lo) and a SimpleBlock: nothing to play before the block is whole.
    const blockStart = c.indexOf(0xa3);
    for (let e = 0; e < c.length; e++) {
      const open = openClusterHead(c.subarray(0, e));
      if (e < c.length) expect(open, `cut at ${e}`).toBeNull();
    }
    const open = openClusterHead(concat(c, [0x1f]));
    expect(open).not.toBeNull();
    expect([...open!.head]).toEqual([0x1f, 0x43, 0xb6, 0x75, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    expect(open!.end).toBe(c.length);
    expect(open!.clusterEnd).toBe(c.length);
    expect(open!.children).toBeLessThan(blockStart);
  });

  it('stops at the last complete child, and only for a Cluster', () => {
    const blocks = [el(0xa3, [0x81, 0, 0, 0x80, 1, 2]), el(0xa3, [0x81, 0, 1, 0x80, 3, 4]), el(0xa3, [0x81, 0, 2, 0x80, 5])];
    const c = el(0x1f43b675, el(0xe7, be(2000, 2)), ...blocks);
    const second = c.length - (blocks[2]?.length ?? 0);
    for (let e = second; e < c.length; e++) expect(openClusterHead(c.subarray(0, e))?.end).toBe(second);
    expect(completeChildrenEnd(c, c.length - blocks.reduce((n, b) => n + b.length, 0), c.length)).toBe(c.length);
    expect(openClusterHead(el(0x1654ae6b, [1, 2, 3]))).toBeNull();
  });
});

// ------------------------------------------------------- real ffmpeg files

function haveFfmpeg(): boolean {
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Offsets of the top-level children (WebM: of the Segment) found by walking sizes, the ground truth for scanning. */
function walkSegments(i: InitInfo, file: Uint8Array): number[] {
  const out: number[] = [];
  const dv = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let pos = i.initLength;
  while (pos + 8 <= file.length) {
    if (i.kind === 'mp4') {
      if (String.fromCharCode(...file.subarray(pos + 4, pos + 8)) === 'moof') out.push(pos);
      pos += dv.getUint32(pos);
    } else {
      const id = dv.getUint32(pos);
      const first = file[pos + 4] ?? 0;
      const len = Math.clz32(first) - 23;
      let size = first & (0xff >> len);
      for (let k = 1; k < len; k++) size = size * 256 + (file[pos + 4 + k] ?? 0);
      if (id === 0x1f43b675) out.push(pos);
      else if (![0x1c53bb6b, 0x1254c367, 0xec].includes(id >>> 0)) break; // Cues, Tags, Void after the clusters
      pos += 4 + len + size;
    }
  }
  return out;
}

describe('real files from ffmpeg', () => {
  const run = (args: string[]): Uint8Array => {
    const dir = mkdtempSync(join(tmpdir(), 'ppspp-media-'));
    try {
      const out = join(dir, 'out');
      execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args, out], { stdio: 'pipe', timeout: 120_000 });
      return new Uint8Array(readFileSync(out));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const sources = ['-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=15', '-f', 'lavfi', '-i', 'sine=frequency=440', '-t', '3'];

  const check = (file: Uint8Array, kind: 'webm' | 'mp4', mime: RegExp): void => {
    const i = info(file);
    expect(i.kind).toBe(kind);
    expect(i.mimeType).toMatch(mime);
    if (i.durationSeconds !== null) expect(i.durationSeconds).toBeGreaterThan(2.5);
    if (i.durationSeconds !== null) expect(i.durationSeconds).toBeLessThan(3.5);
    // Every proper prefix before the first segment header is "not yet".
    expect(parseInit(file.subarray(0, i.initLength))).toBeNull();
    const starts = scan(i, file);
    expect(starts.length).toBeGreaterThanOrEqual(3);
    expect(starts[0]).toBe(i.initLength);
    expect(starts).toEqual(walkSegments(i, file)); // no false positives in real payload
    const times = starts.map((s, k) => segmentStartTime(i, file.subarray(s, starts[k + 1] ?? file.length)));
    expect(times[0]).not.toBeNull();
    expect(times[0] ?? 1).toBeLessThan(0.2);
    for (let k = 1; k < times.length; k++) expect(times[k] ?? -1).toBeGreaterThan(times[k - 1] ?? Infinity);
    expect(times[times.length - 1] ?? 9).toBeLessThan(3.5);
    // Cut anywhere, what is whole ends at a segment start (or the file's end).
    const ends = [...starts.slice(1), file.length];
    for (let e = i.initLength; e < file.length; e += 997) {
      const whole = wholeSegmentsLength(i, file.subarray(i.initLength, e));
      expect(whole, `cut at ${e}`).toBe(Math.max(i.initLength, ...ends.filter((x) => x <= e)) - i.initLength);
    }
    expect(wholeSegmentsLength(i, file.subarray(i.initLength))).toBe(file.length - i.initLength);
  };

  it('parses a real WebM (VP8 + Opus) and a real fragmented MP4 (H.264 + AAC)', () => {
    if (!haveFfmpeg()) throw new Error('ffmpeg is needed on PATH for this test (apt-get install ffmpeg)');
    check(run([...sources, '-c:v', 'libvpx', '-g', '15', '-c:a', 'libopus', '-f', 'webm']), 'webm', /^video\/webm; codecs="vp8,opus"$/);
    check(
      run([...sources, '-c:v', 'libx264', '-g', '15', '-c:a', 'aac', '-movflags', 'frag_keyframe+empty_moov+default_base_moof', '-f', 'mp4']),
      'mp4',
      /^video\/mp4; codecs="avc1\.[0-9a-f]{6},mp4a\.40\.2"$/,
    );
  }, 120_000);
});
