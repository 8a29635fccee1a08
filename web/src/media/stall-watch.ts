/**
 * Watches a video element's playhead for stalls: times when it stands still although
 * playback should go on (not paused, not ended, not seeking). A stall that ends is
 * reported with its duration and cause; one that lasts past a limit while media is
 * buffered ahead is a decoder that will not go on (Firefox froze like that on WebM
 * Clusters split across appends), reported once as stuck.
 *
 * It reads only the few members in {@link VideoLike}, so it runs (and is tested) without
 * a DOM; the Player calls {@link StallWatch.tick} on a timer and on media events.
 */

/** The part of `HTMLMediaElement` the watch reads. */
export interface VideoLike {
  readonly currentTime: number;
  readonly paused: boolean;
  readonly ended: boolean;
  readonly seeking: boolean;
  readonly buffered: { readonly length: number; start(i: number): number; end(i: number): number };
}

/**
 * Why playback stood still: `no-data`, nothing buffered at the playhead when it stopped
 * (the swarm was late); `decode`, media buffered ahead but the playhead did not move;
 * `mse-refused`, MediaSource rejected an append, so nothing more can play.
 */
export type StallCause = 'no-data' | 'decode' | 'mse-refused';

export interface Stall {
  /** `performance.now()` when the playhead stopped, and when it moved again. */
  start: number;
  end: number;
  durationMs: number;
  /** Media time where it stood, in seconds. */
  position: number;
  cause: StallCause;
  /**
   * Of `durationMs`, how long it waited for media at the playhead (a `no-data` stall until
   * the media came; 0 for other causes). The rest is the player resuming.
   */
  noDataMs: number;
}

export interface StallWatchOptions {
  /** A still playhead counts as a stall from this long on (ms). Default 250. */
  minStallMs: number;
  /** Buffered media ahead of the playhead that makes a still playhead a decode stall (s). */
  decodeAheadSeconds: number;
  /** A still playhead with media buffered ahead this long is reported as stuck (ms). Default 8000. */
  stuckAfterMs: number;
  onStall?: (stall: Stall) => void;
  onStuck?: (stall: Stall) => void;
}

const DEFAULTS = { minStallMs: 250, decodeAheadSeconds: 0.5, stuckAfterMs: 8000 };

/** Seconds buffered from `t` on, in the range holding `t` (0 when none does). */
export function bufferedAhead(video: VideoLike, t = video.currentTime): number {
  const b = video.buffered;
  for (let i = 0; i < b.length; i++) if (b.start(i) <= t + 0.1 && t < b.end(i)) return b.end(i) - t;
  return 0;
}

/** Where the last buffered range ends, or null with nothing buffered. */
export function bufferedEnd(video: VideoLike): number | null {
  const b = video.buffered;
  return b.length > 0 ? b.end(b.length - 1) : null;
}

export class StallWatch {
  private readonly opts: StallWatchOptions;
  /** When the playhead was last seen moving (or playback last was not expected). */
  private movedAt: number | null = null;
  private last = -1;
  /** The cause, decided when a still playhead becomes a stall. */
  private cause: StallCause | null = null;
  /** When media ahead of the playhead was first seen in this stall (null: not yet). */
  private dataAt: number | null = null;
  private stuckReported = false;
  private refused = false;
  private started = false;
  private totalMs = 0;
  private count = 0;

  constructor(
    private readonly video: VideoLike,
    options: Partial<StallWatchOptions> = {},
  ) {
    this.opts = { ...DEFAULTS, ...options };
  }

  /** MediaSource refused an append: the stall that follows has that cause. */
  appendRefused(): void {
    this.refused = true;
  }

  /** Milliseconds spent in stalls that ended, and how many there were. */
  get rebufferMs(): number {
    return this.totalMs;
  }

  get stalls(): number {
    return this.count;
  }

  /** Looks at the playhead at `now` (ms, `performance.now()`). */
  tick(now: number): void {
    const v = this.video;
    const t = v.currentTime;
    // Before the first frame the wait is start-up time, not a stall.
    this.started ||= t > 0;
    const expected = this.started && !v.paused && !v.ended && !v.seeking;
    if (!expected || t !== this.last || this.movedAt === null) {
      this.finish(now);
      this.last = t;
      this.movedAt = now;
      return;
    }
    const still = now - this.movedAt;
    if (still < this.opts.minStallMs) return;
    const ahead = bufferedAhead(v, t) >= this.opts.decodeAheadSeconds;
    // A refused append decides the cause whenever it comes; otherwise the first look does.
    if (this.refused) this.cause = 'mse-refused';
    else this.cause ??= ahead ? 'decode' : 'no-data';
    if (this.cause === 'decode') this.dataAt ??= this.movedAt;
    else if (this.cause === 'no-data' && ahead) this.dataAt ??= now;
    // Stuck: still for that long with media buffered ahead (there all along, or since it
    // came), or after a refused append.
    const since = this.cause === 'mse-refused' ? this.movedAt : this.dataAt;
    if (since !== null && now - since >= this.opts.stuckAfterMs && !this.stuckReported) {
      this.stuckReported = true;
      const noDataMs = this.cause === 'no-data' ? since - this.movedAt : 0;
      this.opts.onStuck?.({ start: this.movedAt, end: now, durationMs: still, position: t, cause: this.cause, noDataMs });
    }
  }

  /** A stall in progress ends at `now`: it is counted and reported. */
  private finish(now: number): void {
    if (this.cause === null || this.movedAt === null) return;
    const stall: Stall = {
      start: this.movedAt,
      end: now,
      durationMs: now - this.movedAt,
      position: this.last,
      cause: this.cause,
      noDataMs: this.cause === 'no-data' ? (this.dataAt ?? now) - this.movedAt : 0,
    };
    this.cause = null;
    this.dataAt = null;
    this.stuckReported = false;
    this.totalMs += stall.durationMs;
    this.count++;
    this.opts.onStall?.(stall);
  }
}
