/**
 * Holds live playback a target latency behind what is buffered at the edge: a little
 * behind it plays faster until back; far behind it jumps.
 */

/** Playback rate while catching up. */
export const CATCH_UP_RATE = 1.1;
/** Seconds beyond the target before catching up by rate starts. */
const TOLERANCE_SECONDS = 0.5;
/** Seconds above the target at which catching up by rate ends. */
const CAUGHT_UP_SECONDS = 0.1;

export interface LatencyStep {
  /** The playback rate to set. */
  rate: number;
  /** Where to jump to, if playback is too far behind. */
  seekTo: number | null;
  /** What changed: fell behind (and how it catches up), or caught up. */
  event: { type: 'behind'; catchUp: 'rate' | 'jump' } | { type: 'caught-up' } | null;
}

export class LiveLatency {
  private behind = false;

  constructor(
    /** Seconds behind the buffered edge playback aims for. */
    private readonly targetSeconds: number,
    /** Seconds beyond the target at which playback jumps rather than plays faster. */
    private readonly jumpSeconds: number,
  ) {}

  /** Seconds of media buffered ahead of `currentTime`, up to `bufferedEnd`. */
  step(currentTime: number, bufferedEnd: number): LatencyStep {
    const lag = bufferedEnd - currentTime;
    if (lag > this.targetSeconds + this.jumpSeconds) {
      this.behind = true;
      return {
        rate: 1,
        seekTo: bufferedEnd - this.targetSeconds,
        event: { type: 'behind', catchUp: 'jump' },
      };
    }
    if (lag > this.targetSeconds + TOLERANCE_SECONDS) {
      const event = this.behind ? null : ({ type: 'behind', catchUp: 'rate' } as const);
      this.behind = true;
      return { rate: CATCH_UP_RATE, seekTo: null, event };
    }
    if (this.behind && lag <= this.targetSeconds + CAUGHT_UP_SECONDS) {
      this.behind = false;
      return { rate: 1, seekTo: null, event: { type: 'caught-up' } };
    }
    return { rate: this.behind ? CATCH_UP_RATE : 1, seekTo: null, event: null };
  }
}
