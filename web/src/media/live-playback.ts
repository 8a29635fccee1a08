/**
 * A live stream's feed of MediaSource: the initialisation segment and whole segments as
 * `LiveFeed` finds them in the swarm (where it joins, said as `live-joined`), playback
 * placed a latency target behind the buffered edge once media came and held there
 * (`LiveLatency`), and the stream ended once no new signed chunk came for a while.
 */
import { Emitter } from '../emitter.js';
import { PpsppError } from '../errors.js';
import type { PlayerEvents } from '../player.js';
import { parseLiveInit } from './container.js';
import type { Feed, MediaSink } from './feed.js';
import { type LiveChunks, LiveFeed, type LiveJoin } from './live-feed.js';
import { LiveLatency } from './live-latency.js';
import { type VideoLike, bufferedEnd } from './stall-watch.js';

/** The Player's events live playback reports (declared with the Player's others). */
export type LivePlaybackEvents = Pick<PlayerEvents, 'live-edge' | 'behind' | 'caught-up' | 'live-joined' | 'live-ended'>;

/** The part of the video element live playback reads and moves. */
export interface LiveVideo extends VideoLike {
  currentTime: number;
  playbackRate: number;
}

/** The clocks live playback reads. */
export interface LiveClock {
  /** Monotonic milliseconds (`performance.now()`). */
  now(): number;
  /** Unix milliseconds (`Date.now()`), compared with the source's signing times. */
  unixNow(): number;
}

const SYSTEM_CLOCK: LiveClock = { now: () => performance.now(), unixNow: () => Date.now() };

export interface LivePlaybackOptions {
  /** The initialisation segment an older URI's `init=` gives; null: found in the stream. */
  uriInit: Uint8Array | null;
  /** Seconds behind the buffered edge playback is held (`liveLatencySeconds`). */
  latencySeconds: number;
  /** Seconds beyond the target at which playback jumps rather than plays faster (`liveJumpSeconds`). */
  jumpSeconds: number;
  /** Milliseconds without a new signed chunk after which the stream has ended (`liveEndAfterMs`). */
  endAfterMs: number;
  /** Where time is read (the page's clocks by default; tests move their own). */
  clock?: LiveClock;
}

export class LivePlayback extends Emitter<LivePlaybackEvents> implements Feed {
  private readonly stream: LiveFeed;
  private readonly latency: LiveLatency;
  private readonly clock: LiveClock;
  /** The initialisation segment went to MediaSource. */
  private initAppended = false;
  /** Playback was placed at the latency target once media came. */
  private started = false;
  /** When the edge last moved, and the signing time of the newest appended media. */
  private lastEdgeAtMs: number;
  private appendedSignedAtMs: number | null = null;
  /** The join last reported as `live-joined`. */
  private joinReported: LiveJoin | null = null;
  private ended = false;
  private closed = false;

  /** Throws `bad-uri` if the URI's `init=` is not an initialisation segment. */
  constructor(
    chunks: LiveChunks,
    private readonly video: LiveVideo,
    private readonly sink: MediaSink,
    private readonly options: LivePlaybackOptions,
  ) {
    super();
    const init = options.uriInit;
    const info = init ? parseLiveInit(init) : null;
    if (init && !info) throw new PpsppError('bad-uri', 'the live URI\'s init= is not an initialisation segment');
    this.stream = new LiveFeed(chunks, init && info ? { info, bytes: init } : null, options.latencySeconds);
    this.latency = new LiveLatency({ targetSeconds: options.latencySeconds, jumpSeconds: options.jumpSeconds });
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.lastEdgeAtMs = this.clock.now();
  }

  /** The stream's edge moved on (the swarm's `live-edge`). */
  onEdge(edge: { end: number; signedAtMs: number }): void {
    const now = this.clock.now();
    this.lastEdgeAtMs = now;
    this.stream.onEdge(edge.end, edge.signedAtMs, now);
    this.emit('live-edge', { ...edge, latencySeconds: this.latencySeconds() });
    this.sink.scheduleFeed();
  }

  /** Appends what the stream has ready: the initialisation segment first, then whole segments. */
  feed(): void {
    if (this.ended) return;
    const live = this.stream;
    if (!this.initAppended) {
      const init = live.initSegment(this.clock.now());
      if (!init) return;
      this.sink.start(init.info);
      this.initAppended = true;
      this.sink.append(init.bytes);
    }
    if (this.sink.full()) return;
    const bytes = live.take(this.clock.now());
    if (live.lastJoin && live.lastJoin !== this.joinReported) {
      this.joinReported = live.lastJoin;
      this.emit('live-joined', { ...live.lastJoin });
    }
    if (!bytes) return;
    this.sink.append(bytes);
    this.appendedSignedAtMs = live.newestSignedAtMs();
    this.sink.scheduleFeed();
  }

  onTimeUpdate(): void {
    this.holdLatency();
  }

  /** Playback waiting for media fires no `timeupdate`: it is placed from here too. */
  onTick(): void {
    this.holdLatency();
    this.checkEnd();
  }

  onSeeking(): void {
    // Nothing to fetch for a seek: what is buffered is what there is.
  }

  onBrowserEvicted(): boolean {
    // The stream's media, once gone, is not appended again: playback stays at the edge.
    return false;
  }

  close(): void {
    this.closed = true;
  }

  /** How far playback is behind the source, in seconds (null before it starts). */
  private latencySeconds(): number | null {
    const end = bufferedEnd(this.video);
    if (!this.started || end === null || this.appendedSignedAtMs === null) return null;
    return end + (this.clock.unixNow() - this.appendedSignedAtMs) / 1000 - this.video.currentTime;
  }

  /** Places playback at the latency target once media came, then holds it there. */
  private holdLatency(): void {
    const end = bufferedEnd(this.video);
    if (end === null || this.ended) return;
    if (!this.started) {
      this.started = true;
      const start = this.video.buffered.start(0);
      this.video.currentTime = Math.max(start, end - this.options.latencySeconds);
      return;
    }
    const step = this.latency.step(this.video.currentTime, end);
    if (step.seekTo !== null) this.video.currentTime = step.seekTo;
    if (this.video.playbackRate !== step.rate) this.video.playbackRate = step.rate;
    const seconds = this.latencySeconds() ?? end - this.video.currentTime;
    if (step.event?.type === 'behind') this.emit('behind', { latencySeconds: seconds, catchUp: step.event.catchUp });
    else if (step.event?.type === 'caught-up') this.emit('caught-up', { latencySeconds: seconds });
  }

  /** With no new signed chunk for `endAfterMs`, what is here plays out and the stream ends (MediaSource too, once it has media). */
  private checkEnd(): void {
    if (this.ended || this.clock.now() - this.lastEdgeAtMs < this.options.endAfterMs) return;
    this.ended = true;
    this.video.playbackRate = 1;
    void this.sink.idle().then(() => {
      if (this.closed) return;
      // Before an initialisation segment, Chromium fails the element on an end of stream
      // ("endOfStream before demuxer initialization"): the stream ended with nothing to play.
      if (this.initAppended) this.sink.endOfStream();
      this.emit('live-ended', {});
    });
  }
}
