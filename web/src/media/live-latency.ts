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

export interface LiveLatencyOptions {
  /** Seconds behind the buffered edge playback aims for. */
  targetSeconds: number;
  /** Seconds beyond the target at which playback jumps rather than plays faster. */
  jumpSeconds: number;
}

export class LiveLatency {
  private behind = false;

  constructor(private readonly options: LiveLatencyOptions) {}

  /**
   * What holds playback at `currentTime` near the target behind `bufferedEnd` (where the
   * buffered media ends): the rate to play at, and a jump if it is too far behind.
   */
  step(currentTime: number, bufferedEnd: number): LatencyStep {
    const { targetSeconds, jumpSeconds } = this.options;
    const lag = bufferedEnd - currentTime;
    if (lag > targetSeconds + jumpSeconds) {
      this.behind = true;
      return {
        rate: 1,
        seekTo: bufferedEnd - targetSeconds,
        event: { type: 'behind', catchUp: 'jump' },
      };
    }
    if (lag > targetSeconds + TOLERANCE_SECONDS) {
      const event = this.behind ? null : ({ type: 'behind', catchUp: 'rate' } as const);
      this.behind = true;
      return { rate: CATCH_UP_RATE, seekTo: null, event };
    }
    if (this.behind && lag <= targetSeconds + CAUGHT_UP_SECONDS) {
      this.behind = false;
      return { rate: 1, seekTo: null, event: { type: 'caught-up' } };
    }
    return { rate: this.behind ? CATCH_UP_RATE : 1, seekTo: null, event: null };
  }
}
