import { describe, expect, it } from 'vitest';
import { type Stall, StallWatch, type VideoLike, bufferedAhead } from '../../src/media/stall-watch.js';

/** A video element's playback state, set by the test. */
class FakeVideo implements VideoLike {
  currentTime = 0;
  paused = false;
  ended = false;
  seeking = false;
  ranges: [number, number][] = [];
  get buffered(): VideoLike['buffered'] {
    const r = this.ranges;
    return { length: r.length, start: (i) => r[i]![0], end: (i) => r[i]![1] };
  }
}

function setup(stuckAfterMs = 8000): { v: FakeVideo; w: StallWatch; stalls: Stall[]; stuck: Stall[] } {
  const v = new FakeVideo();
  const stalls: Stall[] = [];
  const stuck: Stall[] = [];
  const w = new StallWatch(v, { stuckAfterMs, onStall: (s) => stalls.push(s), onStuck: (s) => stuck.push(s) });
  return { v, w, stalls, stuck };
}

/** Plays from `from` for `ms`, ticking every 100 ms, the playhead moving with time. */
function play(v: FakeVideo, w: StallWatch, from: number, ms: number): number {
  for (let t = from; t <= from + ms; t += 100) {
    v.currentTime += 0.1;
    w.tick(t);
  }
  return from + ms + 100;
}

/** Ticks every 100 ms for `ms` with the playhead standing still. */
function standStill(w: StallWatch, from: number, ms: number): number {
  for (let t = from; t <= from + ms; t += 100) w.tick(t);
  return from + ms + 100;
}

describe('StallWatch', () => {
  it('reports a stall for lack of data once the playhead moves again', () => {
    const { v, w, stalls, stuck } = setup();
    v.ranges = [[0, 5]];
    let now = play(v, w, 0, 2000);
    v.currentTime = 5; // at the end of what is buffered
    now = standStill(w, now, 1500);
    expect(stalls).toHaveLength(0);
    v.ranges = [[0, 10]];
    play(v, w, now, 500);
    expect(stalls).toHaveLength(1);
    const s = stalls[0]!;
    expect(s.cause).toBe('no-data');
    expect(s.noDataMs).toBe(s.durationMs);
    expect(s.position).toBeCloseTo(5, 5);
    expect(s.durationMs).toBeGreaterThanOrEqual(1500);
    expect(s.durationMs).toBeLessThan(1800);
    expect(s.end - s.start).toBe(s.durationMs);
    expect(w.rebufferMs).toBe(s.durationMs);
    expect(w.stalls).toBe(1);
    expect(stuck).toHaveLength(0);
  });

  it('keeps a stall that waited for data one for lack of data, and says how long it waited', () => {
    const { v, w, stalls, stuck } = setup(3000);
    v.ranges = [[0, 5]];
    let now = play(v, w, 0, 2000);
    v.currentTime = 5;
    const stopped = now;
    now = standStill(w, now, 1200);
    // The media comes; the playhead takes a while to go on (the decoder resuming).
    v.ranges = [[0, 10]];
    const came = now;
    now = standStill(w, now, 600);
    play(v, w, now, 300);
    expect(stalls).toHaveLength(1);
    const s = stalls[0]!;
    expect(s.cause).toBe('no-data');
    expect(s.noDataMs).toBe(came - stopped);
    expect(s.durationMs - s.noDataMs).toBeGreaterThanOrEqual(600);
    expect(stuck).toHaveLength(0);
  });

  it('reports a stall stuck once its media has been there for the limit, however long it waited for it', () => {
    const { v, w, stalls, stuck } = setup(3000);
    v.ranges = [[0, 5]];
    let now = play(v, w, 0, 1000);
    v.currentTime = 5;
    const stopped = now;
    now = standStill(w, now, 2500);
    v.ranges = [[0, 10]];
    const came = now;
    now = standStill(w, now, 2800);
    expect(stuck).toHaveLength(0);
    now = standStill(w, now, 500);
    expect(stuck).toHaveLength(1);
    expect(stuck[0]!.cause).toBe('no-data');
    expect(stuck[0]!.noDataMs).toBe(came - stopped);
    expect(stuck[0]!.end - came).toBeGreaterThanOrEqual(3000);
    play(v, w, now, 300);
    expect(stalls.map((s) => [s.cause, s.noDataMs])).toEqual([['no-data', came - stopped]]);
  });

  it('calls a still playhead with media buffered ahead a decode stall, and stuck past the limit, once', () => {
    const { v, w, stalls, stuck } = setup(3000);
    v.ranges = [[0, 20]];
    let now = play(v, w, 0, 1000);
    now = standStill(w, now, 5000);
    expect(stuck).toHaveLength(1);
    expect(stuck[0]!.cause).toBe('decode');
    expect(stuck[0]!.durationMs).toBeGreaterThanOrEqual(3000);
    play(v, w, now, 300);
    expect(stalls.map((s) => [s.cause, s.noDataMs])).toEqual([['decode', 0]]);
  });

  it('does not count start-up, pauses, seeks or the end', () => {
    const { v, w, stalls } = setup();
    let now = standStill(w, 0, 3000); // waiting for the first frame
    now = play(v, w, now, 500);
    v.paused = true;
    now = standStill(w, now, 2000);
    v.paused = false;
    v.seeking = true;
    now = standStill(w, now, 2000);
    v.seeking = false;
    now = play(v, w, now, 500);
    v.ended = true;
    standStill(w, now, 2000);
    expect(stalls).toHaveLength(0);
    expect(w.rebufferMs).toBe(0);
  });

  it('names a refused append as the cause', () => {
    const { v, w, stalls } = setup();
    v.ranges = [[0, 3]];
    let now = play(v, w, 0, 1000);
    w.appendRefused();
    now = standStill(w, now, 1000);
    play(v, w, now, 200);
    expect(stalls.map((s) => s.cause)).toEqual(['mse-refused']);
  });

  it('ignores stills shorter than a frame interval', () => {
    const { v, w, stalls } = setup();
    let now = play(v, w, 0, 500);
    now = standStill(w, now, 150);
    play(v, w, now, 500);
    expect(stalls).toHaveLength(0);
  });

  it('measures what is buffered ahead in the range holding the playhead', () => {
    const v = new FakeVideo();
    v.ranges = [[0, 4], [6, 9]];
    v.currentTime = 1;
    expect(bufferedAhead(v)).toBe(3);
    expect(bufferedAhead(v, 5)).toBe(0);
    expect(bufferedAhead(v, 6.5)).toBe(2.5);
  });
});
