/**
 * The operator's reports (`reportOffload`): counted from each join, sent every
 * `reportEvery` seconds, a last one at close when the server would take it, none when the
 * server takes no reports.
 */
import { describe, expect, it } from 'vitest';
import { OffloadReports, type ReportTimers } from '../src/offload-reports.js';
import type { ReportTotals } from '../src/signaling.js';

/** Timers the test moves by hand. */
class ManualTimers implements ReportTimers {
  time = 0;
  private intervals = new Map<number, { fn: () => void; ms: number; next: number }>();
  private nextId = 1;

  setInterval(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.intervals.set(id, { fn, ms, next: this.time + ms });
    return id;
  }

  clearInterval(handle: unknown): void {
    this.intervals.delete(handle as number);
  }

  now(): number {
    return this.time;
  }

  get running(): number {
    return this.intervals.size;
  }

  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = [...this.intervals.values()].filter((t) => t.next <= end).sort((a, b) => a.next - b.next)[0];
      if (!due) break;
      this.time = due.next;
      due.next += due.ms;
      due.fn();
    }
    this.time = end;
  }
}

function setup() {
  const totals: ReportTotals = { peers: 0, http: 0, seeders: 0, stalls: 0, stallMs: 0 };
  const sent: ReportTotals[] = [];
  let joined = true;
  const timers = new ManualTimers();
  const reports = new OffloadReports(
    () => ({ ...totals }),
    (since) => {
      if (!joined) return false;
      sent.push(since);
      return true;
    },
    timers,
  );
  return { totals, sent, timers, reports, leave: () => (joined = false) };
}

describe('OffloadReports', () => {
  it('sends what came since the join every reportEvery seconds', () => {
    const { totals, sent, timers, reports } = setup();
    totals.peers = 500; // before the join: not this join's
    reports.joined(30);
    totals.peers = 1500;
    totals.http = 200;
    timers.advance(29_999);
    expect(sent).toEqual([]);
    timers.advance(1);
    expect(sent).toEqual([{ peers: 1000, http: 200, seeders: 0, stalls: 0, stallMs: 0 }]);
    totals.seeders = 70;
    totals.stalls = 1;
    totals.stallMs = 400;
    timers.advance(30_000);
    expect(sent[1]).toEqual({ peers: 1000, http: 200, seeders: 70, stalls: 1, stallMs: 400 });
  });

  it('counts afresh from a rejoin, so nothing is counted twice', () => {
    const { totals, sent, timers, reports } = setup();
    reports.joined(10);
    totals.peers = 4000;
    timers.advance(10_000);
    reports.joined(10); // a new peer id: the server counts from here
    totals.peers = 4500;
    timers.advance(10_000);
    expect(sent.map((s) => s.peers)).toEqual([4000, 500]);
    expect(timers.running).toBe(1);
  });

  it('sends nothing when the server takes no reports', () => {
    const { totals, sent, timers, reports } = setup();
    reports.joined(null);
    totals.peers = 10;
    timers.advance(600_000);
    reports.close();
    expect(sent).toEqual([]);
    expect(timers.running).toBe(0);
  });

  it('sends a last report at close only if the server would take it', () => {
    const early = setup();
    early.reports.joined(30);
    early.timers.advance(30_000);
    early.totals.peers = 9;
    early.timers.advance(10_000); // a third of an interval since the last: the server would refuse
    early.reports.close();
    expect(early.sent.length).toBe(1);
    expect(early.timers.running).toBe(0);

    const late = setup();
    late.reports.joined(30);
    late.totals.http = 77;
    late.timers.advance(20_000);
    late.reports.close();
    expect(late.sent).toEqual([{ peers: 0, http: 77, seeders: 0, stalls: 0, stallMs: 0 }]);
    late.timers.advance(60_000);
    expect(late.sent.length).toBe(1);
  });

  it('does not count a report that could not go as sent', () => {
    const { totals, sent, timers, reports, leave } = setup();
    reports.joined(30);
    totals.peers = 1;
    leave();
    timers.advance(30_000);
    expect(sent).toEqual([]);
  });
});
