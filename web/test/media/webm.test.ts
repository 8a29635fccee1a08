import { describe, expect, it } from 'vitest';
import { findSegmentStart, parseInit, segmentStartTime, wholeSegmentsLength } from '../../src/media/container.js';
import { completeChildrenEnd, openClusterHead } from '../../src/media/webm.js';
import {
  FFMPEG_SOURCES,
  UNKNOWN_SIZE,
  be,
  checkRealFile,
  cluster,
  concat,
  el,
  everyCut,
  haveFfmpeg,
  info,
  runFfmpeg,
  scan,
  text,
  webm,
} from './helpers.js';

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

describe('wholeSegmentsLength (WebM)', () => {
  it('counts whole WebM Clusters only, walking their sizes', () => {
    const { file, clusters } = webm();
    everyCut(info(file), file, clusters);
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

describe('a real file from ffmpeg', () => {
  it('parses a real WebM (VP8 + Opus)', () => {
    if (!haveFfmpeg()) throw new Error('ffmpeg is needed on PATH for this test (apt-get install ffmpeg)');
    checkRealFile(runFfmpeg([...FFMPEG_SOURCES, '-c:v', 'libvpx', '-g', '15', '-c:a', 'libopus', '-f', 'webm']), 'webm', /^video\/webm; codecs="vp8,opus"$/);
  }, 120_000);
});
