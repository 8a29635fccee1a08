/**
 * What the network delivers to a presentation: an average of the rate at which segments
 * that had to be waited for arrived. A player's ABR must see this, not the speed of a
 * segment peers had already delivered ahead of time (read-ahead), which says nothing of
 * what a higher rendition (nobody's read-ahead) would take: so a load is reported as
 * taking at least its bytes at this rate.
 */

/** A sample needs this many bytes (fewer are mostly latency); a load faster than the
 * millisecond floor counts as taking it (a timer's granularity; the rate is then a lower
 * bound), so that fast loads still lift the estimate after a slow spell. */
const MIN_SAMPLE_BYTES = 32 << 10;
const MIN_SAMPLE_MS = 20;
/** Weight of the newest sample. */
const WEIGHT = 0.3;

export class Goodput {
  private estimate: number | null = null;

  /** Bytes per millisecond, once a sample was taken. */
  get bytesPerMs(): number | null {
    return this.estimate;
  }

  /** `bytes` arrived over `ms` while a load waited for them. */
  sample(bytes: number, ms: number): void {
    if (bytes < MIN_SAMPLE_BYTES) return;
    const rate = bytes / Math.max(ms, MIN_SAMPLE_MS);
    this.estimate = this.estimate === null ? rate : WEIGHT * rate + (1 - WEIGHT) * this.estimate;
  }

  /** How long a load of `bytes` that waited `waitedMs` is reported to have taken. */
  reportedMs(bytes: number, waitedMs: number): number {
    const rate = this.estimate;
    return rate === null ? waitedMs : Math.max(waitedMs, bytes / rate);
  }
}
