/**
 * Where media segments start in a file, by media time, learned from the segments a page
 * appended: where playback is in the file, without estimating it in proportion to the
 * duration (which lags or leads the media wherever its bit rate departs from the
 * average, by seconds of media in a busy opening).
 */
export class SegmentPlaces {
  /** Segment start times in seconds, ascending; `offsets[i]` is where the one at `times[i]` starts. */
  private readonly times: number[] = [];
  private readonly offsets: number[] = [];

  /** A media segment starting at `time` seconds starts at byte `offset`. */
  add(time: number, offset: number): void {
    if (!Number.isFinite(time) || time < 0) return;
    const i = this.after(time);
    if (i > 0 && this.times[i - 1] === time) return;
    this.times.splice(i, 0, time);
    this.offsets.splice(i, 0, offset);
  }

  /**
   * The byte of media time `t`: between the known segment starts around it, in
   * proportion; past the last one, at `rate` bytes per second from it. Null with no known
   * segment start at or before `t` (or past the last one without a rate).
   */
  byteAt(t: number, rate: number | null): number | null {
    const i = this.after(t) - 1;
    if (i < 0) return null;
    const [t0, b0] = [this.times[i]!, this.offsets[i]!];
    if (i + 1 < this.times.length) {
      const [t1, b1] = [this.times[i + 1]!, this.offsets[i + 1]!];
      return b0 + Math.floor(((t - t0) / (t1 - t0)) * (b1 - b0));
    }
    return rate === null ? null : b0 + Math.floor((t - t0) * rate);
  }

  /** The index of the first start after `time`. */
  private after(time: number): number {
    let [lo, hi] = [0, this.times.length];
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.times[mid]! <= time) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
