/**
 * Where a seek to a media time appends from: the media segment (WebM Cluster, MP4
 * fragment) that starts at or shortly before it. The file's index is not read (a WebM
 * file's Cues, an MP4 file's sidx may be anywhere, or absent), so the search guesses the
 * byte from the bit rate and looks for the first segment start from there: the page then
 * fetches a probe's worth of bytes, not everything from far before the time to it. The
 * start time of the segment found corrects the guess: one that starts after the time
 * moves the search back, one that starts well before it moves it on, and a segment known
 * on each side of the time narrows it down by interpolation, until a segment starts at
 * most {@link CLOSE_SECONDS} before the time (or {@link MAX_PROBES} were looked at).
 */

/**
 * A segment starting at most this many seconds before the time is close enough: what lies
 * between is appended and played past, a few seconds of media.
 */
export const CLOSE_SECONDS = 8;
/**
 * The search aims this many seconds before the time at first, so that the first segment
 * start after its guess is a little before the time rather than after it; twice as far
 * after each probe that found a segment just after the time (it landed in the time's own
 * segment, longer than the aim).
 */
const AIM_SECONDS = 3;
/** The aim goes no further back than this. */
const MAX_AIM_SECONDS = 60;
/** After this many segments looked at, the closest one before the time is taken. */
export const MAX_PROBES = 12;
/** A segment found this little after the time counts as at it (timestamps are rounded). */
const LATE_SLACK_SECONDS = 0.05;

export interface SeekSearchOptions {
  /** Where media segments may start: the end of the initialisation segment. */
  floor: number;
  /** Bytes per second of media (the file's average), or null where unknown. */
  rate: number | null;
  /** The bytes looked at from a guess at least (a probe). */
  probeBytes: number;
  /** Probe starts are rounded down to this many bytes (the chunk size). */
  align: number;
}

/** What the search says next: look again from `probe`, or append from the segment at `from`. */
export type SeekStep = { probe: number } | { from: number };

/** A segment found: where it starts, and its media time. */
interface Found {
  at: number;
  time: number;
}

export class SeekSearch {
  /** Where the current probe starts (aligned). */
  start: number;
  /** The segment found so far that starts latest at or before the time. */
  private before: Found | null = null;
  /** The segment found so far that starts first after the time. */
  private late: Found | null = null;
  /** Probes from this byte on found segments after the time (none yet: Infinity). */
  private after = Infinity;
  /** The segment the probe before this one found. */
  private previous: Found | null = null;
  /**
   * The weights of the segments before and after in the interpolation between them: a
   * side that keeps being kept (the probes landing on the other side) weighs half as much
   * each time, so that the probes move on to it (the Illinois variant of regula falsi).
   */
  private weightBefore = 1;
  private weightLate = 1;
  private lastWasLate: boolean | null = null;
  /** Seconds before the time the next probe aims at. */
  private aim = AIM_SECONDS;
  /** How far a step back goes at least: doubled at each, so that stepping back reaches `floor`. */
  private back: number;
  private probes = 0;

  /** A search for media time `target` from the byte `guess` (where the bit rate puts it). */
  constructor(
    readonly target: number,
    guess: number,
    private readonly options: SeekSearchOptions,
  ) {
    this.back = Math.max(options.probeBytes, (options.rate ?? 0) * AIM_SECONDS);
    this.start = this.aligned(guess - this.back);
  }

  /**
   * The first segment start at or after {@link start} is at byte `at`, starting at media
   * time `time` (null: not readable, taken as it is).
   */
  found(at: number, time: number | null): SeekStep {
    this.probes += 1;
    if (time === null) return { from: at };
    const here = { at, time };
    const previous = this.previous;
    this.previous = here;
    const late = time > this.target + LATE_SLACK_SECONDS;
    if (late) {
      this.weightBefore = this.lastWasLate === true ? this.weightBefore / 2 : 1;
      this.weightLate = 1;
    } else {
      this.weightLate = this.lastWasLate === false ? this.weightLate / 2 : 1;
      this.weightBefore = 1;
    }
    this.lastWasLate = late;
    if (late) {
      // Nothing before it, or the time's segment starts before the probe did.
      if (this.start <= this.options.floor) return { from: at };
      this.after = Math.min(this.after, this.start);
      if (!this.late || at < this.late.at) this.late = here;
      // Just after the time: the probe landed in the time's own segment (longer than the
      // aim), not far off.
      if (time - this.target <= 2 * this.aim) this.aim = Math.min(2 * this.aim, MAX_AIM_SECONDS);
    } else {
      if (!this.before || time > this.before.time) this.before = here;
      if (this.target - this.before.time <= CLOSE_SECONDS) return { from: this.before.at };
    }
    if (this.probes >= MAX_PROBES && this.before) return { from: this.before.at };
    // The bit rate here: between the last two segments found, else the file's average.
    const local = previous && previous.time !== time ? (at - previous.at) / (time - previous.time) : null;
    const rate = local !== null && local > 0 ? local : this.options.rate;
    const { before } = this;
    if (!before) {
      // Back from the late segment by its lead at that rate, and at least twice as far
      // as the last step back.
      this.back *= 2;
      const lead = rate === null ? 0 : (time - this.target + this.aim) * rate;
      return this.probeFrom(Math.min(at - lead, this.start - this.back));
    }
    // A little before the time: between the segments before and after it, in proportion
    // to their weighted distances in time; else on from the one before at the rate.
    const aimAt = this.target - this.aim;
    if (before.time >= aimAt) return { from: before.at };
    const after = this.late;
    if (after) {
      const fromBefore = (aimAt - before.time) * this.weightBefore;
      const toAfter = (after.time - aimAt) * this.weightLate;
      return this.probeFrom(before.at + (fromBefore / (fromBefore + toAfter)) * (after.at - before.at));
    }
    if (rate === null) return { from: before.at };
    return this.probeFrom(before.at + (aimAt - before.time) * rate);
  }

  /**
   * No segment starts from {@link start} as far as the page may look (the engine's window
   * ends there): the closest one found before the time if any, else a step back.
   */
  noneFound(): SeekStep {
    this.probes += 1;
    if (this.before) return { from: this.before.at };
    if (this.start <= this.options.floor) return { from: this.options.floor };
    this.after = Math.min(this.after, this.start);
    this.back *= 2;
    return this.probeFrom(this.start - this.back);
  }

  /**
   * A probe from `byte` (aligned; from `floor` on, short of where probes found late
   * segments); the segment found before the time where there is no room left between.
   */
  private probeFrom(byte: number): SeekStep {
    const { align, floor } = this.options;
    const before = this.before;
    const start = this.aligned(Math.min(byte, this.after - align));
    if ((before && start <= before.at) || start >= this.after) return { from: before?.at ?? floor };
    this.start = start;
    return { probe: start };
  }

  private aligned(byte: number): number {
    const { floor, align } = this.options;
    return Math.floor(Math.max(floor, byte) / align) * align;
  }
}
