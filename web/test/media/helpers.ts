/**
 * Byte builders for synthetic WebM and fragmented MP4 files, and the checks shared by the
 * container tests (webm.test.ts, mp4.test.ts, container.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { type InitInfo, findSegmentStart, parseInit, segmentStartTime, wholeSegmentsLength } from '../../src/media/container.js';

// ------------------------------------------------------------ byte builders

export { concat, text, be, el, UNKNOWN_SIZE, f64, box, fullbox, trak, ESDS } from '../bytes.js';
import { concat, text, be, el, UNKNOWN_SIZE, f64, box, fullbox, trak, ESDS } from '../bytes.js';

// --------------------------------------------------------- synthetic WebM

/** Cluster IDs in frame data: a valid size and child but no Timecode; a bad size; a Timecode longer than 8 bytes. */
export const DECOY = [
  ...[0x1f, 0x43, 0xb6, 0x75, 0x84, 0xa3, 0x81, 0x05, 0x00],
  ...[0x1f, 0x43, 0xb6, 0x75, 0x00, 0xe7, 0x81, 0x00],
  ...[0x1f, 0x43, 0xb6, 0x75, 0x8b, 0xe7, 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0],
];

export function cluster(timecode: number, payload: number[] = [1, 2, 3]): Uint8Array {
  return el(0x1f43b675, el(0xe7, be(timecode, 2)), el(0xa3, [0x81, 0, 0, 0x80], ...[payload]));
}

export function webm(opts: { unknownSize?: boolean; audioOnly?: boolean } = {}): { file: Uint8Array; clusters: number[] } {
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

export const VISUAL_ENTRY_HEAD = new Array<number>(78).fill(0);
export const AUDIO_ENTRY_HEAD = new Array<number>(28).fill(0);

export function moof(seq: number, trafs: Array<{ id: number; time: number; v1?: boolean }>, mdat: number[] = [1, 2, 3]): Uint8Array {
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

export function fmp4(opts: { mehd?: boolean; sidx?: boolean } = {}): { file: Uint8Array; moofs: number[] } {
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
export function scan(info: InitInfo, bytes: Uint8Array): number[] {
  const out: number[] = [];
  for (let at = findSegmentStart(info, bytes, 0); at !== null; at = findSegmentStart(info, bytes, at + 1)) out.push(at);
  return out;
}

export function info(file: Uint8Array): InitInfo {
  const i = parseInit(file);
  if (!i) throw new Error('parseInit returned null');
  return i;
}

/** For every cut of the media after the init segment: the whole segments in it. */
export const everyCut = (i: InitInfo, file: Uint8Array, starts: number[], step = 1): void => {
  const ends = [...starts.slice(1), file.length];
  for (let e = i.initLength; e <= file.length; e += step) {
    const whole = wholeSegmentsLength(i, file.subarray(i.initLength, e));
    const expected = Math.max(i.initLength, ...ends.filter((x) => x <= e)) - i.initLength;
    expect(whole, `cut at ${e}`).toBe(expected);
  }
};

// ------------------------------------------------------- real ffmpeg files

export function haveFfmpeg(): boolean {
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Offsets of the top-level children (WebM: of the Segment) found by walking sizes, the ground truth for scanning. */
export function walkSegments(i: InitInfo, file: Uint8Array): number[] {
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

/** Runs ffmpeg with `args` and returns the file it wrote. */
export const runFfmpeg = (args: string[]): Uint8Array => {
  const dir = mkdtempSync(join(tmpdir(), 'ppspp-media-'));
  try {
    const out = join(dir, 'out');
    execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args, out], { stdio: 'pipe', timeout: 120_000 });
    return new Uint8Array(readFileSync(out));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
/** Three seconds of test picture and tone. */
export const FFMPEG_SOURCES = ['-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=15', '-f', 'lavfi', '-i', 'sine=frequency=440', '-t', '3'];

/** What a real file must show: its kind and type, segment starts found by scanning equal to those walked by size, rising start times, whole segments at every cut. */
export const checkRealFile = (file: Uint8Array, kind: 'webm' | 'mp4', mime: RegExp): void => {
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
