/**
 * WebM (EBML/Matroska): the initialization segment (Info, Tracks), Cluster starts
 * and times, whole Clusters, and the head of a Cluster still arriving. Every read is
 * bounds-checked: truncated input gives `null`, malformed input a plain `Error`.
 */
import { ascii, mime, uintBE } from './bytes.js';
import type { InitInfo } from './container.js';

export const EBML_ID = 0x1a45dfa3;
const SEGMENT_ID = 0x18538067;
const CLUSTER_ID = 0x1f43b675;
const TIMECODE_ID = 0xe7;
const CRC32_ID = 0xbf;
const INFO_ID = 0x1549a966;
const TIMECODE_SCALE_ID = 0x2ad7b1;
const DURATION_ID = 0x4489;
const TRACKS_ID = 0x1654ae6b;
const TRACK_ENTRY_ID = 0xae;
const CODEC_ID_ID = 0x86;
const DOCTYPE_ID = 0x4282;

/** Length in bytes of the vint starting with `first` (0 if invalid). */
const vintLength = (first: number): number => (first === 0 ? 0 : Math.clz32(first) - 23);

interface Vint {
  value: number;
  length: number;
  /** A size with all value bits set means "unknown" (live streams). */
  unknown: boolean;
}

/**
 * The one EBML vint reader. Element IDs keep their length marker (that is
 * how the spec writes them); sizes drop it. null = invalid or cut off.
 */
function readVint(b: Uint8Array, pos: number, isId: boolean): Vint | null {
  const first = b[pos];
  if (first === undefined) return null;
  const length = vintLength(first);
  if (length === 0 || pos + length > b.length || (isId && length > 4)) return null;
  const mask = 0xff >> length;
  let value = isId ? first : first & mask;
  let allOnes = (first & mask) === mask;
  for (let i = 1; i < length; i++) {
    const x = b[pos + i] ?? 0;
    value = value * 256 + x;
    if (x !== 0xff) allOnes = false;
  }
  return { value, length, unknown: !isId && allOnes };
}

interface EbmlElement {
  id: number;
  dataStart: number;
  /** null: unknown size. */
  size: number | null;
}

/** 'short': more bytes needed to read the header; 'bad': not an element. */
function readElement(b: Uint8Array, pos: number): EbmlElement | 'short' | 'bad' {
  const id = readVint(b, pos, true);
  if (!id) return pos >= b.length || pos + vintLength(b[pos] ?? 0) > b.length ? 'short' : 'bad';
  const sp = pos + id.length;
  const size = readVint(b, sp, false);
  if (!size) return sp >= b.length || sp + vintLength(b[sp] ?? 0) > b.length ? 'short' : 'bad';
  return { id: id.value, dataStart: sp + size.length, size: size.unknown ? null : size.value };
}

/** Children of an element whose bytes are all present; anything odd is malformed. */
function* ebmlChildren(b: Uint8Array, start: number, end: number): Generator<{ id: number; start: number; end: number }> {
  const view = b.subarray(0, end);
  for (let pos = start; pos < end; ) {
    const el = readElement(view, pos);
    if (typeof el === 'string' || el.size === null || el.dataStart + el.size > end) {
      throw new Error(`WebM: malformed element at byte ${pos}`);
    }
    yield { id: el.id, start: el.dataStart, end: el.dataStart + el.size };
    pos = el.dataStart + el.size;
  }
}

function ebmlUint(b: Uint8Array, start: number, end: number): number {
  if (end - start > 8) throw new Error(`WebM: integer of ${end - start} bytes at byte ${start}`);
  return uintBE(b, start, end - start);
}

function ebmlFloat(b: Uint8Array, start: number, end: number): number {
  const dv = new DataView(b.buffer, b.byteOffset + start, end - start);
  if (end - start === 4) return dv.getFloat32(0);
  if (end - start === 8) return dv.getFloat64(0);
  if (end === start) return 0;
  throw new Error(`WebM: float of ${end - start} bytes at byte ${start}`);
}

const WEBM_CODECS = new Map([
  ['V_VP8', 'vp8'],
  ['V_VP9', 'vp9'],
  ['V_AV1', 'av01.0.08M.08'],
  ['A_OPUS', 'opus'],
  ['A_VORBIS', 'vorbis'],
]);

export function parseWebmInit(b: Uint8Array): InitInfo | null {
  // Top level: the EBML header, then the Segment.
  let pos = 0;
  let docType = 'matroska'; // EBML default when DocType is absent
  let segment: EbmlElement | null = null;
  while (!segment) {
    const el = readElement(b, pos);
    if (el === 'short') return null;
    if (el === 'bad') throw new Error(`WebM: malformed element at byte ${pos}`);
    if (el.id === SEGMENT_ID) {
      segment = el;
      break;
    }
    if (el.size === null) throw new Error(`WebM: unknown-size element before the Segment at byte ${pos}`);
    const end = el.dataStart + el.size;
    if (end > b.length) return null;
    if (el.id === EBML_ID) {
      for (const c of ebmlChildren(b, el.dataStart, end)) if (c.id === DOCTYPE_ID) docType = ascii(b, c.start, c.end);
    }
    pos = end;
  }
  if (docType !== 'webm' && docType !== 'matroska') throw new Error(`WebM: unsupported DocType "${docType}"`);

  // Segment children up to the first Cluster; all but Info and Tracks are skipped by size.
  const segEnd = segment.size === null ? Infinity : segment.dataStart + segment.size;
  let scaleNs = 1e6;
  let duration = 0;
  const video: string[] = [];
  const audio: string[] = [];
  for (pos = segment.dataStart; pos < segEnd; ) {
    const el = readElement(b, pos);
    if (el === 'short') return null;
    if (el === 'bad') throw new Error(`WebM: malformed element at byte ${pos}`);
    if (el.id === CLUSTER_ID) {
      if (video.length + audio.length === 0) throw new Error('WebM: no audio or video track before the first Cluster');
      const durationSeconds = (duration * scaleNs) / 1e9;
      return {
        kind: 'webm',
        initLength: pos,
        mimeType: mime('webm', video, audio),
        durationSeconds: durationSeconds > 0 && Number.isFinite(durationSeconds) ? durationSeconds : null,
        timecodeScaleNs: scaleNs,
        timescales: new Map(),
      };
    }
    if (el.size === null) throw new Error(`WebM: unknown-size element 0x${el.id.toString(16)} before the first Cluster`);
    const end = el.dataStart + el.size;
    if (end > segEnd) throw new Error(`WebM: element at byte ${pos} overruns its Segment`);
    if ((el.id === INFO_ID || el.id === TRACKS_ID) && end > b.length) return null;
    if (el.id === INFO_ID) {
      for (const c of ebmlChildren(b, el.dataStart, end)) {
        if (c.id === TIMECODE_SCALE_ID) scaleNs = ebmlUint(b, c.start, c.end) || 1e6;
        if (c.id === DURATION_ID) duration = ebmlFloat(b, c.start, c.end);
      }
    } else if (el.id === TRACKS_ID) {
      for (const entry of ebmlChildren(b, el.dataStart, end)) {
        if (entry.id !== TRACK_ENTRY_ID) continue;
        for (const c of ebmlChildren(b, entry.start, entry.end)) {
          if (c.id !== CODEC_ID_ID) continue;
          const id = ascii(b, c.start, c.end);
          const codec = WEBM_CODECS.get(id);
          // Subtitle and other tracks are not for MediaSource; skip them.
          if (!id.startsWith('V_') && !id.startsWith('A_')) continue;
          if (codec === undefined) throw new Error(`WebM: unsupported codec ${id}`);
          (id.startsWith('V_') ? video : audio).push(codec);
        }
      }
    }
    pos = end;
  }
  throw new Error('WebM: the Segment ends without a Cluster');
}

/**
 * Where the Cluster Timecode value lies if a Cluster starts at `pos`. The
 * Timecode check keeps 1F 43 B6 75 inside frame data from passing as a Cluster.
 */
function clusterTimecode(b: Uint8Array, pos: number): { start: number; end: number } | null {
  if (pos + 4 > b.length || uintBE(b, pos, 4) !== CLUSTER_ID) return null;
  const size = readVint(b, pos + 4, false);
  if (!size) return null;
  let p = pos + 4 + size.length;
  if (b[p] === CRC32_ID) {
    // Matroska allows a CRC-32 as first child; WebM muxers do not write one.
    if (b[p + 1] !== 0x84) return null;
    p += 6;
  }
  if (b[p] !== TIMECODE_ID) return null;
  const tsize = readVint(b, p + 1, false);
  if (!tsize || tsize.unknown || tsize.value < 1 || tsize.value > 8) return null;
  const start = p + 1 + tsize.length;
  const end = start + tsize.value;
  if (end > b.length) return null;
  if (!size.unknown && pos + 4 + size.length + size.value < end) return null;
  return { start, end };
}

/** The first Cluster start (Cluster ID + Timecode) at or after `start` in `bytes`, or null. */
export function findClusterStart(bytes: Uint8Array, start: number): number | null {
  for (let i = bytes.indexOf(0x1f, start); i !== -1; i = bytes.indexOf(0x1f, i + 1)) {
    if (clusterTimecode(bytes, i)) return i;
  }
  return null;
}

/** The Timecode in seconds of the Cluster starting at bytes[0], or null. */
export function clusterStartTime(info: InitInfo, bytes: Uint8Array): number | null {
  const tc = clusterTimecode(bytes, 0);
  return tc ? (uintBE(bytes, tc.start, tc.end - tc.start) * info.timecodeScaleNs) / 1e9 : null;
}

/** `wholeSegmentsLength` for WebM: elements walked by their sizes, unknown-size Clusters ended by the next. */
export function wholeClustersLength(bytes: Uint8Array): number {
  let pos = 0;
  let whole = 0;
  for (;;) {
    const el = readElement(bytes, pos);
    if (el === 'short') return whole;
    if (el === 'bad') throw new Error(`WebM: malformed element at byte ${pos} of a media segment run`);
    if (el.size === null) {
      const next = findClusterStart(bytes, el.dataStart);
      if (next === null) return whole;
      pos = next;
    } else {
      const end = el.dataStart + el.size;
      if (end > bytes.length) return whole;
      pos = end;
    }
    whole = pos;
  }
}

/**
 * For a WebM Cluster starting at `bytes[0]` and not yet whole: the part of it that can
 * be appended now, so playback need not wait for the whole Cluster. That is the Cluster's
 * ID with an unknown size (as live streams write it: the next Cluster ends it for the
 * parser) and its children up to the last complete one. `end` is where those children end
 * in `bytes`, `clusterEnd` where the Cluster ends (null for an unknown size), and
 * `children` where its children start. Null when there is no complete block yet, or when
 * `bytes` does not start with a Cluster.
 */
export function openClusterHead(
  bytes: Uint8Array,
): { head: Uint8Array; children: number; end: number; clusterEnd: number | null } | null {
  if (!clusterTimecode(bytes, 0)) return null;
  const el = readElement(bytes, 0);
  if (typeof el === 'string') return null;
  const end = completeChildrenEnd(bytes, el.dataStart, el.size === null ? Infinity : el.dataStart + el.size);
  // The Timecode alone plays nothing.
  const timecode = readElement(bytes, el.dataStart);
  if (typeof timecode === 'string' || timecode.size === null || end <= timecode.dataStart + timecode.size) return null;
  const head = new Uint8Array(4 + 8);
  head.set(bytes.subarray(0, 4));
  head.set([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 4);
  return { head, children: el.dataStart, end, clusterEnd: el.size === null ? null : el.dataStart + el.size };
}

/** Where the complete elements from `pos` on, inside a parent ending at `limit`, end. */
export function completeChildrenEnd(bytes: Uint8Array, pos: number, limit: number): number {
  const stop = Math.min(limit, bytes.length);
  while (pos < stop) {
    const el = readElement(bytes, pos);
    if (typeof el === 'string' || el.size === null) break;
    const end = el.dataStart + el.size;
    if (end > stop) break;
    pos = end;
  }
  return pos;
}

/**
 * `firstSegmentEnd` for WebM: where the element at `bytes[0]` ends; null while its header
 * is not in `bytes`, or for an unknown size (a live stream's Cluster).
 */
export function firstElementEnd(bytes: Uint8Array): number | null {
  const el = readElement(bytes, 0);
  return typeof el === 'string' || el.size === null ? null : el.dataStart + el.size;
}
