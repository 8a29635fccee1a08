/** SegmentPlaces: where media times are in a file, from the segment starts a page appended. */
import { describe, expect, it } from 'vitest';
import { SegmentPlaces } from '../../src/media/segment-places.js';

describe('SegmentPlaces', () => {
  it('places a time between the segment starts around it, past the last at the rate, before the first nowhere', () => {
    const p = new SegmentPlaces();
    expect(p.byteAt(3, 100)).toBeNull();
    // Learned out of order (a seek ahead, then back), once each.
    p.add(10, 5000);
    p.add(2, 1000);
    p.add(4, 3000);
    p.add(4, 9999);
    expect(p.byteAt(1, 100)).toBeNull();
    expect(p.byteAt(2, 100)).toBe(1000);
    expect(p.byteAt(3, 100)).toBe(2000);
    expect(p.byteAt(7, 100)).toBe(4000);
    expect(p.byteAt(12, 100)).toBe(5200);
    expect(p.byteAt(12, null)).toBeNull();
  });

  it('ignores times that are no media time', () => {
    const p = new SegmentPlaces();
    p.add(Number.NaN, 10);
    p.add(-1, 10);
    expect(p.byteAt(0, 1)).toBeNull();
  });
});
