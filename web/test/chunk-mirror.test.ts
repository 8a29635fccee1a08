/** ChunkMirror: the page's copy of what an engine in a Worker holds. */
import { describe, expect, it } from 'vitest';
import { ChunkMirror } from '../src/chunk-mirror.js';

const chunk = (n: number): Uint8Array => new Uint8Array(4).fill(n);

describe('ChunkMirror', () => {
  it('finds the first chunk not here as chunks come and go', () => {
    const m = new ChunkMirror(4, 400);
    for (const c of [0, 1, 2, 5, 6]) m.add(c, chunk(c));
    m.setHave([0, 3, 5, 7]);
    expect(m.firstMissing(0)).toBe(3);
    expect(m.firstMissing(1)).toBe(3);
    expect(m.firstMissing(5)).toBe(7);
    // The gap filled: the run goes on through it.
    for (const c of [3, 4]) m.add(c, chunk(c));
    m.setHave([0, 7]);
    expect(m.firstMissing(1)).toBe(7);
    expect(m.firstMissing(0)).toBe(7);
    // The engine let go of chunk 2: the runs over it end there.
    m.setHave([0, 2, 3, 7]);
    expect(m.firstMissing(0)).toBe(2);
    expect(m.firstMissing(3)).toBe(7);
    expect(m.read(12, 20)).toEqual(new Uint8Array([3, 3, 3, 3, 4, 4, 4, 4]));
    expect(() => m.read(8, 12)).toThrow(/chunk 2 is not held/);
  });
});
