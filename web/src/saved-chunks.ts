/**
 * Saved chunks (`storage: 'opfs'`): verified chunks are written, with their proofs, to the
 * Origin Private File System, so a reload (or a later visit) reads them back instead of
 * fetching them again. The engine decides which saved chunks to read back, and verifies
 * each against the root before it is kept, played or served to peers: a damaged or foreign
 * file costs a refetch, never a bad byte.
 *
 * Layout: `ppspp-web/<root>/` holds batch files, each written once and whole
 * (`createWritable` commits it atomically on close), so a reload mid-write loses at most
 * the batch being written. A batch is `PPKC`, version, count, then one entry per chunk
 * (index, offset, proof length, data length; little-endian u32s), then each chunk's proof
 * and data at its offset.
 */
import { messageOf } from './errors.js';
import { SavedIndex } from './saved-index.js';
import type { WasmPeer } from './wasm.js';

/** Why saving stopped and the page holds chunks in memory only. */
export type StorageFallbackReason = 'unavailable' | 'quota' | 'error';

export interface StorageFallback {
  reason: StorageFallbackReason;
  message: string;
}

/** The directory under the origin's OPFS root where every swarm's chunks are kept. */
export const STORAGE_DIRECTORY = 'ppspp-web';

const MAGIC = 0x434b5050; // 'PPKC' read little-endian
const VERSION = 1;
const HEADER_BYTES = 16;
const ENTRY_BYTES = 16;
/** A batch is written once this much is pending, or after BATCH_DELAY_MS. */
const BATCH_BYTES = 1 << 20;
const BATCH_DELAY_MS = 500;
/** Chunks verified while writes lag this far behind are not saved (memory stays bounded). */
const MAX_PENDING_BYTES = 8 << 20;
const BATCH_NAME = /^k-[0-9a-z]+-\d+$/;

export interface SavedEntry {
  chunk: number;
  proof: Uint8Array;
  data: Uint8Array;
}

/** Where a saved chunk's proof and data are in its batch file. */
export interface SavedLocation {
  chunk: number;
  offset: number;
  proofLength: number;
  dataLength: number;
}

/** A batch file's bytes. */
export function encodeBatch(entries: readonly SavedEntry[]): Uint8Array<ArrayBuffer> {
  let size = HEADER_BYTES + ENTRY_BYTES * entries.length;
  for (const e of entries) size += e.proof.length + e.data.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, VERSION, true);
  view.setUint32(8, entries.length, true);
  let at = HEADER_BYTES + ENTRY_BYTES * entries.length;
  entries.forEach((e, i) => {
    const base = HEADER_BYTES + ENTRY_BYTES * i;
    view.setUint32(base, e.chunk, true);
    view.setUint32(base + 4, at, true);
    view.setUint32(base + 8, e.proof.length, true);
    view.setUint32(base + 12, e.data.length, true);
    out.set(e.proof, at);
    out.set(e.data, at + e.proof.length);
    at += e.proof.length + e.data.length;
  });
  return out;
}

/** The number of entries a batch has, from its first {@link HEADER_BYTES} bytes; throws if they are not a batch's. */
export function batchCount(head: Uint8Array): number {
  if (head.length < HEADER_BYTES) throw new Error('shorter than a batch header');
  const view = new DataView(head.buffer, head.byteOffset, head.length);
  if (view.getUint32(0, true) !== MAGIC) throw new Error('not a batch of saved chunks');
  const version = view.getUint32(4, true);
  if (version !== VERSION) throw new Error(`batch version ${version}, this build reads ${VERSION}`);
  return view.getUint32(8, true);
}

/** The entries of a batch of `fileSize` bytes, from its header and entry table; throws if any lies outside the file. */
export function parseBatchIndex(table: Uint8Array, fileSize: number): SavedLocation[] {
  const count = batchCount(table);
  const end = HEADER_BYTES + ENTRY_BYTES * count;
  if (table.length < end || end > fileSize) throw new Error('entry table cut short');
  const view = new DataView(table.buffer, table.byteOffset, table.length);
  const out: SavedLocation[] = [];
  for (let i = 0; i < count; i++) {
    const base = HEADER_BYTES + ENTRY_BYTES * i;
    const loc = {
      chunk: view.getUint32(base, true),
      offset: view.getUint32(base + 4, true),
      proofLength: view.getUint32(base + 8, true),
      dataLength: view.getUint32(base + 12, true),
    };
    if (loc.offset < end || loc.offset + loc.proofLength + loc.dataLength > fileSize) {
      throw new Error(`entry ${i} lies outside the file`);
    }
    out.push(loc);
  }
  return out;
}

/** Deletes the saved chunks of one swarm (its root, as in the URI), or of every swarm. */
export async function clearSavedChunks(root?: string): Promise<void> {
  const top = await navigator.storage.getDirectory();
  if (root === undefined) {
    await top.removeEntry(STORAGE_DIRECTORY, { recursive: true }).catch(ignoreNotFound);
    return;
  }
  const dir = await top.getDirectoryHandle(STORAGE_DIRECTORY).catch(ignoreNotFound);
  await dir?.removeEntry(root, { recursive: true }).catch(ignoreNotFound);
}

function ignoreNotFound(err: unknown): undefined {
  if (err instanceof DOMException && err.name === 'NotFoundError') return undefined;
  throw err;
}

/** Consecutive runs of `chunks` (in any order), as `[first, end)` pairs. */
function runsOf(chunks: number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const c of [...chunks].sort((a, b) => a - b)) {
    const last = out[out.length - 1];
    if (last && last[1] === c) last[1] = c + 1;
    else if (!last || last[1] < c) out.push([c, c + 1]);
  }
  return out;
}

export class SavedChunks {
  private readonly index: SavedIndex;
  private pending: SavedEntry[] = [];
  /** The chunks of `pending` and of batches being written. */
  private readonly unwritten = new Set<number>();
  private pendingBytes = 0;
  /** Bytes in batches being written. */
  private writingBytes = 0;
  private writing: Promise<void> = Promise.resolve();
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly session = Math.floor(Math.random() * 36 ** 6).toString(36);
  private batches = 0;
  private stopped = false;
  private closed = false;

  private constructor(
    private readonly dir: FileSystemDirectoryHandle,
    private readonly engine: WasmPeer,
    private readonly chunkSize: number,
    private readonly length: number,
    private readonly quotaBytes: number,
    private usedBytes: number,
    /** Read-back chunks were handed to the engine: its loop should run. */
    private readonly kick: () => void,
    /** Saving stopped; the page goes on in memory. */
    private readonly fallback: (f: StorageFallback) => void,
    /** False once the engine is freed (the swarm closed): it is not called any more. */
    private readonly engineAlive: () => boolean,
  ) {
    this.index = new SavedIndex(Math.ceil(length / chunkSize));
  }

  /**
   * Opens the swarm's directory and tells the engine which chunks are saved there. Null
   * (after `fallback`) if the browser has no usable OPFS.
   */
  static async open(
    root: string,
    engine: WasmPeer,
    content: { chunkSize: number; length: number },
    quotaBytes: number,
    kick: () => void,
    fallback: (f: StorageFallback) => void,
    engineAlive: () => boolean,
  ): Promise<SavedChunks | null> {
    let dir: FileSystemDirectoryHandle;
    try {
      if (typeof navigator === 'undefined' || !navigator.storage?.getDirectory) {
        throw new Error('this browser has no Origin Private File System');
      }
      const top = await navigator.storage.getDirectory();
      const ours = await top.getDirectoryHandle(STORAGE_DIRECTORY, { create: true });
      dir = await ours.getDirectoryHandle(root, { create: true });
      if (typeof FileSystemFileHandle === 'undefined' || !('createWritable' in FileSystemFileHandle.prototype)) {
        throw new Error('this browser cannot write files in the Origin Private File System');
      }
      if (Math.ceil(content.length / content.chunkSize) > SavedIndex.MAX_CHUNKS) {
        throw new Error(`the content has more than ${SavedIndex.MAX_CHUNKS} chunks`);
      }
    } catch (err) {
      fallback({ reason: 'unavailable', message: `saved chunks unavailable: ${messageOf(err)}; chunks are held in memory only` });
      return null;
    }
    const saved = new SavedChunks(dir, engine, content.chunkSize, content.length, quotaBytes, 0, kick, fallback, engineAlive);
    try {
      await saved.load();
    } catch (err) {
      fallback({ reason: 'error', message: `saved chunks could not be read: ${messageOf(err)}; chunks are held in memory only` });
      return null;
    }
    return saved;
  }

  /** Reads every batch's entry table (all at once); unreadable batches are deleted. */
  private async load(): Promise<void> {
    const names: [string, FileSystemFileHandle][] = [];
    for await (const [name, handle] of this.dir.entries()) {
      if (handle.kind === 'file' && BATCH_NAME.test(name)) names.push([name, handle as FileSystemFileHandle]);
    }
    const read = await Promise.all(
      names.map(async ([name, handle]) => {
        try {
          const file = await handle.getFile();
          // Another tab's batch being written is empty until it is whole.
          if (file.size === 0) return { name, file, locs: [] };
          const head = new Uint8Array(await file.slice(0, HEADER_BYTES).arrayBuffer());
          const table = new Uint8Array(await file.slice(0, HEADER_BYTES + ENTRY_BYTES * batchCount(head)).arrayBuffer());
          return { name, file, locs: parseBatchIndex(table, file.size) };
        } catch {
          return { name, file: null, locs: [] };
        }
      }),
    );
    // Oldest first: where a chunk was saved twice, the newer copy is the one used.
    read.sort((a, b) => (a.file?.lastModified ?? 0) - (b.file?.lastModified ?? 0));
    for (const { name, file, locs } of read) {
      if (!file) {
        await this.dir.removeEntry(name).catch(() => {});
        continue;
      }
      this.usedBytes += file.size;
      this.index.addBatch(file, locs, (loc) => this.fits(loc));
    }
    if (!this.engineAlive()) return;
    for (const [first, end] of this.index.runs()) this.engine.addSaved(first, end);
  }

  /** Whether a location can hold a chunk of this content (else it is not offered). */
  private fits(loc: SavedLocation): boolean {
    const start = loc.chunk * this.chunkSize;
    return start < this.length && loc.dataLength === Math.min(this.chunkSize, this.length - start);
  }

  /** Chunks saved (or being saved). */
  get count(): number {
    return this.index.size + this.unwritten.size;
  }

  /** Bytes in saved batches. */
  get bytes(): number {
    return this.usedBytes;
  }

  /** A chunk was verified (from a peer or the HTTP origin): saved with its next batch. */
  save(chunk: number): void {
    if (this.stopped || this.closed || this.index.has(chunk) || this.unwritten.has(chunk)) return;
    if (this.pendingBytes + this.writingBytes >= MAX_PENDING_BYTES) return;
    const proof = this.engine.chunkProof(chunk);
    if (!proof) return;
    const start = chunk * this.chunkSize;
    const data = this.engine.read(start, Math.min(start + this.chunkSize, this.length));
    this.pending.push({ chunk, proof, data });
    this.unwritten.add(chunk);
    this.pendingBytes += proof.length + data.length + ENTRY_BYTES;
    if (this.pendingBytes >= BATCH_BYTES) this.flush();
    else this.flushTimer ??= setTimeout(() => this.flush(), BATCH_DELAY_MS);
  }

  /** Writes what is pending as one batch (after the batches before it). */
  flush(): void {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    if (this.pending.length === 0 || this.stopped) return;
    const chunks = this.pending.map((e) => e.chunk);
    const bytes = encodeBatch(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    this.writingBytes += bytes.length;
    this.writing = this.writing.then(() => this.write(bytes, chunks)).finally(() => {
      this.writingBytes -= bytes.length;
      for (const c of chunks) this.unwritten.delete(c);
    });
  }

  private async write(bytes: Uint8Array<ArrayBuffer>, chunks: number[]): Promise<void> {
    if (this.stopped) return;
    if (this.index.full) {
      this.stop('quota', 'saved chunks reached the most batch files one video may have');
      return;
    }
    if (this.usedBytes + bytes.length > this.quotaBytes) {
      this.stop('quota', `saved chunks would pass the storage quota of ${this.quotaBytes} bytes`);
      return;
    }
    const name = `k-${this.session}-${this.batches++}`;
    try {
      const handle = await this.dir.getFileHandle(name, { create: true });
      const writable = await handle.createWritable();
      try {
        await writable.write(bytes);
        await writable.close();
      } catch (err) {
        await writable.abort().catch(() => {});
        throw err;
      }
      const file = await handle.getFile();
      this.usedBytes += file.size;
      this.index.addBatch(file, parseBatchIndex(bytes, bytes.length), () => true);
      // The engine reads them back if it lets go of them (the memory bound) and wants them again.
      if (this.engineAlive()) for (const [first, end] of runsOf(chunks)) this.engine.addSaved(first, end);
    } catch (err) {
      await this.dir.removeEntry(name).catch(() => {});
      const quota = err instanceof DOMException && err.name === 'QuotaExceededError';
      this.stop(quota ? 'quota' : 'error', `saving chunks failed: ${messageOf(err)}`);
    }
  }

  private stop(reason: StorageFallbackReason, message: string): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const e of this.pending) this.unwritten.delete(e.chunk);
    this.pending = [];
    this.pendingBytes = 0;
    if (!this.closed) this.fallback({ reason, message: `${message}; new chunks are held in memory only` });
  }

  /** Starts every read-back the engine asks for (after each turn of its loop). */
  pump(): void {
    if (this.closed) return;
    for (;;) {
      const range = this.engine.pollSavedRead();
      if (!range) break;
      void this.readBack(range[0] ?? 0, range[1] ?? 0);
    }
  }

  private async readBack(first: number, end: number): Promise<void> {
    const read: [number, Uint8Array | null][] = await Promise.all(
      Array.from({ length: end - first }, async (_, i): Promise<[number, Uint8Array | null]> => {
        const chunk = first + i;
        const loc = this.index.get(chunk);
        if (!loc) return [chunk, null];
        try {
          const at = loc.offset;
          const bytes = await loc.file.slice(at, at + loc.proofLength + loc.dataLength).arrayBuffer();
          return [chunk, new Uint8Array(bytes)];
        } catch {
          return [chunk, null];
        }
      }),
    );
    if (this.closed) return;
    for (const [chunk, bytes] of read) {
      const loc = this.index.get(chunk);
      if (!bytes || !loc || bytes.length !== loc.proofLength + loc.dataLength) {
        this.index.delete(chunk);
        this.engine.handleSavedMissing(chunk, chunk + 1);
        continue;
      }
      const refused = this.engine.handleSavedChunk(
        chunk,
        bytes.subarray(loc.proofLength),
        bytes.subarray(0, loc.proofLength),
      );
      // A copy that does not verify is never offered again (the engine fetches the chunk).
      if (refused !== undefined) this.index.delete(chunk);
    }
    this.kick();
  }

  /** Writes what is pending; nothing is read back or saved afterwards. */
  close(): void {
    this.flush();
    this.closed = true;
  }
}
