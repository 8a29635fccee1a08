/**
 * `Player.attach(video, uri)`: plays a video from a swarm through MediaSource. Verified
 * bytes are appended in order; the engine's VoD picker fetches just ahead of what is
 * appended; a seek outside the buffer moves both to the media segment (WebM cluster, MP4
 * fragment) that holds the new position.
 *
 * A live URI (`ppspp://live/…`) plays from the stream's edge instead: the initialisation
 * segment and the segments come from the swarm (`media/live-feed.ts`; an older URI's
 * `init=` gives the former too), and playback is held a latency target behind them
 * (`media/live-latency.ts`).
 */
import { Emitter } from './emitter.js';
import { PpsppError, fatal, messageOf } from './errors.js';
import { AppendQueue, type SourceBufferLike } from './media/append-queue.js';
import { type Stall, StallWatch, bufferedAhead, bufferedEnd } from './media/stall-watch.js';
import {
  type InitInfo,
  findSegmentStart,
  firstSegmentEnd,
  parseInit,
  parseLiveInit,
  segmentStartTime,
  wholeSegmentsLength,
} from './media/container.js';
import { LiveFeed, type LiveJoin } from './media/live-feed.js';
import { type ChosenMediaSource, chooseMediaSource, isStreaming, removedRanges } from './media/media-source.js';
import { LiveLatency } from './media/live-latency.js';
import { completeChildrenEnd, openClusterHead } from './media/webm.js';
import { type PlayerOptions, type ResolvedPlayerOptions, resolveHttpOrigin, resolvePlayerOptions } from './options.js';
import { hasWebRtc, requireWebRtc, type SelectedPair, webRtcUnsupported } from './connections.js';
import { isRootHex, uriFor } from './discover.js';
import { engineOptions, signalWithOrigin } from './peer.js';
import { type P2pUnavailable, Swarm, type SwarmEvents, type SwarmStats } from './swarm.js';
import { type ContentInfo, WasmPeer, loadWasm, parseUriLoaded } from './wasm.js';

export interface PlayerEvents extends SwarmEvents {
  /** The first frame is decoded (`loadeddata`), `ms` after `attach()` was called. */
  'first-frame': { ms: number };
  /**
   * Playback stood still and went on again: when, for how long, where, and why (no data
   * yet, a decoder that did not go on with media buffered, or MediaSource refusing an
   * append). Still for `stuckTimeoutMs` with media buffered ahead is also a
   * `playback-stuck` error.
   */
  stall: Stall;
  /**
   * Live: the stream's edge moved on: chunks up to `end` are signed by the source, at
   * `signedAtMs` (Unix ms, its clock). `latencySeconds`: how far playback is behind the
   * source, estimated (null before playback starts).
   */
  'live-edge': { end: number; signedAtMs: number; latencySeconds: number | null };
  /** Live: playback fell behind its latency target; it catches up by playing faster, or by a jump. */
  behind: { latencySeconds: number; catchUp: 'rate' | 'jump' };
  /** Live: playback is back at its latency target. */
  'caught-up': { latencySeconds: number };
  /**
   * Live: where playback starts (and starts again after a gap): at `chunk`, with the edge
   * at `edge`, gone back by the stream's rate (`chunksPerSecond`; null when no rate was
   * known in time and it went back a fixed 256 chunks).
   */
  'live-joined': LiveJoin;
  /** Live: no new signed chunk came for `liveEndAfterMs`: what was here is played, and the stream is ended. */
  'live-ended': Record<string, never>;
}

/**
 * Where the time to the first frame went: milliseconds after `attach()` at which each step
 * of starting playback happened (null: not yet, or not at all, e.g. no signaling server).
 */
export interface StartupTimes {
  /** The engine was ready (the Wasm module loaded and the URI read). */
  engineMs: number | null;
  /** The signaling server welcomed us into the swarm's room. */
  joinedMs: number | null;
  /** The first data channel to a peer opened. */
  firstPeerMs: number | null;
  /** The first chunk passed verification (from a peer, the HTTP origin or saved chunks). */
  firstChunkMs: number | null;
  /** The first bytes were handed to MediaSource. */
  firstAppendMs: number | null;
  /**
   * The video element first held media it could play (`buffered` not empty once an append
   * finished): the first keyframe was in. What follows is decoding it.
   */
  firstBufferedMs: number | null;
  /** The first frame was decoded (`loadeddata`), as `timeToFirstFrameMs`. */
  firstFrameMs: number | null;
}

/** The Player's figures: the swarm's, plus rebuffering. */
export interface PlayerStats extends SwarmStats {
  /** Milliseconds the playhead stood still while it should have played, in ended stalls. */
  rebufferMs: number;
  /** Stalls that ended. */
  stalls: number;
  /** Seconds of media played (the playhead's advance, seeks left out). */
  mediaSecondsPlayed: number;
  /** Times a ManagedMediaSource removed media ahead of the playhead on its own (appended again from held chunks). */
  browserEvictions: number;
  /**
   * Bytes fetched (from seeders, peers and HTTP; not read back from saved chunks) per
   * second of media played: what a view costs the network. 0 before anything played.
   */
  bytesPerSecondPlayed: number;
}

/** How often the playhead is looked at for stalls. */
const STALL_CHECK_MS = 250;

/** Bytes looked at for whole segments in one go (MediaSource parses faster in large
 * appends); a segment larger than this is appended whole all the same. */
const APPEND_STEP = 1 << 20;
/** Bytes waiting in the append queue at most. */
const MAX_PENDING = 4 << 20;
/** Seconds buffered ahead of the playhead at most; more waits for playback. */
const MAX_AHEAD_SECONDS = 60;
/** Seconds buffered ahead below which playback starves: see `followPlayback`. */
const STARVING_SECONDS = 1;
/** The Network Information API's members read here (Chromium has it; Firefox and Safari do not). */
interface NetworkInformationLike {
  saveData?: boolean;
  type?: string;
  addEventListener?(type: 'change', listener: () => void): void;
  removeEventListener?(type: 'change', listener: () => void): void;
}

function networkInformation(): NetworkInformationLike | undefined {
  return typeof navigator === 'undefined' ? undefined : (navigator as { connection?: NetworkInformationLike }).connection;
}

/** True on a connection the browser says is metered or asks to save data on. */
export function meteredConnection(): boolean {
  const c = networkInformation();
  return c?.saveData === true || c?.type === 'cellular';
}

/** A playhead advance between two time updates longer than this is a seek or a jump. */
const MAX_PLAY_STEP_SECONDS = 2;
/** Seconds of read-ahead before the buffer holds any: the window opens from there as it fills. */
const READ_AHEAD_START_SECONDS = 10;
/** The read-ahead bound never cuts a page's fetching below this many bytes ahead (a segment or two). */
const MIN_READ_AHEAD_BYTES = 1 << 20;
/** What is read from a segment's start to find its end in its headers (a moof is a few KiB). */
const SEGMENT_HEAD_BYTES = 64 << 10;
/** Bytes read around a seek estimate to find a segment start. */
const SEEK_PROBE = 512 << 10;

interface Seek {
  target: number;
  /** Where the probe starts (byte offset). */
  start: number;
  /** Bytes looked at from `start`. */
  probe: number;
  /** How far back the estimate was moved, in bytes. */
  back: number;
}

export class Player extends Emitter<PlayerEvents> {
  readonly content: ContentInfo;
  readonly uri: string;
  /** Milliseconds from `attach()` to the first decoded frame, once there is one. */
  timeToFirstFrameMs: number | null = null;
  private readonly startupTimes: StartupTimes = {
    engineMs: null,
    joinedMs: null,
    firstPeerMs: null,
    firstChunkMs: null,
    firstAppendMs: null,
    firstBufferedMs: null,
    firstFrameMs: null,
  };
  private readonly mediaSource: MediaSource;
  private readonly objectUrl: string;
  private info: InitInfo | null = null;
  private queue: AppendQueue | null = null;
  private appendPos = 0;
  /** Times a ManagedMediaSource removed media ahead of the playhead (appended again). */
  private browserEvictions = 0;
  /** The upload setting (`upload` option, `setUpload`). */
  private upload: boolean | 'auto';
  /** Media seconds played, and the playhead at the last time update (`countPlayed`). */
  private mediaSecondsPlayed = 0;
  private lastTime = 0;
  /** Verified bytes run from `appendPos` to here without a whole segment in them (a
   * segment larger than the read-ahead window): the engine fetches on from here. */
  private segmentWait: number | null = null;
  /** A WebM Cluster appended in part (as an unknown-size Cluster): where it ends. */
  private openCluster: { end: number } | null = null;
  private seek: Seek | null = null;
  private feedQueued = false;
  private ended = false;
  /** A live stream's feed and latency control (null: a file). */
  private readonly live: LiveFeed | null = null;
  private readonly latency: LiveLatency | null = null;
  /** Live: playback was placed at the latency target once media came. */
  private liveStarted = false;
  /** Live: when the edge last moved, and the signing time of the newest appended media. */
  private lastEdgeAtMs = performance.now();
  private appendedSignedAtMs: number | null = null;
  /** The live join last reported as `live-joined`. */
  private joinReported: LiveJoin | null = null;
  private destroyed = false;
  private failed = false;
  private readonly cleanup: (() => void)[] = [];
  private readonly stalls: StallWatch;
  /**
   * Events emitted before `attach()` resolved, when nobody could listen yet (an HTTP
   * origin answers fast): delivered in order in a task right after it resolves, so the
   * caller's listeners, added after `await`, get them.
   */
  private held: [keyof PlayerEvents, unknown][] | null = [];

  private constructor(
    private readonly video: HTMLVideoElement,
    private readonly swarm: Swarm,
    private readonly options: ResolvedPlayerOptions,
    private readonly attachedAt: number,
    private readonly mse: ChosenMediaSource,
  ) {
    super();
    this.content = swarm.content;
    this.uri = swarm.uri;
    if (this.content.live) {
      // The older URI form gives the initialisation segment; the stream carries it too.
      const init = this.content.live.init;
      const info = init ? parseLiveInit(init) : null;
      if (init && !info) throw new PpsppError('bad-uri', 'the live URI\'s init= is not an initialisation segment');
      this.live = new LiveFeed(swarm, init && info ? { info, bytes: init } : null, options.liveLatencySeconds);
      this.latency = new LiveLatency(options.liveLatencySeconds, options.liveJumpSeconds);
    }
    if (!this.live) {
      // Until the bit rate is known (the duration read, or a second appended), the
      // read-ahead is bounded in bytes: a fast origin would otherwise send much of the
      // video before its first frame. What playback waits for is served all the same.
      const chunks = (bytes: number): number => Math.ceil(bytes / this.content.chunkSize);
      const first = Math.max(options.readAheadBytes, MIN_READ_AHEAD_BYTES);
      swarm.setReadAhead(options.readAheadSeconds > 0 ? chunks(first) : -1, chunks(MIN_READ_AHEAD_BYTES));
    }
    this.upload = options.upload;
    this.applyUpload();
    const connection = networkInformation();
    if (connection?.addEventListener) {
      const changed = (): void => {
        if (this.upload === 'auto') this.applyUpload();
      };
      connection.addEventListener('change', changed);
      this.cleanup.push(() => connection.removeEventListener?.('change', changed));
    }
    this.mediaSource = new mse.Class();
    this.objectUrl = URL.createObjectURL(this.mediaSource);
    // Comes while the swarm starts (OPFS unavailable): held until attach() resolves.
    swarm.on('storage-fallback', (f) => this.emit('storage-fallback', f));
    this.stalls = new StallWatch(video, {
      stuckAfterMs: options.stuckTimeoutMs,
      onStall: (stall) => this.emit('stall', stall),
      onStuck: (stall) =>
        this.emit(
          'error',
          new PpsppError(
            'playback-stuck',
            `playback stopped at ${stall.position.toFixed(2)} s for ${(stall.durationMs / 1000).toFixed(1)} s (${stall.cause}${stall.noDataMs > 0 ? `; the media came after ${(stall.noDataMs / 1000).toFixed(1)} s` : ''}) with ${bufferedAhead(video, stall.position).toFixed(1)} s buffered ahead`,
          ),
        ),
    });
  }

  /**
   * Plays `uri` in `video` (a swarm URI, or just its root hash in hex with the `signal`
   * option set, as for `Peer.fetch`). Rejects with a {@link PpsppError} (always fatal):
   * `bad-option`, `bad-uri`, `mse-unsupported`, `webrtc-unsupported`, `wasm-load-failed`,
   * `signaling-unreachable`, `signaling-error` (the server refused to join) or `no-peers`
   * (a bare root that no peer could describe). Later trouble comes as `error` events, whose
   * `fatal` says whether playback can go on.
   */
  static async attach(video: HTMLVideoElement, uri: string, options: PlayerOptions = {}): Promise<Player> {
    const attachedAt = performance.now();
    const resolved = resolvePlayerOptions(options);
    const mse = chooseMediaSource(resolved.mediaSource);
    if (!(video instanceof HTMLVideoElement)) {
      throw new PpsppError('bad-option', 'Player.attach needs an HTMLVideoElement');
    }
    if (resolved.mimeType !== undefined && !mse.Class.isTypeSupported(resolved.mimeType)) {
      throw new PpsppError('mse-unsupported', `this browser cannot play ${resolved.mimeType} through MediaSource`);
    }
    await loadWasm(resolved.wasm);
    // A bare root is described by peers, over WebRTC.
    if (isRootHex(uri)) requireWebRtc();
    uri = await uriFor(uri, resolved);
    const content = parseUriLoaded(uri);
    const origin = resolveHttpOrigin(resolved.httpOrigin, content);
    let signal = signalWithOrigin(resolved, content, origin);
    // HTTP-only playback needs no WebRTC; with an origin, a browser without it plays from HTTP.
    let noP2p: P2pUnavailable | null = null;
    if (!resolved.p2p && origin === null) {
      throw new PpsppError('bad-option', 'p2p: false (HTTP until enableP2P) needs an HTTP origin: the URI has no http= and tree= parameters and no httpOrigin option was given');
    }
    // P2P for later: WebRTC is looked for when it is enabled.
    const p2pLater = !resolved.p2p && signal !== null;
    if (signal !== null && origin !== null && !p2pLater && !hasWebRtc()) {
      signal = null;
      noP2p = webRtcUnsupported();
    }
    if (signal !== null && !p2pLater) requireWebRtc();
    const window = Math.max(16, Math.ceil(resolved.readAheadBytes / content.chunkSize));
    // A live stream's discard window bounds what is held, and nothing of it is saved.
    const live = content.live !== undefined;
    let engine: WasmPeer;
    try {
      engine = WasmPeer.fetcher(
        uri,
        engineOptions(resolved, { vodWindow: window, urgentPriority: resolved.urgentPriority, maxHeldBytes: resolved.maxMemoryBytes }),
        performance.now(),
      );
    } catch (err) {
      throw new PpsppError('bad-uri', messageOf(err), { cause: err });
    }
    const swarm = new Swarm(engine, content, {
      signal,
      options: resolved,
      seeding: false,
      origin,
      storageQuota: resolved.storage === 'opfs' && !live ? resolved.storageQuotaBytes : null,
      p2pLater,
    });
    let player: Player;
    try {
      player = new Player(video, swarm, resolved, attachedAt, mse);
    } catch (err) {
      swarm.close();
      throw err;
    }
    player.mark('engineMs');
    // Held like every event until attach resolves.
    if (noP2p) player.emit('p2p-unavailable', noP2p);
    void swarm.joined.then(() => player.mark('joinedMs'));
    try {
      await swarm.start();
      await player.open();
    } catch (err) {
      player.destroy();
      throw err;
    }
    setTimeout(() => player.releaseHeld(), 0);
    return player;
  }

  protected override emit<K extends keyof PlayerEvents>(type: K, payload: PlayerEvents[K]): void {
    if (this.held) this.held.push([type, payload]);
    else super.emit(type, payload);
  }

  /** Where the time to the first frame went (see {@link StartupTimes}). */
  get startup(): StartupTimes {
    return { ...this.startupTimes };
  }

  private mark(step: keyof StartupTimes): void {
    this.startupTimes[step] ??= performance.now() - this.attachedAt;
  }

  private releaseHeld(): void {
    const held = this.held ?? [];
    this.held = null;
    if (this.destroyed) return;
    for (const [type, payload] of held) super.emit(type, payload as never);
  }

  private async open(): Promise<void> {
    this.swarm.on('live-edge', (e) => {
      this.lastEdgeAtMs = performance.now();
      this.live?.onEdge(e.end, e.signedAtMs, performance.now());
      this.emit('live-edge', { ...e, latencySeconds: this.liveLatencySeconds() });
      this.scheduleFeed();
    });
    const forward: (keyof SwarmEvents)[] = [
      'peer-joined', 'peer-left', 'chunk-rejected', 'origin-corrupt', 'progress', 'complete', 'stats', 'p2p-unavailable',
    ];
    for (const type of forward) this.swarm.on(type, (payload) => this.emit(type, payload as never));
    // The swarm's fatal errors (a live source's restart, storage failed) end playback as
    // the Player's own do; the rest are news. (The swarm takes a close from inside its
    // event handling: it stops reading the engine there.)
    this.swarm.on('error', (err) => (err.fatal ? this.fail(err) : this.emit('error', err)));
    // What was appended cannot go on into a new run of the source.
    this.swarm.on('live-restarted', () =>
      this.emit('error', new PpsppError('media-error', 'the live stream restarted (a new run of its source): attach again to play it')),
    );
    this.swarm.on('peer-joined', () => this.mark('firstPeerMs'));
    this.swarm.on('chunk-verified', (e) => {
      this.mark('firstChunkMs');
      this.emit('chunk-verified', e);
      this.scheduleFeed();
    });
    this.listen(this.video, 'seeking', () => this.onSeeking());
    for (const type of ['waiting', 'stalled', 'playing', 'pause', 'ended']) {
      this.listen(this.video, type, () => this.stalls.tick(performance.now()));
    }
    const watch = setInterval(() => {
      this.stalls.tick(performance.now());
      if (this.live) {
        // Playback waiting for media fires no `timeupdate`: it is placed from here.
        this.holdLatency();
        this.checkLiveEnd();
      }
    }, STALL_CHECK_MS);
    this.cleanup.push(() => clearInterval(watch));
    this.listen(this.video, 'timeupdate', () => {
      this.countPlayed();
      this.followPlayback();
      this.scheduleFeed();
    });
    this.listen(this.video, 'loadeddata', () => {
      if (this.timeToFirstFrameMs === null) {
        this.timeToFirstFrameMs = performance.now() - this.attachedAt;
        this.startupTimes.firstFrameMs = this.timeToFirstFrameMs;
        this.emit('first-frame', { ms: this.timeToFirstFrameMs });
      }
    });
    this.listen(this.video, 'error', () => {
      const e = this.video.error;
      if (e) this.fail(new PpsppError('media-error', `the video element failed: ${e.message || `code ${e.code}`}`));
    });
    if (this.mse.kind === 'managed') {
      // Safari plays a ManagedMediaSource only with remote playback (AirPlay) off, or with
      // an AirPlay source beside it; the swarm's bytes cannot go to a TV.
      (this.video as { disableRemotePlayback?: boolean }).disableRemotePlayback = true;
      // The browser says when it wants media: appends wait for startstreaming.
      this.listen(this.mediaSource, 'startstreaming', () => {
        this.queue?.resume();
        this.scheduleFeed();
      });
    }
    const opened = new Promise<void>((resolve) => this.listen(this.mediaSource, 'sourceopen', () => resolve()));
    this.video.src = this.objectUrl;
    await opened;
    this.scheduleFeed();
  }

  private listen(target: EventTarget, type: string, listener: () => void): void {
    target.addEventListener(type, listener);
    this.cleanup.push(() => target.removeEventListener(type, listener));
  }

  /**
   * Stops feeding MediaSource: playback cannot go on, so the error is fatal. The swarm is
   * left too: nothing more is fetched for a video that cannot play (stats() and have()
   * keep their last figures; destroy() still releases the video element).
   */
  private fail(err: PpsppError): void {
    if (this.failed) return;
    this.failed = true;
    this.emit('error', fatal(err) as PpsppError);
    this.swarm.close();
  }

  private scheduleFeed(): void {
    if (this.feedQueued || this.destroyed || this.failed) return;
    this.feedQueued = true;
    setTimeout(() => {
      this.feedQueued = false;
      try {
        this.feed();
      } catch (err) {
        this.fail(err instanceof PpsppError ? err : new PpsppError('media-error', messageOf(err), { cause: err }));
      }
    }, 10);
  }

  private feed(): void {
    if (this.destroyed || this.failed || this.mediaSource.readyState === 'closed') return;
    if (this.live) {
      this.feedLive(this.live);
      return;
    }
    if (!this.info && !this.startMedia()) return;
    if (this.seek && !this.continueSeek()) return;
    const queue = this.queue;
    if (!queue) return;
    const { length } = this.content;
    if (this.appendPos < length) {
      if (queue.pendingBytes >= MAX_PENDING || bufferedAhead(this.video) > MAX_AHEAD_SECONDS) return;
      const next = this.nextAppend();
      // Nothing to append yet: where playback waits moved on with what was verified.
      if (!next) this.followPlayback();
      if (next) {
        this.mark('firstAppendMs');
        queue.push(next.bytes);
        this.appendPos = next.to;
        this.segmentWait = null;
        this.followPlayback();
        this.scheduleFeed();
      }
    } else if (!this.ended) {
      this.ended = true;
      void queue.idle().then(() => {
        if (this.appendPos >= length && !this.seek && this.mediaSource.readyState === 'open') {
          try {
            this.mediaSource.endOfStream();
          } catch {
            this.ended = false; // a SourceBuffer was still updating: try again on the next feed
          }
        }
      });
    }
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
    const verified = this.swarm.verifiedEnd(from);
    if (this.openCluster) {
      const limit = this.openCluster.end;
      const bytes = this.swarm.read(from, Math.min(verified, limit));
      const end = verified >= limit ? bytes.length : completeChildrenEnd(bytes, 0, bytes.length);
      if (verified >= limit) this.openCluster = null;
      return end > 0 ? { bytes: bytes.subarray(0, end), to: from + end } : null;
    }
    const whole = this.wholeSegmentsEnd();
    if (whole > from) return { bytes: this.swarm.read(from, whole), to: whole };
    if (info.kind !== 'webm' || from < info.initLength || verified <= from) return null;
    const bytes = this.swarm.read(from, Math.min(verified, from + APPEND_STEP));
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
   * With no whole segment yet while the verified run already fills half the read-ahead
   * window, the engine is told to fetch on from its end.
   */
  private wholeSegmentsEnd(): number {
    const info = this.info;
    if (!info) return this.appendPos;
    if (this.appendPos === 0) return info.initLength;
    const { length } = this.content;
    const verified = this.swarm.verifiedEnd(this.appendPos);
    if (verified >= length) return length;
    let end = Math.min(verified, this.appendPos + APPEND_STEP);
    let whole = wholeSegmentsLength(info, this.swarm.read(this.appendPos, end));
    if (whole === 0 && end < verified) {
      end = verified;
      whole = wholeSegmentsLength(info, this.swarm.read(this.appendPos, end));
    }
    if (whole === 0 && verified - this.appendPos >= this.options.readAheadBytes / 2) {
      this.segmentWait = verified;
      this.swarm.setPlayhead(Math.floor(verified / this.content.chunkSize));
    }
    return this.appendPos + whole;
  }

  /**
   * Moves the engine's VoD window to what playback needs next: the byte position of the
   * current time (proportional estimate; no sooner than what is still to be appended).
   * Following the append position instead would make everything "due" as fast as it
   * arrives, and seeders would be asked for all of it.
   *
   * While playback starves (less than {@link STARVING_SECONDS} buffered ahead: before the
   * first frame, or a stall coming), the engine is also told where it waits: the first
   * chunk not verified after what was appended. An HTTP origin serves those chunks if no
   * peer holds them, however far the estimate is (a first keyframe larger than the due
   * span, say).
   */
  private followPlayback(): void {
    if (this.live) {
      this.holdLatency();
      return;
    }
    const info = this.info;
    if (!info || this.seek) return;
    const t = this.video.currentTime;
    const rate = this.bytesPerSecond();
    const playing = this.byteAt(t) ?? (rate === null ? null : info.initLength + Math.floor(t * rate));
    const at = playing === null ? this.appendPos : Math.min(this.appendPos, playing);
    if (rate !== null) {
      // In chunks, at least MIN_READ_AHEAD_BYTES; -1 (0 seconds): no bound.
      const chunks = (seconds: number): number =>
        seconds > 0 ? Math.ceil(Math.max(MIN_READ_AHEAD_BYTES, seconds * rate) / this.content.chunkSize) : -1;
      // The window opens as the buffer fills (twice what is buffered, READ_AHEAD_START_SECONDS
      // at first): a page starting next to others does not pull its whole read-ahead at once
      // while its first frame and theirs need the link and the CPU.
      const opened = Math.max(READ_AHEAD_START_SECONDS, 2 * bufferedAhead(this.video));
      const { readAheadSeconds, httpReadAheadSeconds } = this.options;
      const ahead = readAheadSeconds > 0 ? Math.min(readAheadSeconds, opened) : 0;
      this.swarm.setReadAhead(chunks(ahead), chunks(httpReadAheadSeconds));
    }
    this.swarm.setPlayhead(Math.floor(Math.max(at, this.segmentWait ?? 0) / this.content.chunkSize));
    const starving = bufferedAhead(this.video) < STARVING_SECONDS;
    this.swarm.setWaitingFor(starving ? this.waitingChunks(info) : null);
  }

  /**
   * The chunks playback waits for: from the first one not verified after what was
   * appended to where the segment being fetched ends, as far as its headers say (a first
   * segment far bigger than the engine's due span must come whole, from the origin if no
   * peer holds it).
   */
  private waitingChunks(info: InitInfo): { start: number; end: number } {
    const { chunkSize, length } = this.content;
    const verified = this.swarm.verifiedEnd(this.appendPos);
    const start = Math.floor(verified / chunkSize);
    // Headers are small: what is verified from the segment's start holds them, if any does.
    const head = this.swarm.read(this.appendPos, Math.min(verified, this.appendPos + SEGMENT_HEAD_BYTES));
    let segmentEnd: number | null;
    try {
      segmentEnd = firstSegmentEnd(info, head);
    } catch {
      segmentEnd = null; // malformed: appending reports it
    }
    if (segmentEnd === null) return { start, end: start };
    return { start, end: Math.ceil(Math.min(length, this.appendPos + segmentEnd) / chunkSize) };
  }

  /**
   * The media's bytes per second: the average over the file if its duration is known,
   * else over what was appended so far (null before a second of it is buffered).
   */
  private bytesPerSecond(): number | null {
    const info = this.info;
    if (!info) return null;
    const duration = this.duration();
    if (duration) return (this.content.length - info.initLength) / duration;
    // The buffered range that holds the playhead ends where the appends end.
    const appendedTo = this.video.currentTime + bufferedAhead(this.video);
    const bytes = this.appendPos - info.initLength;
    return appendedTo >= 1 && bytes > 0 ? bytes / appendedTo : null;
  }

  /** Adds the playhead's advance since the last time update (a jump is a seek, not play). */
  private countPlayed(): void {
    const t = this.video.currentTime;
    const step = t - this.lastTime;
    if (step > 0 && step < MAX_PLAY_STEP_SECONDS && !this.video.seeking) this.mediaSecondsPlayed += step;
    this.lastTime = t;
  }

  /** Where media time `t` lies in the file, estimated in proportion to the duration. */
  private byteAt(t: number): number | null {
    const info = this.info;
    const duration = this.duration();
    if (!info || !duration) return null;
    return info.initLength + Math.floor((t / duration) * (this.content.length - info.initLength));
  }

  /** Appends what the live stream has ready: the init segment first, then whole segments. */
  private feedLive(live: LiveFeed): void {
    if (this.ended) return;
    if (!this.info) {
      const init = live.initSegment(performance.now());
      if (!init || !this.startMedia(init.info)) return;
      this.mark('firstAppendMs');
      this.queue?.push(init.bytes);
    }
    const queue = this.queue;
    if (!queue || queue.pendingBytes >= MAX_PENDING) return;
    const bytes = live.take(performance.now());
    if (live.lastJoin && live.lastJoin !== this.joinReported) {
      this.joinReported = live.lastJoin;
      this.emit('live-joined', { ...live.lastJoin });
    }
    if (!bytes) return;
    queue.push(bytes);
    this.appendedSignedAtMs = live.newestSignedAtMs();
    this.scheduleFeed();
  }

  /** How far playback is behind the source, in seconds (null before it starts). */
  private liveLatencySeconds(): number | null {
    const end = bufferedEnd(this.video);
    if (!this.liveStarted || end === null || this.appendedSignedAtMs === null) return null;
    return end + (Date.now() - this.appendedSignedAtMs) / 1000 - this.video.currentTime;
  }

  /** Live: places playback at the latency target once media came, then holds it there. */
  private holdLatency(): void {
    const latency = this.latency;
    const end = bufferedEnd(this.video);
    if (!latency || end === null || this.ended) return;
    if (!this.liveStarted) {
      this.liveStarted = true;
      const start = this.video.buffered.start(0);
      this.video.currentTime = Math.max(start, end - this.options.liveLatencySeconds);
      return;
    }
    const step = latency.step(this.video.currentTime, end);
    if (step.seekTo !== null) this.video.currentTime = step.seekTo;
    if (this.video.playbackRate !== step.rate) this.video.playbackRate = step.rate;
    const seconds = this.liveLatencySeconds() ?? end - this.video.currentTime;
    if (step.event?.type === 'behind') this.emit('behind', { latencySeconds: seconds, catchUp: step.event.catchUp });
    else if (step.event?.type === 'caught-up') this.emit('caught-up', { latencySeconds: seconds });
  }

  /** Live: with no new signed chunk for `liveEndAfterMs`, what is here plays out and the stream ends. */
  private checkLiveEnd(): void {
    if (this.ended || performance.now() - this.lastEdgeAtMs < this.options.liveEndAfterMs) return;
    const queue = this.queue;
    this.ended = true;
    this.video.playbackRate = 1;
    void (queue ? queue.idle() : Promise.resolve()).then(() => {
      if (this.destroyed) return;
      if (this.mediaSource.readyState === 'open') {
        try {
          this.mediaSource.endOfStream();
        } catch {
          // A SourceBuffer still updating: the stream has ended all the same.
        }
      }
      this.emit('live-ended', {});
    });
  }

  /** Parses the initialization segment once it is here and creates the SourceBuffer. */
  private startMedia(parsed?: InitInfo | null): boolean {
    let info: InitInfo | null;
    if (parsed !== undefined) {
      info = parsed;
    } else {
      const avail = this.swarm.verifiedEnd(0);
      if (avail === 0) return false;
      info = parseInit(this.swarm.read(0, avail));
      if (!info && avail >= this.content.length) {
        throw new PpsppError('media-error', 'the content has no complete initialization segment');
      }
    }
    if (!info) return false;
    const mime = this.options.mimeType ?? info.mimeType;
    if (!this.mse.Class.isTypeSupported(mime)) {
      throw new PpsppError('mse-unsupported', `this browser cannot play ${mime} through MediaSource`);
    }
    const sb: SourceBufferLike = this.mediaSource.addSourceBuffer(mime);
    if (this.mse.kind === 'managed') {
      // The browser evicts on its own: media it removed ahead of the playhead is appended
      // again from what the engine holds.
      const evicted = (e: Event): void => this.onBrowserEvicted(removedRanges(e));
      (sb as unknown as EventTarget).addEventListener('bufferedchange', evicted);
      this.cleanup.push(() => (sb as unknown as EventTarget).removeEventListener('bufferedchange', evicted));
    }
    this.queue = new AppendQueue(sb, () => this.video.currentTime, {
      mayAppend: () => isStreaming(this.mediaSource),
      keepBehindSeconds: this.options.keepBehindSeconds,
      // What lies beyond the read-ahead is left from before a seek back.
      keepAheadSeconds: MAX_AHEAD_SECONDS * 2,
      // A seek back after the end: the ended source reopens on the next append.
      sourceOpen: () => this.mediaSource.readyState === 'open',
      onError: (err) => {
        this.stalls.appendRefused();
        this.fail(new PpsppError('media-error', `MediaSource append failed: ${err.message}`, { cause: err }));
      },
    });
    // The first append after which the element holds playable media: the first keyframe is in.
    const buffered = (): void => {
      if (this.video.buffered.length === 0) return;
      this.mark('firstBufferedMs');
      sb.removeEventListener('updateend', buffered);
    };
    sb.addEventListener('updateend', buffered);
    this.cleanup.push(() => sb.removeEventListener('updateend', buffered));
    // A live stream has no duration (the header's, if any, is of nothing yet).
    if (!this.live && info.durationSeconds !== null && Number.isFinite(info.durationSeconds)) {
      this.mediaSource.duration = info.durationSeconds;
    }
    this.info = info;
    return true;
  }

  private duration(): number | null {
    const d = this.info?.durationSeconds ?? this.video.duration;
    return d !== null && Number.isFinite(d) && d > 0 ? d : null;
  }

  private onSeeking(): void {
    const info = this.info;
    // A live stream has nothing to fetch for a seek: what is buffered is what there is.
    if (!info || this.destroyed || this.live) return;
    const t = this.video.currentTime;
    const b = this.video.buffered;
    for (let i = 0; i < b.length; i++) if (b.start(i) <= t && t < b.end(i) - 0.1) return;
    this.playFrom(info, t);
  }

  /** Finds the segment of media time `t` and appends on from there (a seek, or media the browser let go of). */
  private playFrom(info: InitInfo, t: number): void {
    const back = Math.max(SEEK_PROBE, Math.floor((this.content.length - info.initLength) * 0.02));
    const rate = this.bytesPerSecond();
    const estimate = this.byteAt(t) ?? (rate === null ? null : info.initLength + Math.floor(t * rate));
    this.beginSeek({ target: t, start: estimate ?? info.initLength, probe: SEEK_PROBE, back });
  }

  /**
   * A ManagedMediaSource removed `ranges` on its own (memory pressure). Media removed
   * behind the playhead is nothing to play; removed ahead of it, it is appended again
   * from where it went, from the chunks the engine holds (nothing is fetched again while
   * they are within the read-ahead).
   */
  private onBrowserEvicted(ranges: [number, number][]): void {
    const info = this.info;
    if (!info || this.destroyed || this.live || this.seek) return;
    const t = this.video.currentTime;
    const ahead = ranges.filter(([, end]) => end > t + 0.1);
    if (ahead.length === 0) return;
    const from = Math.max(t, Math.min(...ahead.map(([start]) => start)));
    this.browserEvictions += 1;
    this.queue?.reset();
    this.playFrom(info, from);
  }

  private beginSeek(seek: Seek): void {
    const info = this.info;
    if (!info) return;
    const { chunkSize } = this.content;
    const start = Math.max(info.initLength, seek.start - seek.back);
    // Chunk-aligned so that the probe is whole chunks the picker fetches first.
    seek.start = Math.floor(start / chunkSize) * chunkSize;
    this.seek = seek;
    this.ended = false;
    this.swarm.setPlayhead(Math.floor(seek.start / chunkSize));
    this.scheduleFeed();
  }

  /** Finds the segment to play a pending seek from; true once appending may go on. */
  private continueSeek(): boolean {
    const seek = this.seek;
    const info = this.info;
    if (!seek || !info) return true;
    const { length } = this.content;
    // No further than the engine fetches from the seek's start (under maxMemoryBytes).
    const reach = Math.min(length, this.swarm.wantedEnd());
    const want = Math.min(reach, seek.start + seek.probe);
    const verified = this.swarm.verifiedEnd(seek.start);
    if (verified < want) {
      // Playback waits for the probe: an HTTP origin serves it if no peer holds it.
      const { chunkSize } = this.content;
      this.swarm.setWaitingFor({ start: Math.floor(verified / chunkSize), end: Math.ceil(want / chunkSize) });
      return false;
    }
    const bytes = this.swarm.read(seek.start, want);
    const at = findSegmentStart(info, bytes, 0);
    if (at === null) {
      if (want >= reach) {
        // No segment start from the estimate to the end or as far as the engine fetches
        // from it: look further back.
        this.beginSeek({ ...seek, back: seek.back * 2, start: seek.start + seek.back });
      } else {
        seek.probe *= 2;
        this.scheduleFeed();
      }
      return false;
    }
    const time = segmentStartTime(info, bytes.subarray(at));
    if (time !== null && time > seek.target + 0.05 && seek.start > info.initLength) {
      // The segment starts after the target: step back further and look again.
      this.beginSeek({ ...seek, start: seek.start + seek.back, back: seek.back * 2 });
      return false;
    }
    this.seek = null;
    this.queue?.reset();
    this.appendPos = seek.start + at;
    this.segmentWait = null;
    this.openCluster = null;
    // The engine fetches on from the segment found (its window may end inside it).
    this.followPlayback();
    return true;
  }

  /** Current figures of the swarm, and of rebuffering. */
  stats(): PlayerStats {
    const swarm = this.swarm.stats();
    const fetched = swarm.bytesFromSeeders + swarm.bytesFromPeers + swarm.bytesFromHttp;
    const played = this.mediaSecondsPlayed;
    return {
      ...swarm,
      rebufferMs: this.stalls.rebufferMs,
      stalls: this.stalls.stalls,
      mediaSecondsPlayed: played,
      browserEvictions: this.browserEvictions,
      bytesPerSecondPlayed: played > 0 ? fetched / played : 0,
    };
  }

  /** Verified chunk ranges. */
  have(): [number, number][] {
    return this.swarm.haveRanges();
  }

  /** Selected ICE pairs of the connections (tests prove traffic stays on loopback). */
  selectedPairs(): Promise<SelectedPair[]> {
    return this.swarm.selectedPairs();
  }

  /** Verified bytes `start..end` of the content (throws if some are missing). */
  read(start: number, end: number): Uint8Array {
    return this.swarm.read(start, end);
  }

  /** Stops playing from the swarm, leaves it and releases the video element. */
  /**
   * Joins the swarm after all, for a Player attached with `p2p: false` (once the viewer
   * agreed, say): peers are met through the signaling server from now on, and playback
   * goes on meanwhile. Does nothing if P2P is on already; with no signaling server (none
   * in the options or the URI) the Player stays HTTP only. Without WebRTC it says so with
   * a `p2p-unavailable` event.
   */
  enableP2P(): void {
    if (this.destroyed || this.failed) return;
    this.swarm.enableP2p();
  }

  /**
   * Whether the page uploads to other viewers: `true`, `false`, or `'auto'` (not on a
   * metered connection or one that asks to save data); see the `upload` option.
   */
  setUpload(upload: boolean | 'auto'): void {
    if (upload !== true && upload !== false && upload !== 'auto') {
      throw new PpsppError('bad-option', `setUpload takes true, false or 'auto', not ${JSON.stringify(upload)}`);
    }
    this.upload = upload;
    this.applyUpload();
  }

  /** The MediaSource playback goes through: `'standard'`, or `'managed'` (ManagedMediaSource). */
  get mediaSourceKind(): 'standard' | 'managed' {
    return this.mse.kind;
  }

  /** Whether the page uploads now (the `upload` setting, 'auto' read for this connection). */
  get uploading(): boolean {
    return this.upload === 'auto' ? !meteredConnection() : this.upload;
  }

  private applyUpload(): void {
    if (!this.destroyed) this.swarm.setUploading(this.uploading);
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const undo of this.cleanup) undo();
    this.queue?.close();
    this.swarm.close();
    URL.revokeObjectURL(this.objectUrl);
    if (this.video.src === this.objectUrl) {
      this.video.removeAttribute('src');
      this.video.load();
    }
    this.removeAllListeners();
  }
}
