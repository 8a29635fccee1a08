/**
 * What a live stream appends to MediaSource, and when. The initialisation segment comes
 * from the URI; the stream's chunks follow in order from the first that begins a media
 * segment (the source cuts chunks where segments start and end, `ppspp live`). Only
 * whole segments are appended (Firefox keeps just the first frame of a WebM Cluster split
 * across appends).
 *
 * Joining: the feed waits for two munros' signing times to learn the stream's rate in
 * chunks per second, then asks the engine for the chunks from the latency target (plus a
 * segment's margin) behind the edge, and starts at the first segment start among them.
 * Chunks that leave the discard window before they come make a gap: the feed joins again.
 */
import { concat } from './bytes.js';
import { type InitInfo, findSegmentStart, wholeSegmentsLength } from './container.js';

/** What the feed reads: the engine's live stream (`Swarm`). */
export interface LiveChunks {
  liveEdge(): number;
  liveFloor(): number;
  readChunk(chunk: number): Uint8Array | undefined;
  setPlayhead(chunk: number): void;
}

/** How long joining waits for the stream's rate before guessing. */
const RATE_WAIT_MS = 3000;
/** Signing times this far apart at least give the rate: sources write a segment at a
 * time (a second or so), so munros come in bursts, and a shorter span misjudges it. */
const RATE_SPAN_MS = 1000;
/** Munros signed this close together are one burst (a segment signed as it is written). */
const BURST_MS = 100;
/** Seconds fetched behind the edge beyond the latency target: a segment's worth. */
const JOIN_MARGIN_SECONDS = 2;
/** Chunks joined behind the edge when the rate is not known in time. */
const JOIN_BACK_CHUNKS = 256;
/** Bytes appended in one go at most (whole segments; one larger segment goes whole). */
const APPEND_STEP = 1 << 20;

interface Edge {
  end: number;
  signedAtMs: number;
}

/** Where the feed started playing, or started again after a gap. */
export interface LiveJoin {
  /** The chunk it starts at (the first segment start it found). */
  chunk: number;
  /** The live edge when it chose where to look. */
  edge: number;
  /** The stream's rate it went back by, in chunks per second; null: not known in time, guessed. */
  chunksPerSecond: number | null;
}

export class LiveFeed {
  /** The next chunk to append, and the offset in it (null: joining). */
  private next: { chunk: number; offset: number } | null = null;
  /** Where joining looks for a segment start, once chosen. */
  private scanFrom: number | null = null;
  private firstEdgeAtMs: number | null = null;
  private edges: Edge[] = [];
  /** Times the feed had to join again after a gap. */
  gaps = 0;
  /** The latest join, once found. */
  lastJoin: LiveJoin | null = null;
  /** The edge and rate the join in progress aimed from. */
  private aim: { edge: number; chunksPerSecond: number | null } | null = null;

  constructor(
    private readonly chunks: LiveChunks,
    private readonly info: InitInfo,
    private readonly latencySeconds: number,
  ) {}

  /** The edge moved on (a `live-edge` event), at `nowMs`. */
  onEdge(end: number, signedAtMs: number, nowMs: number): void {
    this.firstEdgeAtMs ??= nowMs;
    this.edges.push({ end, signedAtMs });
    if (this.edges.length > 32) this.edges.shift();
  }

  /** The stream's rate in chunks per second, from the munros' signing times. */
  chunksPerSecond(): number | null {
    const first = this.edges[0];
    const last = this.edges[this.edges.length - 1];
    if (!first || !last) return null;
    // From the end of the first burst (the last munro signed with the first one): counted
    // from a burst's first munro, the chunks of the rest of it would fall in the span
    // without its time, up to twice the rate over a span of one segment.
    let from = first;
    for (const e of this.edges) {
      if (e.signedAtMs - first.signedAtMs > BURST_MS) break;
      from = e;
    }
    const span = last.signedAtMs - from.signedAtMs;
    if (span < RATE_SPAN_MS) return null;
    return ((last.end - from.end) * 1000) / span;
  }

  /** The signing time of the newest munro, in Unix ms (the source's clock). */
  newestSignedAtMs(): number | null {
    return this.edges[this.edges.length - 1]?.signedAtMs ?? null;
  }

  /** Whether the feed has found where to start. */
  get joined(): boolean {
    return this.next !== null;
  }

  /** The next whole segments to append, or null if none is here yet. */
  take(nowMs: number): Uint8Array | null {
    const floor = this.chunks.liveFloor();
    if (this.next && this.next.chunk < floor) {
      // What was to come next left the window: join again at the edge.
      this.next = null;
      this.scanFrom = null;
      this.gaps++;
    }
    if (!this.next && !this.join(nowMs)) return null;
    const next = this.next;
    if (!next) return null;
    // Held chunks from `next` on, in order.
    const parts: Uint8Array[] = [];
    const ends: number[] = [];
    let total = 0;
    for (let c = next.chunk; total < APPEND_STEP; c++) {
      const data = this.chunks.readChunk(c);
      if (!data) break;
      const part = c === next.chunk ? data.subarray(next.offset) : data;
      parts.push(part);
      total += part.length;
      ends.push(total);
    }
    if (total === 0) return null;
    const bytes = concat(parts, total);
    const whole = wholeSegmentsLength(this.info, bytes);
    if (whole === 0) {
      this.chunks.setPlayhead(next.chunk + parts.length);
      return null;
    }
    // Where the whole segments end: the chunk and the offset in it.
    const i = ends.findIndex((e) => e >= whole);
    const before = i > 0 ? (ends[i - 1] ?? 0) : 0;
    const chunk = next.chunk + i;
    const inChunk = whole - before + (i === 0 ? next.offset : 0);
    const chunkLen = (parts[i]?.length ?? 0) + (i === 0 ? next.offset : 0);
    this.next = inChunk >= chunkLen ? { chunk: chunk + 1, offset: 0 } : { chunk, offset: inChunk };
    this.chunks.setPlayhead(this.next.chunk);
    return bytes.subarray(0, whole);
  }

  /** Chooses where to fetch from, then finds the first segment start there. */
  private join(nowMs: number): boolean {
    const edge = this.chunks.liveEdge();
    if (edge <= 0) return false;
    if (this.scanFrom === null) {
      const rate = this.chunksPerSecond();
      const waited = this.firstEdgeAtMs !== null && nowMs - this.firstEdgeAtMs >= RATE_WAIT_MS;
      if (rate === null && !waited) return false;
      const back =
        rate === null ? JOIN_BACK_CHUNKS : Math.ceil(rate * (this.latencySeconds + JOIN_MARGIN_SECONDS));
      this.aim = { edge, chunksPerSecond: rate };
      this.scanFrom = Math.max(this.chunks.liveFloor(), edge - back, 0);
      this.chunks.setPlayhead(this.scanFrom);
    }
    for (let c = Math.max(this.scanFrom, this.chunks.liveFloor()); c < edge; c++) {
      const data = this.chunks.readChunk(c);
      if (!data) {
        this.scanFrom = c;
        this.chunks.setPlayhead(c);
        return false;
      }
      if (findSegmentStart(this.info, data, 0) === 0) {
        this.next = { chunk: c, offset: 0 };
        this.lastJoin = { chunk: c, edge: this.aim?.edge ?? edge, chunksPerSecond: this.aim?.chunksPerSecond ?? null };
        return true;
      }
    }
    this.scanFrom = edge;
    return false;
  }
}
