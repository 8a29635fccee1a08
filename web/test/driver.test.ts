import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Driver, MAX_SENDS_PER_TURN, type SansIoMachine } from '../src/driver.js';

/** A scripted machine: datagrams queued to send, a deadline, and a log of the calls. */
class Machine implements SansIoMachine {
  outbox: { peer: number; payload: Uint8Array }[] = [];
  deadline: number | null = null;
  log: string[] = [];
  private last = -1;

  handleDatagram(peer: number, data: Uint8Array, nowMs: number): void {
    this.log.push(`datagram ${peer} ${data.length} @${nowMs}`);
  }
  pollTransmit(): Uint8Array | undefined {
    const next = this.outbox.shift();
    if (!next) return undefined;
    this.last = next.peer;
    return next.payload;
  }
  transmitPeer(): number {
    return this.last;
  }
  pollTimeout(nowMs: number): number {
    return this.deadline === null ? -1 : Math.max(0, this.deadline - nowMs);
  }
  handleTimeout(nowMs: number): void {
    this.log.push(`timeout @${nowMs}`);
    if (this.deadline !== null && nowMs >= this.deadline) this.deadline = null;
  }
  queue(n: number, peer = 7): void {
    for (let i = 0; i < n; i++) this.outbox.push({ peer, payload: new Uint8Array([i & 0xff]) });
  }
}

function setup(afterSend?: () => void): { machine: Machine; driver: Driver; sent: number[] } {
  const machine = new Machine();
  const sent: number[] = [];
  const driver = new Driver(machine, { send: (peer) => sent.push(peer), ...(afterSend ? { afterSend } : {}) });
  return { machine, driver, sent };
}

describe('Driver', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('feeds a datagram at once and sends in the kicked turn, then reads what came out', () => {
    const after = vi.fn();
    const { machine, driver, sent } = setup(after);
    vi.advanceTimersByTime(5);
    driver.datagram(3, new Uint8Array(10));
    expect(machine.log).toEqual(['datagram 3 10 @5']);
    machine.queue(2);
    expect(sent).toEqual([]); // the turn is a task, not a call
    Driver.runKicked();
    expect(sent).toEqual([7, 7]);
    expect(after).toHaveBeenCalledOnce();
  });

  it('runs one turn however many inputs came before it', () => {
    const after = vi.fn();
    const { driver } = setup(after);
    for (let i = 0; i < 5; i++) driver.datagram(1, new Uint8Array(1));
    driver.kick();
    Driver.runKicked();
    Driver.runKicked();
    expect(after).toHaveBeenCalledOnce();
  });

  it('arms one timer for the deadline and turns again after handleTimeout', () => {
    const after = vi.fn();
    const { machine, driver, sent } = setup(after);
    machine.deadline = 40;
    driver.kick();
    Driver.runKicked();
    expect(vi.getTimerCount()).toBe(1);
    machine.queue(1);
    vi.advanceTimersByTime(39);
    expect(machine.log).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(machine.log).toEqual(['timeout @40']);
    expect(sent).toEqual([7]);
    expect(after).toHaveBeenCalledTimes(2);
    expect(vi.getTimerCount()).toBe(0); // nothing scheduled any more
  });

  it('keeps the earlier deadline when a later one is asked for', () => {
    const { machine, driver } = setup();
    machine.deadline = 10;
    driver.kick();
    Driver.runKicked();
    machine.deadline = 50;
    driver.kick();
    Driver.runKicked();
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(10);
    expect(machine.log).toEqual(['timeout @10']);
    // The turn after that timeout arms the later deadline.
    vi.advanceTimersByTime(40);
    expect(machine.log).toEqual(['timeout @10', 'timeout @50']);
  });

  it(`sends at most ${MAX_SENDS_PER_TURN} datagrams per turn, then yields and goes on`, () => {
    const { machine, driver, sent } = setup();
    machine.queue(MAX_SENDS_PER_TURN + 10);
    driver.kick();
    Driver.runKicked();
    expect(sent).toHaveLength(MAX_SENDS_PER_TURN);
    vi.advanceTimersByTime(0);
    expect(sent).toHaveLength(MAX_SENDS_PER_TURN + 10);
  });

  it('flushes on demand, up to a limit', () => {
    const { machine, driver, sent } = setup();
    machine.queue(5);
    expect(driver.flush(3)).toBe(3);
    expect(driver.flush()).toBe(2);
    expect(sent).toHaveLength(5);
  });

  it('stops when closed, also from inside a turn', () => {
    const { machine, driver, sent } = setup(() => driver.close());
    machine.deadline = 5;
    machine.queue(1);
    driver.kick();
    Driver.runKicked();
    expect(sent).toHaveLength(1);
    expect(driver.closed).toBe(true);
    expect(vi.getTimerCount()).toBe(0); // closed before the timer was armed
    driver.datagram(1, new Uint8Array(1));
    driver.kick();
    Driver.runKicked();
    expect(machine.log).toEqual([]);
  });

  it('clears its timer on close', () => {
    const { machine, driver } = setup();
    machine.deadline = 5;
    driver.kick();
    Driver.runKicked();
    expect(vi.getTimerCount()).toBe(1);
    driver.close();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10);
    expect(machine.log).toEqual([]);
  });
});
