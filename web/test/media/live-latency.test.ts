import { describe, expect, it } from 'vitest';
import { CATCH_UP_RATE, LiveLatency } from '../../src/media/live-latency.js';

/** A 3 s target, jumping at 4 s beyond it (the options' defaults). */
const latency = (): LiveLatency => new LiveLatency({ targetSeconds: 3, jumpSeconds: 4 });
const steady = { rate: 1, seekTo: null, event: null };

describe('LiveLatency', () => {
  it('at the target, ahead of it, or behind it by no more than half a second: 1x, nothing said', () => {
    const l = latency();
    expect(l.step(10, 13)).toEqual(steady);
    expect(l.step(10, 11)).toEqual(steady);
    expect(l.step(10, 13.5)).toEqual(steady);
  });

  it('behind by more than half a second: plays faster, says behind once, and 1x again within 0.1 s of the target', () => {
    const l = latency();
    expect(l.step(10, 13.6)).toEqual({ rate: CATCH_UP_RATE, seekTo: null, event: { type: 'behind', catchUp: 'rate' } });
    expect(l.step(10.05, 13.6)).toEqual({ rate: CATCH_UP_RATE, seekTo: null, event: null });
    // Still faster, unsaid, back within the half second: it stops only near the target.
    expect(l.step(10.2, 13.6)).toEqual({ rate: CATCH_UP_RATE, seekTo: null, event: null });
    expect(l.step(10.45, 13.6)).toEqual({ rate: CATCH_UP_RATE, seekTo: null, event: null });
    expect(l.step(10.5, 13.6)).toEqual({ rate: 1, seekTo: null, event: { type: 'caught-up' } });
    expect(l.step(10.5, 13.6)).toEqual(steady);
  });

  it('behind by more than the jump threshold: jumps to the target behind the edge at 1x, then says caught up', () => {
    const l = latency();
    // Exactly the threshold is caught up by rate.
    expect(l.step(10, 17)).toEqual({ rate: CATCH_UP_RATE, seekTo: null, event: { type: 'behind', catchUp: 'rate' } });
    // Beyond it, a jump, said even while already catching up.
    expect(l.step(10, 17.5)).toEqual({ rate: 1, seekTo: 14.5, event: { type: 'behind', catchUp: 'jump' } });
    expect(l.step(14.5, 17.5)).toEqual({ rate: 1, seekTo: null, event: { type: 'caught-up' } });
  });

  it('the target and the jump threshold are its options', () => {
    const l = new LiveLatency({ targetSeconds: 1, jumpSeconds: 2 });
    expect(l.step(10, 11.4)).toEqual(steady);
    expect(l.step(10, 11.6).event).toEqual({ type: 'behind', catchUp: 'rate' });
    expect(l.step(10, 13.5)).toEqual({ rate: 1, seekTo: 12.5, event: { type: 'behind', catchUp: 'jump' } });
  });
});
