import { describe, expect, it } from 'vitest';
import { findSegmentStart, parseInit, segmentStartTime, wholeSegmentsLength } from '../../src/media/container.js';
import { FFMPEG_SOURCES, be, box, checkRealFile, concat, everyCut, fmp4, fullbox, haveFfmpeg, info, moof, runFfmpeg, scan, text } from './helpers.js';

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

describe('wholeSegmentsLength (MP4)', () => {
  it('counts an MP4 moof only with its mdat', () => {
    const { file, moofs } = fmp4();
    everyCut(info(file), file, moofs);
  });


  it('refuses bytes that are no box, with a clear error', () => {
    const mp4 = fmp4().file;
    expect(() => wholeSegmentsLength(info(mp4), new Uint8Array([0, 0, 0, 4, 0x6d, 0x6f, 0x6f, 0x66]))).toThrow(/malformed box/);
  });
});

describe('a real file from ffmpeg', () => {
  it('parses a real fragmented MP4 (H.264 + AAC)', () => {
    if (!haveFfmpeg()) throw new Error('ffmpeg is needed on PATH for this test (apt-get install ffmpeg)');
    checkRealFile(
      runFfmpeg([...FFMPEG_SOURCES, '-c:v', 'libx264', '-g', '15', '-c:a', 'aac', '-movflags', 'frag_keyframe+empty_moov+default_base_moof', '-f', 'mp4']),
      'mp4',
      /^video\/mp4; codecs="avc1\.[0-9a-f]{6},mp4a\.40\.2"$/,
    );
  }, 120_000);
});
