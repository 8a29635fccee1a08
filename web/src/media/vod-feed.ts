/**
 * A file's feed of MediaSource: verified bytes are appended in order, in whole media
 * segments; the engine's VoD picker is pointed just ahead of what playback needs; a seek
 * outside the buffer moves both to the media segment (WebM Cluster, MP4 fragment) that
 * holds the new position.
 */
import type { Feed, MediaSink } from './feed.js';
import { type InitInfo, findSegmentStart, firstSegmentEnd, parseInit, segmentStartTime, wholeSegmentsLength } from './container.js';
import { SeekSearch, type SeekStep } from './seek-search.js';
import { SegmentPlaces } from './segment-places.js';
import { type VideoLike, bufferedAhead } from './stall-watch.js';
import { completeChildrenEnd, openClusterHead } from './webm.js';
import { PpsppError } from '../errors.js';

/** What the feed reads and steers: the engine's file (`Swarm`). */
export interface VodChunks {
  /** Where the verified bytes from `offset` on end. */
  verifiedEnd(offset: number): number;
  /** Where the engine's window ends: it fetches no further (under `maxMemoryBytes`). */
  wantedEnd(): number;
  /** Verified bytes `start..end`. */
  read(start: number, end: number): Uint8Array;
  setPlayhead(chunk: number): void;
  setReadAhead(chunks: number, fromHttp: number): void;
  setWaitingFor(chunks: { start: number; end: number } | null): void;
}

/** The part of the video element the feed reads. */
export interface VodVideo extends VideoLike {
  readonly duration: number;
}

export interface VodFeedOptions {
  /** The file's length in bytes, and its chunk size. */
  content: { length: number; chunkSize: number };
  /** Bytes the engine fetches ahead before the bit rate is known (`readAheadBytes`). */
  readAheadBytes: number;
  /** Seconds of media fetched ahead of the playhead; 0: no bound (`readAheadSeconds`). */
  readAheadSeconds: number;
  /** Seconds ahead the HTTP origin is asked for (`httpReadAheadSeconds`). */
  httpReadAheadSeconds: number;
  /** Seconds of media played so far (seeks not counted): the read-ahead opens with them. */
  secondsPlayed(): number;
}

/** Bytes looked at for whole segments in one go (MediaSource parses faster in large
 * appends); a segment larger than this is appended whole all the same. */
const APPEND_STEP = 1 << 20;
/** Seconds buffered ahead of the playhead at most; more waits for playback. */
export const MAX_AHEAD_SECONDS = 60;
/** Seconds buffered ahead below which playback starves: see `followPlayback`. */
const STARVING_SECONDS = 1;
/** Seconds of read-ahead before anything is played: the window opens from there. */
const READ_AHEAD_START_SECONDS = 5;
/** Seconds the read-ahead window opens by per second played. */
const READ_AHEAD_OPENING = 2;
/** The read-ahead bound never cuts a page's fetching below this many bytes ahead (a segment or two). */
const MIN_READ_AHEAD_BYTES = 1 << 20;
/** What is read from a segment's start to find its end in its headers (a moof is a few KiB). */
const SEGMENT_HEAD_BYTES = 64 << 10;
/** Bytes looked at from a seek's guess for a segment start, at first. */
const SEEK_PROBE = 512 << 10;

interface Seek {
  search: SeekSearch;
  /** Bytes looked at from the search's start: doubled while no segment start is in them. */
  probe: number;
}

export class VodFeed implements Feed {
  private info: InitInfo | null = null;
  private appendPos = 0;
  /**
   * A segment larger than the engine's window (its read-ahead, or `maxMemoryBytes`): the
   * bytes of it verified so far, from `appendPos`, copied here. The engine fetches on from
   * their end, and may let go of them (they are behind its playhead): the page keeps them
   * until the segment is whole and appended.
   */
  private segmentStart: Uint8Array | null = null;
  /** A WebM Cluster appended in part (as an unknown-size Cluster): where it ends. */
  private openCluster: { end: number } | null = null;
  private seek: Seek | null = null;
  /** The chunk the engine's window starts at, as last set: it moves back only for a seek. */
  private playhead = 0;
  /** Where the segments appended start, by media time: where playback is in the file. */
  private readonly places = new SegmentPlaces();
  private ended = false;
  private closed = false;

  constructor(
    private readonly chunks: VodChunks,
    private readonly video: VodVideo,
    private readonly sink: MediaSink,
    private readonly options: VodFeedOptions,
  ) {
    // Until the bit rate is known (the duration read, or a second appended), the
    // read-ahead is bounded in bytes: a fast origin would otherwise send much of the
    // video before its first frame. What playback waits for is served all the same.
    const inChunks = (bytes: number): number => Math.ceil(bytes / options.content.chunkSize);
    const first = Math.max(options.readAheadBytes, MIN_READ_AHEAD_BYTES);
    chunks.setReadAhead(options.readAheadSeconds > 0 ? inChunks(first) : -1, inChunks(MIN_READ_AHEAD_BYTES));
  }

  feed(): void {
    if (!this.info && !this.startMedia()) return;
    if (this.seek && !this.continueSeek()) return;
    const { length } = this.options.content;
    if (this.appendPos < length) {
      if (this.sink.full() || bufferedAhead(this.video) > MAX_AHEAD_SECONDS) return;
      const next = this.nextAppend();
      // Nothing to append yet: where playback waits moved on with what was verified.
      if (!next) this.followPlayback();
      if (next) {
        const time = this.info ? segmentStartTime(this.info, next.bytes) : null;
        if (time !== null) this.places.add(time, this.appendPos);
        this.sink.append(next.bytes);
        this.appendPos = next.to;
        this.segmentStart = null;
        this.followPlayback();
        this.sink.scheduleFeed();
      }
    } else if (!this.ended) {
      this.ended = true;
      void this.sink.idle().then(() => {
        if (this.appendPos >= length && !this.seek && !this.sink.endOfStream()) {
          this.ended = false; // a SourceBuffer was still updating: try again on the next feed
        }
      });
    }
  }

  onTimeUpdate(): void {
    this.followPlayback();
  }

  onTick(): void {
    // Playback waiting moves nothing here: verified chunks and time updates do.
  }

  onSeeking(): void {
    const info = this.info;
    if (!info || this.closed) return;
    const t = this.video.currentTime;
    const b = this.video.buffered;
    for (let i = 0; i < b.length; i++) if (b.start(i) <= t && t < b.end(i) - 0.1) return;
    this.playFrom(info, t);
  }

  /**
   * A ManagedMediaSource removed `ranges` on its own (memory pressure). Media removed
   * behind the playhead is nothing to play; removed ahead of it, it is appended again
   * from where it went, from the chunks the engine holds (nothing is fetched again while
   * they are within the read-ahead).
   */
  onBrowserEvicted(ranges: [number, number][]): boolean {
    const info = this.info;
    if (!info || this.closed || this.seek) return false;
    const t = this.video.currentTime;
    const ahead = ranges.filter(([, end]) => end > t + 0.1);
    if (ahead.length === 0) return false;
    const from = Math.max(t, Math.min(...ahead.map(([start]) => start)));
    this.sink.reset();
    this.playFrom(info, from);
    return true;
  }

  close(): void {
    this.closed = true;
  }

  /** Parses the initialization segment once it is here and has MediaSource set up for it. */
  private startMedia(): boolean {
    const { length } = this.options.content;
    const avail = this.chunks.verifiedEnd(0);
    if (avail === 0) return false;
    const info = parseInit(this.chunks.read(0, avail));
    if (!info && avail >= length) {
      throw new PpsppError('media-error', 'the content has no complete initialization segment');
    }
    if (!info) return false;
    this.sink.start(info);
    if (info.durationSeconds !== null && Number.isFinite(info.durationSeconds)) this.sink.setDuration(info.durationSeconds);
    this.info = info;
    return true;
  }

  /**
   * What to append next, and where in the file it ends: whole media segments; or, for a
   * WebM Cluster not yet whole, its complete blocks so far, the first time behind the
   * Cluster's ID with an unknown size (as live streams write it), so playback need not
   * wait for the whole Cluster. Both engines take a Cluster of unknown size in pieces;
   * Firefox does not take a Cluster of known size in pieces.
   */
  private nextAppend(): { bytes: Uint8Array; to: number } | null {
    const info = this.info;
    if (!info) return null;
    const from = this.appendPos;
    const verified = this.verifiedEnd(from);
    if (this.openCluster) {
      const limit = this.openCluster.end;
      const bytes = this.read(from, Math.min(verified, limit));
      const end = verified >= limit ? bytes.length : completeChildrenEnd(bytes, 0, bytes.length);
      if (verified >= limit) this.openCluster = null;
      return end > 0 ? { bytes: bytes.subarray(0, end), to: from + end } : null;
    }
    const whole = this.wholeSegmentsEnd();
    if (whole > from) return { bytes: this.read(from, whole), to: whole };
    if (info.kind !== 'webm' || from < info.initLength || verified <= from) return null;
    const bytes = this.read(from, Math.min(verified, from + APPEND_STEP));
    const open = openClusterHead(bytes);
    if (!open || open.clusterEnd === null) return null;
    this.openCluster = { end: from + open.clusterEnd };
    const body = bytes.subarray(open.children, open.end);
    const piece = new Uint8Array(open.head.length + body.length);
    piece.set(open.head);
    piece.set(body, open.head.length);
    return { bytes: piece, to: from + open.end };
  }

  /**
   * Where the verified bytes after `appendPos` stop being whole media segments (the init
   * segment first, alone). At the end of the content the rest is whole by definition.
   * With no whole segment yet while the verified run reaches the end of the engine's
   * window (or half the read-ahead bytes), the page keeps a copy of it and the engine is
   * told to fetch on from its end (`segmentStart`).
   */
  private wholeSegmentsEnd(): number {
    const info = this.info;
    if (!info) return this.appendPos;
    if (this.appendPos === 0) return info.initLength;
    const { length, chunkSize } = this.options.content;
    const verified = this.verifiedEnd(this.appendPos);
    if (verified >= length) return length;
    let end = Math.min(verified, this.appendPos + APPEND_STEP);
    let whole = wholeSegmentsLength(info, this.read(this.appendPos, end));
    if (whole === 0 && end < verified) {
      end = verified;
      whole = wholeSegmentsLength(info, this.read(this.appendPos, end));
    }
    // The window starts at the segment and ends inside it (else it moves on with playback
    // and takes the segment in time), or, the first time, half the read-ahead bytes are in
    // without its end. (Copied again only once per window: not on every chunk.)
    const windowTooShort = this.playhead >= Math.floor(this.appendPos / chunkSize) && verified >= this.chunks.wantedEnd();
    const halfIn = this.segmentStart === null && verified - this.appendPos >= this.options.readAheadBytes / 2;
    if (whole === 0 && verified > this.copyEnd() && (windowTooShort || halfIn)) {
      this.segmentStart = this.read(this.appendPos, verified).slice();
      this.setPlayhead(Math.floor(verified / chunkSize));
    }
    return this.appendPos + whole;
  }

  /**
   * Moves the engine's VoD window to what playback needs next: the byte position of the
   * current time (estimated: `playingByte`; no sooner than what is still to be appended).
   * Following the append position instead would make everything "due" as fast as it
   * arrives, and seeders would be asked for all of it.
   *
   * While playback starves (less than {@link STARVING_SECONDS} buffered ahead: before the
   * first frame, or a stall coming), the window starts where appends stopped, and the
   * engine is also told where it waits: the first chunk not verified after what was
   * appended. An HTTP origin serves those chunks if no peer holds them, however far the
   * estimate is (a first keyframe larger than the due span, say); and under
   * `maxMemoryBytes` they are within the window, so the engine keeps them (beyond it, it
   * would let go of them first, and playback would wait for them for ever).
   */
  private followPlayback(): void {
    const info = this.info;
    if (!info || this.seek) return;
    const { chunkSize } = this.options.content;
    const t = this.video.currentTime;
    const rate = this.bytesPerSecond();
    const buffered = bufferedAhead(this.video);
    const starving = buffered < STARVING_SECONDS;
    const at = starving ? this.appendPos : Math.min(this.appendPos, this.playingByte(info, t, rate));
    if (rate !== null) {
      // In chunks, at least MIN_READ_AHEAD_BYTES; -1 (0 seconds): no bound.
      const chunks = (seconds: number): number =>
        seconds > 0 ? Math.ceil(Math.max(MIN_READ_AHEAD_BYTES, seconds * rate) / chunkSize) : -1;
      // The window opens as the page plays (READ_AHEAD_START_SECONDS at first, then
      // READ_AHEAD_OPENING seconds per second played), and after a seek as the buffer
      // fills again (twice what is buffered): a page does not pull its whole read-ahead at
      // once while its first frame, and those of the pages that start beside it (on the same
      // link, or the same machine), need the link and the CPU.
      const byPlay = READ_AHEAD_START_SECONDS + READ_AHEAD_OPENING * this.options.secondsPlayed();
      const opened = Math.max(READ_AHEAD_START_SECONDS, Math.min(byPlay, 2 * buffered));
      const { readAheadSeconds, httpReadAheadSeconds } = this.options;
      const ahead = readAheadSeconds > 0 ? Math.min(readAheadSeconds, opened) : 0;
      this.chunks.setReadAhead(chunks(ahead), chunks(httpReadAheadSeconds));
    }
    // A segment larger than the window: the engine fetches on from what the page copied.
    const copied = this.segmentStart ? this.copyEnd() : 0;
    // Never back, short of a seek: what the window left behind was appended, and moving
    // back over it would have the engine fetch again what it let go of.
    this.setPlayhead(Math.max(this.playhead, Math.floor(Math.max(at, copied) / chunkSize)));
    this.chunks.setWaitingFor(starving ? this.waitingChunks(info) : null);
  }

  /** Points the engine's window at `chunk` (its start). */
  private setPlayhead(chunk: number): void {
    this.playhead = chunk;
    this.chunks.setPlayhead(chunk);
  }

  /** Where the page's copy of `segmentStart` ends (`appendPos` without one). */
  private copyEnd(): number {
    return this.appendPos + (this.segmentStart?.length ?? 0);
  }

  /** Where the verified bytes from `offset` end, with the page's copy of `segmentStart`. */
  private verifiedEnd(offset: number): number {
    const kept = this.copyEnd();
    return this.chunks.verifiedEnd(offset >= this.appendPos && offset < kept ? kept : offset);
  }

  /** Verified bytes `start..end`, with the page's copy of `segmentStart`. */
  private read(start: number, end: number): Uint8Array {
    const copy = this.segmentStart;
    const kept = this.copyEnd();
    if (!copy || start < this.appendPos || start >= kept) return this.chunks.read(start, end);
    const head = copy.subarray(start - this.appendPos, Math.min(end, kept) - this.appendPos);
    if (end <= kept) return head;
    const rest = this.chunks.read(kept, end);
    const bytes = new Uint8Array(head.length + rest.length);
    bytes.set(head);
    bytes.set(rest, head.length);
    return bytes;
  }

  /**
   * Where in the file media time `t` is: from where the segments appended around it
   * start, else in proportion to the duration (or to the rate so far).
   */
  private playingByte(info: InitInfo, t: number, rate: number | null): number {
    const known = this.places.byteAt(t, rate);
    if (known !== null) return known;
    return this.byteAt(t) ?? (rate === null ? this.appendPos : info.initLength + Math.floor(t * rate));
  }

  /**
   * The chunks playback waits for: from the first one not verified after what was
   * appended to where the segment being fetched ends, as far as its headers say (a first
   * segment far bigger than the engine's due span must come whole, from the origin if no
   * peer holds it).
   */
  private waitingChunks(info: InitInfo): { start: number; end: number } {
    const { chunkSize, length } = this.options.content;
    const verified = this.verifiedEnd(this.appendPos);
    const start = Math.floor(verified / chunkSize);
    // Headers are small: what is verified from the segment's start holds them, if any does.
    const head = this.read(this.appendPos, Math.min(verified, this.appendPos + SEGMENT_HEAD_BYTES));
    let segmentEnd: number | null;
    try {
      segmentEnd = firstSegmentEnd(info, head);
    } catch {
      segmentEnd = null; // malformed: appending reports it
    }
    if (segmentEnd === null) return { start, end: start };
    return { start, end: Math.ceil(Math.min(length, this.appendPos + segmentEnd) / chunkSize) };
  }

  private duration(): number | null {
    const d = this.info?.durationSeconds ?? this.video.duration;
    return d !== null && Number.isFinite(d) && d > 0 ? d : null;
  }

  /**
   * The media's bytes per second: the average over the file if its duration is known,
   * else over what was appended so far (null before a second of it is buffered).
   */
  private bytesPerSecond(): number | null {
    const info = this.info;
    if (!info) return null;
    const duration = this.duration();
    if (duration) return (this.options.content.length - info.initLength) / duration;
    // The buffered range that holds the playhead ends where the appends end.
    const appendedTo = this.video.currentTime + bufferedAhead(this.video);
    const bytes = this.appendPos - info.initLength;
    return appendedTo >= 1 && bytes > 0 ? bytes / appendedTo : null;
  }

  /** Where media time `t` lies in the file, estimated in proportion to the duration. */
  private byteAt(t: number): number | null {
    const info = this.info;
    const duration = this.duration();
    if (!info || !duration) return null;
    return info.initLength + Math.floor((t / duration) * (this.options.content.length - info.initLength));
  }

  /** Finds the segment of media time `t` and appends on from there (a seek, or media the browser let go of). */
  private playFrom(info: InitInfo, t: number): void {
    const rate = this.bytesPerSecond();
    // Between segments appended before, where they are; else in proportion.
    const guess = this.places.byteAt(t, null) ?? this.byteAt(t) ?? (rate === null ? info.initLength : info.initLength + Math.floor(t * rate));
    const search = new SeekSearch(t, guess, {
      floor: info.initLength,
      rate,
      probeBytes: SEEK_PROBE,
      align: this.options.content.chunkSize,
    });
    this.seek = { search, probe: SEEK_PROBE };
    this.ended = false;
    this.probe(search.start);
  }

  /** Points the engine at a seek's probe from byte `start` (chunk-aligned, so that it is whole chunks the picker fetches first). */
  private probe(start: number): void {
    if (this.seek) this.seek.probe = SEEK_PROBE;
    this.segmentStart = null;
    this.setPlayhead(Math.floor(start / this.options.content.chunkSize));
    this.sink.scheduleFeed();
  }

  /** Finds the segment to play a pending seek from; true once appending may go on. */
  private continueSeek(): boolean {
    const seek = this.seek;
    const info = this.info;
    if (!seek || !info) return true;
    const { search } = seek;
    const { length, chunkSize } = this.options.content;
    // No further than the engine fetches from the probe's start (under maxMemoryBytes).
    const reach = Math.min(length, this.chunks.wantedEnd());
    if (reach <= search.start && search.start < length) {
      // The engine's window always holds its playhead: this is the window from before the
      // probe moved it (an engine in a Worker reports its own a moment later).
      this.sink.scheduleFeed();
      return false;
    }
    const want = Math.min(reach, search.start + seek.probe);
    const verified = this.chunks.verifiedEnd(search.start);
    if (verified < want) {
      // Playback waits for the probe: an HTTP origin serves it if no peer holds it.
      this.chunks.setWaitingFor({ start: Math.floor(verified / chunkSize), end: Math.ceil(want / chunkSize) });
      return false;
    }
    const bytes = this.chunks.read(search.start, want);
    const at = findSegmentStart(info, bytes, 0);
    const time = at === null ? null : segmentStartTime(info, bytes.subarray(at));
    // No segment start in the probe, or one whose headers it cuts: look at more of it.
    const more = at === null || (time === null && bytes.length - at < SEGMENT_HEAD_BYTES);
    if (more && want < reach) {
      seek.probe *= 2;
      this.sink.scheduleFeed();
      return false;
    }
    let step: SeekStep;
    if (at === null) {
      step = search.noneFound();
    } else {
      if (time !== null) this.places.add(time, search.start + at);
      step = search.found(search.start + at, time);
    }
    if ('probe' in step) {
      this.probe(step.probe);
      return false;
    }
    this.seek = null;
    this.sink.reset();
    this.appendPos = step.from;
    this.segmentStart = null;
    this.openCluster = null;
    // The engine fetches on from the segment found (its window may end inside it), which
    // may lie before the last probe.
    this.setPlayhead(Math.floor(step.from / chunkSize));
    this.followPlayback();
    return true;
  }
}
