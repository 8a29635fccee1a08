/**
 * `Player.attach(video, uri)`: plays a video from a swarm through MediaSource. The Player
 * owns MediaSource, the element's events, the swarm's events, stalls and the figures; a
 * feed decides what is appended and where playback and the engine go (`media/feed.ts`):
 * for a file, `media/vod-feed.ts` (verified bytes in order, the engine's window just
 * ahead of playback, seeks); for a live URI (`ppspp://live/…`), `media/live-playback.ts`
 * (the join at the stream's edge, the latency target, the stream's end).
 */
import { Emitter } from './emitter.js';
import { PpsppError, fatal, messageOf } from './errors.js';
import { AppendQueue, type SourceBufferLike } from './media/append-queue.js';
import { type Stall, StallWatch, bufferedAhead } from './media/stall-watch.js';
import type { InitInfo } from './media/container.js';
import type { Feed, MediaSink } from './media/feed.js';
import type { LiveJoin } from './media/live-feed.js';
import { LivePlayback, type LivePlaybackEvents } from './media/live-playback.js';
import { type ChosenMediaSource, chooseMediaSource, isStreaming, removedRanges } from './media/media-source.js';
import { MAX_AHEAD_SECONDS, VodFeed } from './media/vod-feed.js';
import { type PlayerOptions, type ResolvedPlayerOptions, resolveHttpOrigin, resolvePlayerOptions } from './options.js';
import { hasWebRtc, requireWebRtc, type SelectedPair, webRtcUnsupported } from './connections.js';
import { isRootHex, uriFor } from './discover.js';
import { beginEngine, engineWorker } from './engine-start.js';
import { signalWithOrigin } from './peer.js';
import { type P2pUnavailable, Swarm, type SwarmEvents, type SwarmStats } from './swarm.js';
import { type ContentInfo, loadWasm, parseUriLoaded } from './wasm.js';
import { WorkerEngine } from './worker-engine.js';

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

/** How often the playhead is looked at for stalls (and, live, for the latency and the stream's end). */
const STALL_CHECK_MS = 250;

/** Bytes waiting in the append queue at most. */
const MAX_PENDING = 4 << 20;
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

/** The Player's events a live stream's playback reports. */
const LIVE_EVENTS: (keyof LivePlaybackEvents)[] = ['live-edge', 'behind', 'caught-up', 'live-joined', 'live-ended'];

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
  private queue: AppendQueue | null = null;
  /** Times a ManagedMediaSource removed media ahead of the playhead (appended again). */
  private browserEvictions = 0;
  /** The upload setting (`upload` option, `setUpload`). */
  private upload: boolean | 'auto';
  /** Media seconds played, and the playhead at the last time update (`countPlayed`). */
  private mediaSecondsPlayed = 0;
  private lastTime = 0;
  /** What decides the appends: a file's feed, or a live stream's playback. */
  private readonly feeding: Feed;
  /** The live stream's playback (null: a file). */
  private readonly live: LivePlayback | null = null;
  private feedQueued = false;
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
    const sink = this.mediaSink();
    if (this.content.live) {
      // The older URI form gives the initialisation segment; the stream carries it too.
      const live = new LivePlayback(swarm, video, sink, {
        uriInit: this.content.live.init ?? null,
        latencySeconds: options.liveLatencySeconds,
        jumpSeconds: options.liveJumpSeconds,
        endAfterMs: options.liveEndAfterMs,
      });
      for (const type of LIVE_EVENTS) live.on(type, (payload) => this.emit(type, payload as never));
      this.live = live;
      this.feeding = live;
    } else {
      const { readAheadBytes, readAheadSeconds, httpReadAheadSeconds } = options;
      this.feeding = new VodFeed(swarm, video, sink, {
        content: this.content,
        readAheadBytes,
        readAheadSeconds,
        httpReadAheadSeconds,
        secondsPlayed: () => this.mediaSecondsPlayed,
      });
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
    swarm.setStallSource(() => ({ stalls: this.stalls.stalls, stallMs: this.stalls.rebufferMs }));
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
    const asked = uri;
    const resolved = resolvePlayerOptions(options);
    // Started now, the engine's Worker loads its scripts while the page reads the URI.
    const worker = engineWorker(resolved);
    const prepare = async () => {
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
      return { mse, content, origin, signal, noP2p, p2pLater, live, window };
    };
    let prepared: Awaited<ReturnType<typeof prepare>>;
    try {
      prepared = await prepare();
    } catch (err) {
      worker?.terminate();
      throw err;
    }
    const { mse, content, origin, signal, noP2p, p2pLater, live, window } = prepared;
    // A Worker's engine is made while the swarm joins and MediaSource opens.
    const { engine, ready } = beginEngine(
      resolved,
      uri,
      content,
      { vodWindow: window, urgentPriority: resolved.urgentPriority, maxHeldBytes: resolved.maxMemoryBytes },
      origin,
      signal === null || p2pLater,
      worker,
    );
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
    // Held like every event until attach resolves.
    if (noP2p) player.emit('p2p-unavailable', noP2p);
    void swarm.joined.then(() => player.mark('joinedMs'));
    try {
      await Promise.all([ready.then(() => player.mark('engineMs')), swarm.start(), player.open()]);
    } catch (err) {
      player.destroy();
      // A Worker that could not make the engine: the engine runs on the main thread instead.
      if (err instanceof PpsppError && err.code === 'wasm-load-failed' && engine instanceof WorkerEngine) {
        return Player.attach(video, asked, { ...options, engineThread: 'main' });
      }
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
    this.swarm.on('live-edge', (e) => this.live?.onEdge(e));
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
    this.listen(this.video, 'seeking', () => this.feeding.onSeeking());
    for (const type of ['waiting', 'stalled', 'playing', 'pause', 'ended']) {
      this.listen(this.video, type, () => this.stalls.tick(performance.now()));
    }
    const watch = setInterval(() => {
      this.stalls.tick(performance.now());
      this.feeding.onTick();
    }, STALL_CHECK_MS);
    this.cleanup.push(() => clearInterval(watch));
    this.listen(this.video, 'timeupdate', () => {
      this.countPlayed();
      this.feeding.onTimeUpdate();
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
    this.feeding.feed();
  }

  /** Adds the playhead's advance since the last time update (a jump is a seek, not play). */
  private countPlayed(): void {
    const t = this.video.currentTime;
    const step = t - this.lastTime;
    if (step > 0 && step < MAX_PLAY_STEP_SECONDS && !this.video.seeking) this.mediaSecondsPlayed += step;
    this.lastTime = t;
  }

  /** What the feed appends through: this Player's MediaSource and append queue. */
  private mediaSink(): MediaSink {
    return {
      start: (info) => this.openSourceBuffer(info),
      setDuration: (seconds) => {
        this.mediaSource.duration = seconds;
      },
      full: () => !this.queue || this.queue.pendingBytes >= MAX_PENDING,
      append: (bytes) => {
        this.mark('firstAppendMs');
        this.queue?.push(bytes);
      },
      reset: () => this.queue?.reset(),
      idle: () => (this.queue ? this.queue.idle() : Promise.resolve()),
      endOfStream: () => {
        if (this.mediaSource.readyState !== 'open') return true;
        try {
          this.mediaSource.endOfStream();
          return true;
        } catch {
          return false; // a SourceBuffer still updating
        }
      },
      scheduleFeed: () => this.scheduleFeed(),
    };
  }

  /** Creates the SourceBuffer for the initialization segment `info`, and the queue that appends to it. */
  private openSourceBuffer(info: InitInfo): void {
    const mime = this.options.mimeType ?? info.mimeType;
    if (!this.mse.Class.isTypeSupported(mime)) {
      throw new PpsppError('mse-unsupported', `this browser cannot play ${mime} through MediaSource`);
    }
    const sb: SourceBufferLike = this.mediaSource.addSourceBuffer(mime);
    if (this.mse.kind === 'managed') {
      // The browser evicts on its own: the feed appends media it removed ahead of the
      // playhead again from what the engine holds.
      const evicted = (e: Event): void => {
        if (this.feeding.onBrowserEvicted(removedRanges(e))) this.browserEvictions += 1;
      };
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

  /** Stops playing from the swarm, leaves it and releases the video element. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const undo of this.cleanup) undo();
    this.feeding.close();
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
