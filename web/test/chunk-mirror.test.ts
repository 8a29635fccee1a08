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

  it('takes a run of chunks in one buffer, the last chunk short', () => {
    // 10 bytes of chunks of 4: chunks 0, 1 whole, chunk 2 of 2 bytes.
    const m = new ChunkMirror(4, 10);
    m.add(0, Uint8Array.from({ length: 10 }, (_, i) => i));
    m.setHave([0, 3]);
    expect(m.firstMissing(0)).toBe(3);
    expect(m.readChunk(1)).toEqual(new Uint8Array([4, 5, 6, 7]));
    expect(m.readChunk(2)).toEqual(new Uint8Array([8, 9]));
    expect(m.read(3, 10)).toEqual(new Uint8Array([3, 4, 5, 6, 7, 8, 9]));
    // Letting go of one chunk of the run keeps the others readable.
    m.setHave([0, 1, 2, 3]);
    expect(m.readChunk(1)).toBeUndefined();
    expect(m.read(8, 10)).toEqual(new Uint8Array([8, 9]));
  });
});
