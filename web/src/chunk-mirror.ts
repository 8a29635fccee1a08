/**
 * The page's copy of what an engine in a Worker holds, for the swarm's synchronous reads
 * (the feeds appending to MediaSource, `fetch`'s result): the verified ranges, and the
 * bytes of each chunk verified since the engine started, as its turns bring them. A chunk
 * is readable here once its bytes came; what the engine lets go of goes here too.
 */
export class ChunkMirror {
  private readonly chunks = new Map<number, Uint8Array>();
  /** The engine's verified ranges, flat. */
  private have: readonly number[] = [];
  private haveCount = 0;
  /** Chunks `from..to` are all here (as the last `firstMissing` found; none went since):
   * a walk from within them goes on from `to`, not chunk by chunk over a whole window. */
  private run: { from: number; to: number } | null = null;

  constructor(
    private readonly chunkSize: number,
    private readonly length: number,
  ) {}

  /**
   * Verified bytes of the chunks from `first` on, one after another (each of the chunk
   * size, the last maybe shorter). Each chunk keeps a view of them: the buffer goes when
   * the last of its chunks does (the engine lets go of chunks in runs too, behind the
   * playhead).
   */
  add(first: number, data: Uint8Array): void {
    for (let at = 0, chunk = first; at < data.length; at += this.chunkSize, chunk += 1) {
      this.chunks.set(chunk, data.subarray(at, Math.min(at + this.chunkSize, data.length)));
    }
  }

  /** The engine's verified ranges now; chunks it let go of are dropped. */
  setHave(have: readonly number[]): void {
    let count = 0;
    for (let i = 0; i + 1 < have.length; i += 2) count += (have[i + 1] ?? 0) - (have[i] ?? 0);
    const shrank = count < this.haveCount;
    this.have = have;
    this.haveCount = count;
    if (shrank || this.chunks.size > count) {
      for (const c of this.chunks.keys()) if (!this.holds(c)) this.chunks.delete(c);
      this.run = null;
    }
  }

  /** Whether the engine's verified ranges hold `chunk`. */
  private holds(chunk: number): boolean {
    // Ranges are sorted and few: a binary search over their starts.
    let lo = 0;
    let hi = this.have.length / 2;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.have[2 * mid + 1] ?? 0) <= chunk) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.have.length / 2 && (this.have[2 * lo] ?? Infinity) <= chunk;
  }

  /** Verified ranges, flat. */
  haveRanges(): readonly number[] {
    return this.have;
  }

  /** The first chunk from `chunk` on whose bytes are not here. */
  firstMissing(chunk: number): number {
    const run = this.run;
    const within = run !== null && run.from <= chunk && chunk <= run.to;
    let c = within ? run.to : chunk;
    while (this.chunks.has(c)) c += 1;
    this.run = { from: within ? run.from : chunk, to: c };
    return c;
  }

  readChunk(chunk: number): Uint8Array | undefined {
    return this.chunks.get(chunk);
  }

  /** Bytes `start..end`; throws if a chunk of them is not here (check {@link firstMissing} first). */
  read(start: number, end: number): Uint8Array {
    const to = Math.min(end, this.length);
    const out = new Uint8Array(Math.max(0, to - start));
    let at = start;
    while (at < to) {
      const chunk = Math.floor(at / this.chunkSize);
      const data = this.chunks.get(chunk);
      if (!data) throw new RangeError(`chunk ${chunk} is not held`);
      const from = at - chunk * this.chunkSize;
      const take = Math.min(data.length - from, to - at);
      out.set(data.subarray(from, from + take), at - start);
      at += take;
    }
    return out;
  }
}
