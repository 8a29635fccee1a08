/**
 * What a live stream appends to MediaSource, and when. The stream's chunks are taken in
 * order from the first that begins a media segment (the source cuts chunks where segments
 * start and end, `ppspp live`); a source puts the initialisation segment in front of each
 * media segment, so a viewer joining anywhere finds it in the swarm, signed as every chunk
 * is (a URI's `init=`, the older form, gives it too). Only whole segments are appended
 * (Firefox keeps just the first frame of a WebM Cluster split across appends), without
 * the copies of the initialisation segment in front of them: it does not change within a
 * run of the source, and not every browser's MediaSource takes one amid an append.
 *
 * Joining: the feed waits for two munros' signing times to learn the stream's rate in
 * chunks per second, then asks the engine for the chunks from the latency target (plus a
 * segment's margin) behind the edge, and starts at the first segment start among them.
 * Chunks that leave the discard window before they come make a gap: the feed joins again.
 */
import { concat } from './bytes.js';
import { type InitInfo, detectContainer, findSegmentStart, parseInit, wholeSegmentsLength } from './container.js';

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
/** Bytes read to find where an initialisation segment ends (`ppspp live` takes at most
 * 16 KiB of one, and the first media segment's start must follow it). */
const INIT_READ = 20 << 10;

/** A live stream's initialisation segment: what MediaSource is set up with and given first. */
export interface LiveInit {
  info: InitInfo;
  bytes: Uint8Array;
}

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

  /**
   * `init`: the stream's initialisation segment where the URI gives it (`init=`, the older
   * form); null: found in the stream when joining.
   */
  constructor(
    private readonly chunks: LiveChunks,
    private init: LiveInit | null,
    private readonly latencySeconds: number,
  ) {}

  /**
   * The stream's initialisation segment once known (from the URI, or from the stream once
   * joined: this tries to join, at `nowMs`).
   */
  initSegment(nowMs: number): LiveInit | null {
    if (!this.next) this.join(nowMs);
    return this.next ? this.init : null;
  }

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

  /** The next whole segments to append (without the copies of the initialisation segment), or null if none is here yet. */
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
    const info = this.init?.info;
    if (!next || !info) return null;
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
    const whole = wholeSegmentsLength(info, bytes);
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
    return withoutCopies(bytes.subarray(0, whole), this.init?.bytes);
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
      let start: { chunk: number; offset: number } | null = null;
      if (detectContainer(data) !== null) {
        // A segment with the initialisation segment in front: playback starts after it.
        const found = this.readInit(c, edge);
        if (found === 'wait') {
          this.scanFrom = c;
          return false;
        }
        if (found) {
          this.init = found.init;
          start = found.after;
        }
      } else if (this.init && findSegmentStart(this.init.info, data, 0) === 0) {
        start = { chunk: c, offset: 0 };
      }
      if (start) {
        this.next = start;
        this.lastJoin = { chunk: c, edge: this.aim?.edge ?? edge, chunksPerSecond: this.aim?.chunksPerSecond ?? null };
        return true;
      }
    }
    this.scanFrom = edge;
    return false;
  }

  /**
   * The initialisation segment starting chunk `c`, and where the media after it starts;
   * 'wait' while chunks it needs are not held; null if it is none.
   */
  private readInit(c: number, edge: number): { init: LiveInit; after: { chunk: number; offset: number } } | 'wait' | null {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (let k = c; total < INIT_READ && k < edge; k++) {
      const data = this.chunks.readChunk(k);
      if (!data) {
        this.chunks.setPlayhead(k);
        return 'wait';
      }
      parts.push(data);
      total += data.length;
    }
    const bytes = concat(parts, total);
    let info: InitInfo | null;
    try {
      info = parseInit(bytes);
    } catch {
      return null;
    }
    if (!info) return total >= INIT_READ ? null : 'wait';
    // The chunk and offset where the initialisation segment ends.
    let at = info.initLength;
    let k = 0;
    while (k < parts.length && at >= parts[k]!.length) at -= parts[k++]!.length;
    return { init: { info, bytes: bytes.slice(0, info.initLength) }, after: { chunk: c + k, offset: at } };
  }
}

/** `bytes` without the copies of `init` in them (the media as the source's input had it). */
function withoutCopies(bytes: Uint8Array, init: Uint8Array | undefined): Uint8Array {
  if (!init || init.length === 0) return bytes;
  const runs: Uint8Array[] = [];
  let total = 0;
  let at = 0;
  for (let i = indexOf(bytes, init, 0); i >= 0; i = indexOf(bytes, init, at)) {
    runs.push(bytes.subarray(at, i));
    total += i - at;
    at = i + init.length;
  }
  if (at === 0) return bytes;
  runs.push(bytes.subarray(at));
  total += bytes.length - at;
  return concat(runs, total);
}

/** Where `needle` first occurs in `hay` from `from` on, or -1. */
function indexOf(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  outer: for (let i = hay.indexOf(first!, from); i >= 0 && i + needle.length <= hay.length; i = hay.indexOf(first!, i + 1)) {
    for (let k = 1; k < needle.length; k++) if (hay[i + k] !== needle[k]) continue outer;
    return i;
  }
  return -1;
}
