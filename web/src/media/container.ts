/**
 * The two containers MediaSource accepts as a byte stream: WebM (EBML/Matroska,
 * `webm.ts`) and fragmented MP4 (ISO BMFF, `mp4.ts`); `bytes.ts` holds what both read
 * with. This module says which one a file is and asks its parser.
 *
 * The swarm delivers a file as verified chunks in any order, so the player
 * needs to know where the initialization segment ends, which MIME type to
 * give `addSourceBuffer`, and where inside an arbitrary window of bytes a
 * media segment (Cluster / moof) starts and at what time — to start playback
 * or seek without having the whole file. Only those few fields are read.
 *
 * Every read is bounds-checked: truncated input gives `null`, malformed
 * input a plain `Error` with a message, never a RangeError or an endless loop.
 */
import { ascii, uintBE } from './bytes.js';
import { firstFragmentEnd, fragmentStartTime, findMoofStart, parseMp4Init, wholeFragmentsLength } from './mp4.js';
import {
  EBML_ID, clusterStartTime, findClusterStart, firstElementEnd, parseWebmInit, wholeClustersLength,
} from './webm.js';

export type ContainerKind = 'webm' | 'mp4';

export interface InitInfo {
  kind: ContainerKind;
  /** Bytes before the first media segment; append these first, once. */
  initLength: number;
  /** For `MediaSource.isTypeSupported` / `addSourceBuffer`. */
  mimeType: string;
  durationSeconds: number | null;
  /** WebM: nanoseconds per Cluster timecode unit (Matroska default 1e6). */
  timecodeScaleNs: number;
  /** MP4: track_ID → media timescale (mdhd), to turn tfdt into seconds. */
  timescales: Map<number, number>;
}

/** Which container a file is, from its first 8 bytes; null if neither. */
export function detectContainer(head: Uint8Array): ContainerKind | null {
  if (head.length >= 4 && uintBE(head, 0, 4) === EBML_ID) return 'webm';
  if (head.length >= 8 && ascii(head, 4, 8) === 'ftyp') return 'mp4';
  return null;
}

/**
 * Reads the initialization segment from the first bytes of a file. null:
 * `head` is too short yet (fetch more and call again). Throws an Error for
 * content that is neither container, is malformed, or cannot be streamed.
 */
export function parseInit(head: Uint8Array): InitInfo | null {
  const kind = detectContainer(head);
  if (kind === 'webm') return parseWebmInit(head);
  if (kind === 'mp4') return parseMp4Init(head);
  const magic = [0x1a, 0x45, 0xdf, 0xa3];
  const ftyp = [0x66, 0x74, 0x79, 0x70];
  const maybeWebm = head.length < 4 && head.every((x, i) => x === magic[i]);
  const maybeMp4 = head.length < 8 && head.subarray(4).every((x, i) => x === ftyp[i]);
  if (maybeWebm || maybeMp4) return null;
  throw new Error('not a WebM or MP4 file: expected an EBML header (1A 45 DF A3) or an ftyp box at byte 0');
}

/**
 * A live stream's initialisation segment, alone (it comes in the live URI): read as
 * {@link parseInit} reads a file's, as if a media segment followed. null if it is not a
 * whole initialisation segment.
 */
export function parseLiveInit(init: Uint8Array): InitInfo | null {
  const kind = detectContainer(init);
  if (kind === null) return null;
  // An empty Cluster, or a bare moof box header: where the first media segment would start.
  const next = kind === 'webm' ? [0x1f, 0x43, 0xb6, 0x75, 0x80] : [0, 0, 0, 8, 0x6d, 0x6f, 0x6f, 0x66];
  const head = new Uint8Array(init.length + next.length);
  head.set(init);
  head.set(next, init.length);
  try {
    const info = parseInit(head);
    return info && info.initLength === init.length ? info : null;
  } catch {
    return null;
  }
}

/**
 * Index in `bytes` (a window of the file at any offset) of the first media
 * segment start at or after `from`, or null. Lets a peer that joins mid-file
 * or seeks start appending at a segment boundary. Candidates are validated
 * (Cluster + Timecode, moof + mfhd); one whose validation bytes run past the
 * end of the window is not reported.
 */
export function findSegmentStart(info: InitInfo, bytes: Uint8Array, from = 0): number | null {
  const start = Number.isFinite(from) ? Math.max(0, Math.ceil(from)) : 0;
  return info.kind === 'webm' ? findClusterStart(bytes, start) : findMoofStart(bytes, start);
}

/**
 * Media time in seconds at which the segment starting at bytes[0] begins
 * (WebM: Cluster Timecode; MP4: smallest tfdt of the moof, which must be
 * complete in `bytes`). null if too short or not a segment start.
 */
export function segmentStartTime(info: InitInfo, bytes: Uint8Array): number | null {
  return info.kind === 'webm' ? clusterStartTime(info, bytes) : fragmentStartTime(info, bytes);
}

/**
 * How many of `bytes` (a window of the file starting at a media segment or other
 * top-level element, e.g. just after the initialization segment) form whole segments:
 * the offset of the last boundary whose every byte before it is here. Only whole
 * segments go to `appendBuffer`: Firefox keeps just the first frame of a WebM Cluster
 * split across appends. WebM elements are walked by their sizes; a Cluster of unknown
 * size (live streams) ends where the next Cluster starts. An MP4 `moof` counts only
 * with the box after it (its `mdat`). Throws an Error on bytes that are no element.
 */
export function wholeSegmentsLength(info: InitInfo, bytes: Uint8Array): number {
  return info.kind === 'webm' ? wholeClustersLength(bytes) : wholeFragmentsLength(bytes);
}

/**
 * Where the media segment starting at `bytes[0]` ends (an offset in `bytes`, which may
 * reach past them), read from its headers alone; null while they are not all in `bytes`,
 * or where only the next segment would tell (a WebM Cluster of unknown size). Tells the
 * engine how much playback waits for before it can show the segment.
 */
export function firstSegmentEnd(info: InitInfo, bytes: Uint8Array): number | null {
  return info.kind === 'webm' ? firstElementEnd(bytes) : firstFragmentEnd(bytes);
}
