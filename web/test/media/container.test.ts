import { describe, expect, it } from 'vitest';
import { detectContainer, findSegmentStart, firstSegmentEnd, parseInit, segmentStartTime } from '../../src/media/container.js';
import { UNKNOWN_SIZE, cluster, concat, fmp4, info, text, webm } from './helpers.js';

describe('detectContainer', () => {
  it('recognizes EBML and ftyp, nothing else', () => {
    expect(detectContainer(webm().file)).toBe('webm');
    expect(detectContainer(fmp4().file)).toBe('mp4');
    expect(detectContainer(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]))).toBeNull();
    expect(detectContainer(new Uint8Array([0x1a, 0x45]))).toBeNull();
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

describe('firstSegmentEnd', () => {
  // Every cut of the file from the first segment's start: its end once the headers that
  // give it are in, null before.
  const check = (file: Uint8Array, starts: number[], headerEnd: number): void => {
    const i = info(file);
    const first = starts[0] as number;
    const end = (starts[1] as number) - first;
    for (let cut = first; cut <= file.length; cut++) {
      const got = firstSegmentEnd(i, file.subarray(first, cut));
      expect(got, `cut at ${cut}`).toBe(cut - first >= headerEnd ? end : null);
    }
  };

  it('MP4: a moof ends with the mdat after it, known from the mdat header on', () => {
    const { file, moofs } = fmp4();
    const moofSize = be4(file, moofs[0] as number);
    check(file, moofs, moofSize + 8);
  });

  it('WebM: a Cluster ends where its size says, known from its header on', () => {
    const { file, clusters } = webm();
    // Cluster ID (4 bytes) and a one-byte size.
    check(file, clusters, 5);
  });

  it('a WebM Cluster of unknown size has no end of its own', () => {
    const { file, clusters } = webm({ unknownSize: true });
    const open = concat([0x1f, 0x43, 0xb6, 0x75], UNKNOWN_SIZE, cluster(0).subarray(5));
    expect(firstSegmentEnd(info(file), open)).toBeNull();
    expect(clusters.length).toBeGreaterThan(0);
  });

  it('MP4: a box of size 0 (to the end of the file) has no end it can tell', () => {
    const { file } = fmp4();
    expect(firstSegmentEnd(info(file), new Uint8Array([0, 0, 0, 0, ...text('mdat'), 1, 2]))).toBeNull();
  });
});

function be4(b: Uint8Array, at: number): number {
  return (((b[at] as number) << 24) >>> 0) + ((b[at + 1] as number) << 16) + ((b[at + 2] as number) << 8) + (b[at + 3] as number);
}
