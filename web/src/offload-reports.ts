/**
 * Reports for the site's operator (the `reportOffload` option, off by default): every
 * `reportEvery` seconds the signaling server asked for in its welcome, the bytes this page
 * received since it joined, by source, and its stalls, sent through the signaling
 * connection. The server adds them up per swarm for its metrics (docs/SIGNALING.md,
 * `report`). Each join starts the totals afresh (the server counts per join), so a rejoin
 * is never counted twice.
 */
import type { ReportTotals } from './signaling.js';

/** The timer functions used (the page's by default; tests pass their own). */
export interface ReportTimers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
  now(): number;
}

const PAGE_TIMERS: ReportTimers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (handle) => clearInterval(handle as ReturnType<typeof setInterval>),
  now: () => performance.now(),
};

export class OffloadReports {
  /** The totals when we joined last: reports count from there. */
  private baseline: ReportTotals | null = null;
  private timer: unknown = null;
  private everyMs = 0;
  /** When the last report went (or the join, before the first). */
  private lastAt = 0;

  constructor(
    /** The page's running totals since it started. */
    private readonly totals: () => ReportTotals,
    /** Sends one report; false when it could not go (not joined). */
    private readonly send: (since: ReportTotals) => boolean,
    private readonly timers: ReportTimers = PAGE_TIMERS,
  ) {}

  /** Joined (again): reports count from now, every `everySeconds` (null: the server takes none). */
  joined(everySeconds: number | null): void {
    this.stopTimer();
    this.baseline = this.totals();
    this.lastAt = this.timers.now();
    if (everySeconds === null) return;
    this.everyMs = everySeconds * 1000;
    this.timer = this.timers.setInterval(() => this.report(), this.everyMs);
  }

  /** Sends what came since the join. */
  private report(): void {
    if (!this.baseline) return;
    const now = this.totals();
    const b = this.baseline;
    const since: ReportTotals = {
      peers: now.peers - b.peers,
      http: now.http - b.http,
      seeders: now.seeders - b.seeders,
      stalls: now.stalls - b.stalls,
      stallMs: now.stallMs - b.stallMs,
    };
    if (this.send(since)) this.lastAt = this.timers.now();
  }

  /**
   * The page leaves: a last report of what came since the previous one, if that was at
   * least half an interval ago (the server takes none sooner), then no more.
   */
  close(): void {
    if (this.timer !== null && this.timers.now() - this.lastAt >= this.everyMs / 2) this.report();
    this.stopTimer();
    this.baseline = null;
  }

  private stopTimer(): void {
    if (this.timer !== null) this.timers.clearInterval(this.timer);
    this.timer = null;
  }
}
