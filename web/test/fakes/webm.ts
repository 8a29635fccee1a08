/**
 * A small synthetic WebM (VP9 + Opus track entries, one Cluster a second with one
 * SimpleBlock of pseudo-random bytes), laid out as ffmpeg's muxer lays it out: EBML
 * header, Segment, SeekHead, Info (with Duration), Tracks, Clusters. Enough for the
 * Player's parsing; no decoder ever sees it.
 */
import { be, concat, el, f64, text } from '../bytes.js';

/** Deterministic pseudo-random bytes (xorshift). */
export function randomBytes(len: number, seed: number): Uint8Array {
  let x = seed | 1;
  const out = new Uint8Array(len);
  for (let i = 0; i < len; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export interface SyntheticWebm {
  file: Uint8Array;
  /** Bytes before the first Cluster. */
  initLength: number;
  /** Byte offset of each Cluster, and its time in seconds. */
  clusters: { offset: number; time: number }[];
  /** Where each SimpleBlock ends in the file (the last of a Cluster ends the Cluster). */
  blockEnds: Set<number>;
  durationSeconds: number;
  mimeType: string;
}

/** `seconds` Clusters of `clusterBytes` (about) each, in `blocks` SimpleBlocks. */
export function syntheticWebm(seconds: number, clusterBytes: number, blocks = 1): SyntheticWebm {
  const header = el(0x1a45dfa3, el(0x4286, [1]), el(0x4282, text('webm')), el(0x4287, [4]), el(0x4285, [2]));
  const init = concat(
    el(0x114d9b74, el(0x4dbb, el(0x53ab, [0x15, 0x49, 0xa9, 0x66]), el(0x53ac, [0]))), // SeekHead
    el(0x1549a966, el(0x2ad7b1, be(1_000_000, 3)), el(0x4489, f64(seconds * 1000))), // Info: ms, Duration
    el(
      0x1654ae6b, // Tracks
      el(0xae, el(0xd7, [1]), el(0x83, [1]), el(0x86, text('V_VP9'))),
      el(0xae, el(0xd7, [2]), el(0x83, [2]), el(0x86, text('A_OPUS'))),
    ),
  );
  const clusters: Uint8Array[] = [];
  const blockSizes: number[][] = [];
  for (let s = 0; s < seconds; s++) {
    const size = Math.floor(clusterBytes / blocks);
    const simpleBlocks = Array.from({ length: blocks }, (_, b) =>
      // Track 1, at b * 40 ms into the Cluster, the first a keyframe.
      el(0xa3, concat([0x81], be(b * 40, 2), [b === 0 ? 0x80 : 0]), randomBytes(size, s * 1000 + b + 1)),
    );
    clusters.push(el(0x1f43b675, el(0xe7, be(s * 1000, 2)), ...simpleBlocks));
    blockSizes.push(simpleBlocks.map((b) => b.length));
  }
  const body = concat(init, ...clusters);
  const segment = el(0x18538067, body);
  const file = concat(header, segment);
  const initLength = file.length - clusters.reduce((n, c) => n + c.length, 0);
  const offsets: { offset: number; time: number }[] = [];
  const blockEnds = new Set<number>();
  let at = initLength;
  clusters.forEach((c, s) => {
    offsets.push({ offset: at, time: s });
    at += c.length;
    let end = at;
    for (const size of [...(blockSizes[s] ?? [])].reverse()) {
      blockEnds.add(end);
      end -= size;
    }
  });
  return { file, initLength, clusters: offsets, blockEnds, durationSeconds: seconds, mimeType: 'video/webm; codecs="vp9,opus"' };
}
