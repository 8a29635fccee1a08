/**
 * SeekSearch over files described by where their segments start: the segment a seek
 * appends from starts at or shortly before the time, found in a few probes, whatever the
 * bit rate does along the file.
 */
import { describe, expect, it } from 'vitest';
import { CLOSE_SECONDS, MAX_PROBES, SeekSearch } from '../../src/media/seek-search.js';

const FLOOR = 4_000;
const CHUNK = 1024;
const PROBE = 512 << 10;

interface File {
  /** Segment starts, ascending. */
  segments: { at: number; time: number }[];
  length: number;
  duration: number;
}

/** Segments of `seconds` each; `rate(t)` bytes per second of media around time t. */
function file(duration: number, seconds: number, rate: (t: number) => number): File {
  const segments: { at: number; time: number }[] = [];
  let at = FLOOR;
  for (let time = 0; time < duration; time += seconds) {
    segments.push({ at, time });
    at += Math.round(rate(time) * seconds);
  }
  return { segments, length: at, duration };
}

/** A seek to `target` in `f` as the feed runs it (the probe looks as far as `reach` bytes from its start); where it appends from, and the probes it took. */
function seek(f: File, target: number, reach = Infinity): { from: number; probes: number[] } {
  const rate = (f.length - FLOOR) / f.duration;
  const search = new SeekSearch(target, FLOOR + (target / f.duration) * (f.length - FLOOR), { floor: FLOOR, rate, probeBytes: PROBE, align: CHUNK });
  const probes = [search.start];
  for (;;) {
    const start = search.start;
    const s = f.segments.find((x) => x.at >= start && x.at < start + reach);
    const step = s ? search.found(s.at, s.time) : search.noneFound();
    if ('from' in step) return { from: step.from, probes };
    expect(step.probe % CHUNK).toBe(0);
    probes.push(step.probe);
    expect(probes.length, 'probes').toBeLessThanOrEqual(2 * MAX_PROBES);
  }
}

function timeAt(f: File, at: number): number {
  const s = f.segments.find((x) => x.at === at);
  expect(s, `a segment starts at ${at}`).toBeDefined();
  return s!.time;
}

/** The segment a seek should take: the last one starting at or before the time. */
function truth(f: File, target: number): { at: number; time: number } {
  return f.segments.filter((s) => s.time <= target).at(-1)!;
}

describe('SeekSearch', () => {
  it('at a steady bit rate: one probe, a few seconds before the time', () => {
    const f = file(5_700, 2, () => 190_000);
    for (const target of [620.08, 2840, 5420]) {
      const { from, probes } = seek(f, target);
      expect(probes).toHaveLength(1);
      const time = timeAt(f, from);
      expect(time).toBeLessThanOrEqual(target);
      expect(target - time).toBeLessThanOrEqual(CLOSE_SECONDS);
    }
  });

  it('where the bit rate wanders, as an encoder\'s does: within a few seconds, in a few probes', () => {
    // Segments of 2, 4 and 6 s, each 0.5 to 1.5 times the average, over scenes of a few
    // minutes at half to one and a half times it.
    let seed = 12345;
    const random = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const seconds of [2, 4, 6]) {
      const f = file(5_700, seconds, (t) => 190_000 * (0.5 + random()) * (1 + 0.5 * Math.sin(t / 400)));
      const counts: number[] = [];
      for (let target = 1; target < f.duration; target += 37.3) {
        const { from, probes } = seek(f, target);
        const time = timeAt(f, from);
        expect(time, `seek to ${target}`).toBeLessThanOrEqual(target);
        // Close enough, or the segment before the one that would have been.
        expect(target - time, `seek to ${target}: probes at ${probes.join(', ')}`).toBeLessThanOrEqual(CLOSE_SECONDS + seconds);
        counts.push(probes.length);
      }
      const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
      expect(mean, `${seconds} s segments: probes ${counts.join(' ')}`).toBeLessThanOrEqual(4.5);
      expect(Math.max(...counts)).toBeLessThanOrEqual(8);
    }
  });

  it('where the bit rate jumps tenfold: still before the time and near it, within the probes allowed', () => {
    // A busy first quarter at four times the rate; a still stretch at a fifteenth; 5 s segments.
    const shapes = [(t: number) => (t < 1_500 ? 800_000 : 200_000), (t: number) => (t > 2_000 && t < 4_000 ? 20_000 : 300_000)];
    for (const shape of shapes) {
      const f = file(6_000, 5, shape);
      for (const target of [3, 700, 1_499, 1_501, 2_500, 3_999, 4_010, 5_990]) {
        const { from, probes } = seek(f, target);
        const time = timeAt(f, from);
        expect(time, `seek to ${target}: appended from ${time}`).toBeLessThanOrEqual(target);
        expect(target - time, `seek to ${target}: probes at ${probes.join(', ')}`).toBeLessThanOrEqual(2 * CLOSE_SECONDS);
        expect(probes.length, `seek to ${target}`).toBeLessThanOrEqual(MAX_PROBES);
      }
    }
  });

  it('takes the closest segment before the time found when the probes run out', () => {
    // Segments of very uneven sizes: the interpolation keeps missing.
    const f = file(2_000, 2, (t) => (Math.floor(t / 2) % 7 === 0 ? 4_000_000 : 1_000));
    for (const target of [501, 1_333, 1_999]) {
      const { from } = seek(f, target);
      expect(timeAt(f, from)).toBeLessThanOrEqual(target);
      expect(from).toBeLessThanOrEqual(truth(f, target).at);
    }
  });

  it('a time before the first segment, or no segment start within reach: from the floor', () => {
    const f = file(600, 2, () => 100_000);
    expect(seek(f, 0).from).toBe(FLOOR);
    // Nothing starts within a probe's reach of anywhere: back to the floor.
    expect(seek({ ...f, segments: [] }, 300).from).toBe(FLOOR);
  });

  it('without a bit rate: back until a segment starts at or before the time', () => {
    const f = file(600, 2, () => 100_000);
    const search = new SeekSearch(300, f.length, { floor: FLOOR, rate: null, probeBytes: PROBE, align: CHUNK });
    let step = search.found(f.segments.at(-1)!.at, f.segments.at(-1)!.time);
    let probes = 0;
    while ('probe' in step) {
      probes += 1;
      const start = step.probe;
      const s = f.segments.find((x) => x.at >= start)!;
      step = search.found(s.at, s.time);
    }
    expect(timeAt(f, step.from)).toBeLessThanOrEqual(300);
    expect(probes).toBeLessThanOrEqual(8);
  });
});
