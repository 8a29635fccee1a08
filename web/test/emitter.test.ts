import { afterEach, describe, expect, it, vi } from 'vitest';
import { Emitter } from '../src/emitter.js';

interface Events {
  tick: number;
  done: Record<string, never>;
}

class Source extends Emitter<Events> {
  fire<K extends keyof Events>(type: K, payload: Events[K]): void {
    this.emit(type, payload);
  }
  clear(): void {
    this.removeAllListeners();
  }
}

describe('Emitter', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('calls on-listeners on every emit until off', () => {
    const s = new Source();
    const got: number[] = [];
    const listener = (n: number): void => {
      got.push(n);
    };
    s.on('tick', listener);
    s.fire('tick', 1);
    s.fire('tick', 2);
    s.off('tick', listener);
    s.fire('tick', 3);
    expect(got).toEqual([1, 2]);
  });

  it('calls a once-listener on the next emit only', () => {
    const s = new Source();
    const listener = vi.fn();
    s.once('tick', listener);
    s.fire('tick', 1);
    s.fire('tick', 2);
    expect(listener.mock.calls).toEqual([[1]]);
  });

  it('removes a once-listener with off, given the function passed to once', () => {
    const s = new Source();
    const listener = vi.fn();
    s.once('tick', listener);
    s.off('tick', listener);
    s.fire('tick', 1);
    expect(listener).not.toHaveBeenCalled();
  });

  it('off of one type leaves the listener on another', () => {
    const s = new Source();
    const listener = vi.fn();
    s.once('tick', listener);
    s.once('done', listener);
    s.off('tick', listener);
    s.fire('tick', 1);
    s.fire('done', {});
    expect(listener.mock.calls).toEqual([[{}]]);
  });

  it('registers a listener once per type, as addEventListener does', () => {
    const s = new Source();
    const listener = vi.fn();
    s.on('tick', listener);
    s.on('tick', listener);
    s.once('tick', listener); // already there as an on-listener: stays one
    s.fire('tick', 1);
    s.fire('tick', 2);
    expect(listener.mock.calls).toEqual([[1], [2]]);
    s.off('tick', listener);
    s.fire('tick', 3);
    expect(listener).toHaveBeenCalledTimes(2);
  });

  it('calls a once-listener once even when a listener emits again from inside', () => {
    const s = new Source();
    const calls: string[] = [];
    s.on('tick', (n) => {
      calls.push(`outer ${n}`);
      if (n === 1) s.fire('tick', 2);
    });
    s.once('tick', (n) => calls.push(`once ${n}`));
    s.fire('tick', 1);
    expect(calls).toEqual(['outer 1', 'outer 2', 'once 2']);
  });

  it('a once-listener may re-add itself for the next emit', () => {
    const s = new Source();
    const got: number[] = [];
    const listener = (n: number): void => {
      got.push(n);
      if (n < 3) s.once('tick', listener);
    };
    s.once('tick', listener);
    for (let n = 1; n <= 4; n++) s.fire('tick', n);
    expect(got).toEqual([1, 2, 3]);
  });

  it('keeps calling the others when a listener throws', () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    const s = new Source();
    const after = vi.fn();
    s.once('tick', () => {
      throw new Error('boom');
    });
    s.on('tick', after);
    s.fire('tick', 1);
    expect(after).toHaveBeenCalledWith(1);
    expect(error).toHaveBeenCalledOnce();
  });

  it('forgets every listener on removeAllListeners', () => {
    const s = new Source();
    const listener = vi.fn();
    s.on('tick', listener);
    s.once('done', listener);
    s.clear();
    s.fire('tick', 1);
    s.fire('done', {});
    expect(listener).not.toHaveBeenCalled();
  });
});
