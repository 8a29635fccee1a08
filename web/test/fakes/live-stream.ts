/**
 * A live stream's chunks as the engine holds them (`LiveChunks`): the test moves the
 * edge and the discard window's floor and says which chunks peers delivered.
 */
import type { LiveChunks } from '../../src/media/live-feed.js';

/** Segments cut into chunks as `ppspp live` cuts them: at most `chunkSize` bytes, cut where each segment starts and ends. */
export function cutIntoChunks(segments: Uint8Array[], chunkSize: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const s of segments) {
    for (let at = 0; at < s.length; at += chunkSize) out.push(s.subarray(at, Math.min(s.length, at + chunkSize)));
  }
  return out;
}

export class FakeLiveStream implements LiveChunks {
  held = new Map<number, Uint8Array>();
  edge = 0;
  floor = 0;
  /** The engine's playhead as last set (-1: never). */
  playhead = -1;
  constructor(readonly chunks: Uint8Array[]) {}
  liveEdge(): number {
    return this.edge;
  }
  liveFloor(): number {
    return this.floor;
  }
  readChunk(c: number): Uint8Array | undefined {
    return this.held.get(c);
  }
  setPlayhead(c: number): void {
    this.playhead = c;
  }
  /** Peers deliver chunks `from..to`. */
  deliver(from: number, to: number): void {
    for (let c = from; c < to; c++) {
      const data = this.chunks[c];
      if (data) this.held.set(c, data);
    }
  }
}
