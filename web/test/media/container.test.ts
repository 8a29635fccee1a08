import { describe, expect, it } from 'vitest';
import { detectContainer, findSegmentStart, parseInit, segmentStartTime } from '../../src/media/container.js';
import { fmp4, info, webm } from './helpers.js';

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
