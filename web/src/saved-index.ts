/**
 * Where each saved chunk is (`storage: 'opfs'`): its batch file and its entry there, in
 * typed arrays, so the index of a long video costs a few bytes per chunk and no object
 * per chunk.
 */
import type { SavedLocation } from './saved-chunks.js';

/** Entries per batch at most (an entry's number takes 16 bits). */
const MAX_ENTRIES = 1 << 16;
/** Batches at most (a batch's number takes the other 15 bits of a positive Int32). */
const MAX_BATCHES = 1 << 15;

export interface Located extends SavedLocation {
  file: File;
}

export class SavedIndex {
  /** Chunks of content an index is made for at most (its table takes 4 bytes per chunk). */
  static readonly MAX_CHUNKS = 1 << 23;
  /** Per chunk: batch << 16 | entry, or -1. */
  private readonly at: Int32Array;
  private readonly files: File[] = [];
  /** Per batch: chunk, offset, proof length and data length of each entry. */
  private readonly tables: Uint32Array[] = [];
  private count = 0;

  constructor(chunks: number) {
    this.at = new Int32Array(Math.min(chunks, SavedIndex.MAX_CHUNKS)).fill(-1);
  }

  /** Chunks indexed. */
  get size(): number {
    return this.count;
  }

  /** Whether another batch fits. */
  get full(): boolean {
    return this.files.length >= MAX_BATCHES;
  }

  /** Indexes a batch's entries that `usable` accepts; false (nothing indexed) if it cannot. */
  addBatch(file: File, locs: readonly SavedLocation[], usable: (loc: SavedLocation) => boolean): boolean {
    if (this.full || locs.length > MAX_ENTRIES) return false;
    const batch = this.files.length;
    const table = new Uint32Array(locs.length * 4);
    locs.forEach((loc, i) => {
      table.set([loc.chunk, loc.offset, loc.proofLength, loc.dataLength], i * 4);
      if (loc.chunk >= this.at.length || !usable(loc)) return;
      if (this.at[loc.chunk] === -1) this.count++;
      this.at[loc.chunk] = (batch << 16) | i;
    });
    this.files.push(file);
    this.tables.push(table);
    return true;
  }

  has(chunk: number): boolean {
    return (this.at[chunk] ?? -1) !== -1;
  }

  get(chunk: number): Located | undefined {
    const v = this.at[chunk] ?? -1;
    if (v === -1) return undefined;
    const [file, table] = [this.files[v >>> 16], this.tables[v >>> 16]];
    if (!file || !table) return undefined;
    const i = (v & 0xffff) * 4;
    return { chunk, offset: table[i + 1]!, proofLength: table[i + 2]!, dataLength: table[i + 3]!, file };
  }

  delete(chunk: number): void {
    if (this.has(chunk)) {
      this.at[chunk] = -1;
      this.count--;
    }
  }

  /** The indexed chunks as runs of consecutive ones, `[first, end)`, in order. */
  runs(): [number, number][] {
    const out: [number, number][] = [];
    let start = -1;
    for (let c = 0; c <= this.at.length; c++) {
      const saved = c < this.at.length && this.at[c] !== -1;
      if (saved && start === -1) start = c;
      if (!saved && start !== -1) {
        out.push([start, c]);
        start = -1;
      }
    }
    return out;
  }
}
