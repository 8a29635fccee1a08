import { afterEach, describe, expect, it, vi } from 'vitest';
import { AppendQueue, type SourceBufferLike } from '../../src/media/append-queue.js';

type Call = { op: 'append'; bytes: number[] } | { op: 'remove'; start: number; end: number } | { op: 'abort' };
type Listener = () => void;

/**
 * Behaves like a SourceBuffer where it matters: one operation at a time
 * (InvalidStateError otherwise), updateend fired asynchronously, abort()
 * forbidden during a remove, buffered ranges clipped by remove().
 */
class FakeSourceBuffer implements SourceBufferLike {
  updating = false;
  ranges: Array<[number, number]> = [];
  readonly calls: Call[] = [];
  /** Bytes of completed appends, in order. */
  readonly appended: number[] = [];
  /** When set, operations complete only on finish(). */
  manual = false;
  /** Error to throw from appendBuffer, decided per call. */
  appendError: ((data: Uint8Array) => unknown) | null = null;
  private pending: (() => void) | null = null;
  private readonly listeners = { updateend: new Set<Listener>(), error: new Set<Listener>() };

  get buffered(): SourceBufferLike['buffered'] {
    const r = this.ranges;
    return { length: r.length, start: (i) => r[i]?.[0] ?? NaN, end: (i) => r[i]?.[1] ?? NaN };
  }

  appendBuffer(data: Uint8Array<ArrayBuffer>): void {
    if (this.updating) throw new Error('InvalidStateError: append while updating');
    this.calls.push({ op: 'append', bytes: [...data] });
    const err = this.appendError?.(data);
    if (err) throw err;
    this.start(() => this.appended.push(...data));
  }

  remove(start: number, end: number): void {
    if (this.updating) throw new Error('InvalidStateError: remove while updating');
    this.calls.push({ op: 'remove', start, end });
    this.start(() => {
      this.ranges = this.ranges.flatMap(([s, e]): Array<[number, number]> => {
        const out: Array<[number, number]> = [];
        if (s < start) out.push([s, Math.min(e, start)]);
        if (e > end) out.push([Math.max(s, end), e]);
        return out;
      });
    });
  }

  abort(): void {
    this.calls.push({ op: 'abort' });
    if (this.updating && this.pending === null) throw new Error('InvalidStateError: abort during remove');
    if (this.updating) {
      this.updating = false;
      this.pending = null;
      queueMicrotask(() => this.emit('updateend'));
    }
  }

  /** Completes the operation in flight (manual mode). */
  finish(): void {
    const done = this.pending;
    if (!this.updating || !done) throw new Error('fake: nothing to finish');
    this.updating = false;
    this.pending = null;
    done();
    this.emit('updateend');
  }

  addEventListener(type: 'updateend' | 'error', listener: Listener): void {
    this.listeners[type].add(listener);
  }

  removeEventListener(type: 'updateend' | 'error', listener: Listener): void {
    this.listeners[type].delete(listener);
  }

  listenerCount(): number {
    return this.listeners.updateend.size + this.listeners.error.size;
  }

  emit(type: 'updateend' | 'error'): void {
    for (const l of this.listeners[type]) l();
  }

  ops(): string[] {
    return this.calls.map((c) => (c.op === 'append' ? `append ${c.bytes.length}` : c.op === 'remove' ? `remove ${c.start}-${c.end}` : 'abort'));
  }

  private start(effect: () => void): void {
    this.updating = true;
    const done = (): void => effect();
    this.pending = done;
    if (!this.manual) {
      queueMicrotask(() => {
        if (this.pending === done) this.finish();
      });
    }
  }
}

const bytes = (...xs: number[]): Uint8Array => new Uint8Array(xs);
const range = (from: number, n: number): Uint8Array => new Uint8Array(n).map((_, i) => from + i);
/** Lets queued microtasks (fake updateend events) run. */
const flush = async (): Promise<void> => {
  for (let i = 0; i < 50; i++) await Promise.resolve();
};
const quota = (): Error => Object.assign(new Error('quota'), { name: 'QuotaExceededError' });

function setup(time = 0, options: ConstructorParameters<typeof AppendQueue>[2] = {}) {
  const sb = new FakeSourceBuffer();
  const clock = { now: time };
  const errors: Error[] = [];
  const q = new AppendQueue(sb, () => clock.now, { onError: (e) => errors.push(e), ...options });
  return { sb, clock, errors, q };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('AppendQueue appending', () => {
  it('appends pushes in order and resolves idle() when done', async () => {
    const { sb, q, errors } = setup();
    q.push(bytes(1, 2));
    q.push(bytes(3));
    q.push(bytes(4, 5, 6));
    expect(q.pendingBytes).toBe(6);
    await q.idle();
    expect(sb.appended).toEqual([1, 2, 3, 4, 5, 6]);
    expect(sb.ops()).toEqual(['append 2', 'append 1', 'append 3']);
    expect(q.appendedBytes).toBe(6);
    expect(q.pendingBytes).toBe(0);
    expect(errors).toEqual([]);
  });

  it('has one append in flight at a time, the next on updateend', () => {
    const { sb, q } = setup();
    sb.manual = true;
    q.push(bytes(1));
    q.push(bytes(2, 3));
    expect(sb.ops()).toEqual(['append 1']);
    expect(q.pendingBytes).toBe(3);
    sb.finish();
    expect(sb.ops()).toEqual(['append 1', 'append 2']);
    expect(q.appendedBytes).toBe(1);
    expect(q.pendingBytes).toBe(2);
    sb.finish();
    expect(q.appendedBytes).toBe(3);
    expect(sb.appended).toEqual([1, 2, 3]);
  });

  it('splits pushes larger than maxAppendBytes', async () => {
    const { sb, q } = setup(0, { maxAppendBytes: 4 });
    q.push(range(0, 10));
    await q.idle();
    expect(sb.ops()).toEqual(['append 4', 'append 4', 'append 2']);
    expect(sb.appended).toEqual([...range(0, 10)]);
  });

  it('copies views on a SharedArrayBuffer, which appendBuffer refuses', async () => {
    const { sb, q } = setup();
    const shared = new Uint8Array(new SharedArrayBuffer(3));
    shared.set([7, 8, 9]);
    q.push(shared);
    await q.idle();
    expect(sb.appended).toEqual([7, 8, 9]);
  });

  it('resolves idle() at once when nothing is queued, and waits for a foreign update', async () => {
    const { sb, q } = setup();
    await q.idle();
    sb.manual = true;
    sb.remove(0, 1); // someone else's operation
    q.push(bytes(1));
    expect(sb.ops()).toEqual(['remove 0-1']);
    let done = false;
    void q.idle().then(() => (done = true));
    sb.finish();
    expect(sb.ops()).toEqual(['remove 0-1', 'append 1']);
    sb.finish();
    await flush();
    expect(done).toBe(true);
  });

  it('rejects bad options', () => {
    expect(() => setup(0, { maxAppendBytes: 0 })).toThrow(/maxAppendBytes/);
    expect(() => setup(0, { keepBehindSeconds: -1 })).toThrow(/keepBehindSeconds/);
  });
});

describe('AppendQueue eviction', () => {
  it('removes media more than keepBehindSeconds behind the playhead after an append', async () => {
    const { sb, q } = setup(60);
    sb.ranges = [[0, 100]];
    q.push(bytes(1));
    q.push(bytes(2));
    await q.idle();
    expect(sb.ops()).toEqual(['append 1', 'remove 0-30', 'append 1']);
    expect(sb.ranges).toEqual([[30, 100]]);
    expect(sb.appended).toEqual([1, 2]);
  });

  it('keeps what is within keepBehindSeconds', async () => {
    const { sb, q } = setup(20);
    sb.ranges = [[0, 100]];
    q.push(bytes(1));
    await q.idle();
    expect(sb.ops()).toEqual(['append 1']);
  });

  it('never removes within 1 s of the playhead, even with keepBehindSeconds 0', async () => {
    const { sb, q } = setup(60, { keepBehindSeconds: 0 });
    sb.ranges = [[0, 100]];
    q.push(bytes(1));
    await q.idle();
    expect(sb.ops()).toEqual(['append 1', 'remove 0-59']);
  });

  it('never removes ahead of the playhead (seeked back before the buffer)', async () => {
    const { sb, q } = setup(40, { keepBehindSeconds: 0 });
    sb.ranges = [[50, 100]];
    q.push(bytes(1));
    await q.idle();
    expect(sb.ops()).toEqual(['append 1']);
  });

  it('with keepAheadSeconds, removes media left far ahead by a seek back, and keeps what is near', async () => {
    const { sb, q } = setup(600, { keepAheadSeconds: 120 });
    sb.ranges = [[590, 650], [700, 760], [2800, 2860], [5400, 5460]];
    q.push(bytes(1));
    await q.idle();
    expect(sb.ops()).toEqual(['append 1', 'remove 2800-5460']);
    expect(sb.ranges).toEqual([[590, 650], [700, 760]]);
  });

  it('does nothing when currentTime is NaN or nothing is buffered', async () => {
    const { sb, q } = setup(NaN);
    sb.ranges = [[0, 100]];
    q.push(bytes(1));
    await q.idle();
    const second = setup(100);
    second.q.push(bytes(1));
    await second.q.idle();
    expect(sb.ops()).toEqual(['append 1']);
    expect(second.sb.ops()).toEqual(['append 1']);
  });
});

describe('AppendQueue quota', () => {
  it('on QuotaExceededError evicts down to 5 s behind and retries the same bytes', async () => {
    const { sb, q, errors } = setup(60);
    sb.ranges = [[0, 100]];
    let fails = 1;
    sb.appendError = () => (fails-- > 0 ? quota() : undefined);
    q.push(bytes(1, 2, 3));
    q.push(bytes(4));
    await q.idle();
    expect(sb.ops()).toEqual(['append 3', 'remove 0-55', 'append 3', 'append 1']);
    expect(sb.appended).toEqual([1, 2, 3, 4]);
    expect(errors).toEqual([]);
  });

  it('accepts a real DOMException', async () => {
    const { sb, q, errors } = setup(60);
    sb.ranges = [[0, 100]];
    let fails = 1;
    sb.appendError = () => (fails-- > 0 ? new DOMException('full', 'QuotaExceededError') : undefined);
    q.push(bytes(1));
    await q.idle();
    expect(sb.appended).toEqual([1]);
    expect(errors).toEqual([]);
  });

  it('when nothing can be evicted, polls until the playhead has moved on', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { sb, q, clock, errors } = setup(3);
    sb.ranges = [[0, 100]];
    sb.appendError = () => (sb.ranges[0]?.[0] === 0 ? quota() : undefined); // full until something is removed
    q.push(bytes(1, 2));
    let idle = false;
    void q.idle().then(() => (idle = true));
    expect(sb.ops()).toEqual(['append 2']);
    await vi.advanceTimersByTimeAsync(249);
    expect(sb.ops()).toEqual(['append 2']);
    await vi.advanceTimersByTimeAsync(1);
    expect(sb.ops()).toEqual(['append 2', 'append 2']);
    await vi.advanceTimersByTimeAsync(1000);
    expect(sb.calls.filter((c) => c.op === 'remove')).toEqual([]);
    expect(q.pendingBytes).toBe(2);
    expect(idle).toBe(false);
    clock.now = 10;
    await vi.advanceTimersByTimeAsync(250);
    expect(sb.ops().slice(-3)).toEqual(['append 2', 'remove 0-5', 'append 2']);
    expect(sb.appended).toEqual([1, 2]);
    expect(idle).toBe(true);
    expect(errors).toEqual([]);
  });

  it('reset() cancels a quota wait', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { sb, q } = setup(0);
    sb.appendError = () => quota();
    q.push(bytes(1));
    q.reset();
    expect(q.pendingBytes).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(sb.ops()).toEqual(['append 1', 'abort']);
  });
});

describe('AppendQueue reset (seek)', () => {
  it('on an ended MediaSource, does not abort (it would throw) and appends again', async () => {
    let open = false;
    const { sb, q, errors } = setup(0, { sourceOpen: () => open });
    q.push(bytes(1));
    await q.idle();
    q.reset();
    q.push(bytes(2));
    await q.idle();
    expect(sb.ops()).toEqual(['append 1', 'append 1']);
    open = true;
    q.reset();
    expect(sb.ops()).toEqual(['append 1', 'append 1', 'abort']);
    expect(errors).toEqual([]);
  });

  it('drops the queue, aborts the append in flight and resumes with the next push', async () => {
    const { sb, q, errors } = setup();
    sb.manual = true;
    q.push(bytes(1));
    q.push(bytes(2));
    q.push(bytes(3));
    q.reset();
    expect(q.pendingBytes).toBe(0);
    q.push(bytes(9, 9)); // before abort's (stale) updateend arrives
    q.push(bytes(8));
    await flush();
    expect(sb.ops()).toEqual(['append 1', 'abort', 'append 2']);
    expect(q.appendedBytes).toBe(0); // the stale updateend did not complete the new append
    sb.finish();
    sb.finish();
    await q.idle();
    expect(sb.appended).toEqual([9, 9, 8]);
    expect(q.appendedBytes).toBe(3);
    expect(errors).toEqual([]);
  });

  it('aborts even when idle, so the parser forgets a partial segment', async () => {
    const { sb, q } = setup();
    q.push(bytes(1));
    await q.idle();
    q.reset();
    q.push(bytes(2));
    await q.idle();
    expect(sb.ops()).toEqual(['append 1', 'abort', 'append 1']);
  });

  it('during a remove, aborts once the remove has finished', async () => {
    const { sb, q, errors } = setup(60);
    sb.manual = true;
    sb.ranges = [[0, 100]];
    q.push(bytes(1));
    sb.finish(); // append done → eviction starts
    expect(sb.ops()).toEqual(['append 1', 'remove 0-30']);
    q.reset();
    q.push(bytes(2));
    expect(sb.ops()).toEqual(['append 1', 'remove 0-30']);
    sb.finish(); // remove done
    expect(sb.ops()).toEqual(['append 1', 'remove 0-30', 'abort', 'append 1']);
    sb.finish();
    await q.idle();
    expect(sb.appended).toEqual([1, 2]);
    expect(errors).toEqual([]);
  });
});

describe('AppendQueue errors and close', () => {
  it('stops and reports when appendBuffer throws anything but QuotaExceededError', async () => {
    const { sb, q, errors } = setup();
    sb.appendError = () => Object.assign(new Error('detached'), { name: 'InvalidStateError' });
    q.push(bytes(1));
    q.push(bytes(2));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/appendBuffer failed \(InvalidStateError: detached\)/);
    await expect(q.idle()).rejects.toBe(errors[0]);
    expect(q.pendingBytes).toBe(0);
    q.push(bytes(3));
    expect(sb.ops()).toEqual(['append 1']);
  });

  it('stops and reports on the SourceBuffer error event', async () => {
    const { sb, q, errors } = setup();
    sb.manual = true;
    q.push(bytes(1));
    q.push(bytes(2));
    sb.emit('error');
    sb.finish(); // browsers fire updateend after error
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/error event/);
    expect(sb.ops()).toEqual(['append 1']);
    await expect(q.idle()).rejects.toThrow(/error event/);
  });

  it('reports a failing remove', async () => {
    const { sb, q, errors } = setup(60);
    sb.ranges = [[0, 100]];
    sb.remove = () => {
      throw new Error('gone');
    };
    q.push(bytes(1));
    await expect(q.idle()).rejects.toThrow(/remove failed.*gone/);
    expect(errors).toHaveLength(1);
  });

  it('close() detaches listeners and drops everything', async () => {
    const { sb, q } = setup();
    sb.manual = true;
    expect(sb.listenerCount()).toBe(2);
    q.push(bytes(1));
    q.push(bytes(2));
    q.close();
    expect(sb.listenerCount()).toBe(0);
    expect(q.pendingBytes).toBe(0);
    await q.idle();
    q.push(bytes(3));
    sb.finish();
    expect(sb.ops()).toEqual(['append 1']);
  });
});
