/**
 * One swarm: the engine's side (engine-loop.ts: the engine, its loop, HTTP origin and
 * saved chunks), its WebRTC connections and its signaling session. Datagrams from the data
 * channels go to the engine's side; its transmits go out on them; its events become the
 * typed events users see. The engine never calls back into JavaScript, so nothing here
 * can re-enter it.
 */
import { Connections, type SelectedPair, type SignalPath, hasWebRtc, webRtcUnsupported } from './connections.js';
import { Driver } from './driver.js';
import { EngineLoop } from './engine-loop.js';
import type { SwarmEngine } from './swarm-engine.js';
import { WorkerEngine } from './worker-engine.js';
import { Emitter } from './emitter.js';
import { type ErrorCode, PpsppError, fatal, messageOf } from './errors.js';
import type { HttpOriginSettings } from './http-origin.js';
import type { ResolvedPeerOptions } from './options.js';
import type { StorageFallback } from './saved-chunks.js';
import { OffloadReports } from './offload-reports.js';
import { type ReportTotals, SignalingClient } from './signaling.js';
import type { ChannelStats, ContentInfo, EngineEvent, EngineStats, WasmPeer } from './wasm.js';

/** One channel's figures, with who is at the other end. */
export interface PeerChannelStats extends ChannelStats {
  /** The remote's signaling peer id. */
  remote: string;
  /** The remote said it seeds (e.g. the native origin seeder). */
  seeder: boolean;
  /**
   * The data channel was transferred to the engine's Worker, which sends and receives on
   * it; false where the page relays its datagrams (the engine on the main thread, or a
   * browser that cannot transfer this channel).
   */
  transferred: boolean;
}

/** What the `stats` event carries and `stats()` returns. */
export interface SwarmStats extends EngineStats {
  /** Milliseconds since the swarm started. */
  elapsedMs: number;
  /**
   * Peer connections: open data channels and attempts still being set up (each takes a
   * place in `maxConnections`); `peer-joined` / `peer-left` track the open ones.
   */
  connections: number;
  /** Rates over the last stats interval, in bytes per second. */
  downloadBps: number;
  uploadBps: number;
  /** Verified bytes that came from seeders, from other peers, and from the HTTP origin. */
  bytesFromSeeders: number;
  bytesFromPeers: number;
  bytesFromHttp: number;
  /** Verified bytes read back from the page's saved chunks (`storage: 'opfs'`). */
  bytesFromStorage: number;
  /** Chunks saved (`storage: 'opfs'`), and the bytes of their batch files. */
  chunksSaved: number;
  bytesSaved: number;
  /** Share of the fetched verified bytes that came from peers rather than seeders or the HTTP origin (0–1). */
  offload: number;
  /** Messages dropped because a data channel's buffer was full. */
  messagesDropped: number;
  /** Where the engine runs: the page's main thread, or a dedicated Worker (`engineThread`). */
  engineThread: 'main' | 'worker';
  channels: PeerChannelStats[];
}

/** Why peer-to-peer delivery is not possible (the `p2p-unavailable` event). */
export interface P2pUnavailable {
  reason: 'webrtc-unsupported' | 'signaling-unreachable' | 'signaling-error';
  message: string;
}

export interface SwarmEvents {
  'peer-joined': { peer: number; remote: string; seeder: boolean };
  'peer-left': { peer: number; remote: string; reason: string };
  /**
   * A chunk passed verification: from `peer` (`source` 'peer'), or (`peer` null) from the
   * HTTP origin ('http') or the page's saved chunks ('storage').
   */
  'chunk-verified': { chunk: number; peer: number | null; source: 'peer' | 'http' | 'storage' };
  /**
   * `storage: 'opfs'` cannot save (more): OPFS is unavailable, the quota is reached, or a
   * write failed. What was saved is still read back; new chunks are held in memory only.
   */
  'storage-fallback': StorageFallback;
  /**
   * A chunk from the HTTP origin failed verification: nothing of it was kept, it is fetched
   * from peers instead, and the origin is not asked for it again.
   */
  'origin-corrupt': { chunk: number; reason: string };
  /** A chunk failed verification: nothing of it was kept and the peer was dropped. */
  'chunk-rejected': { chunk: number; peer: number; reason: string };
  /**
   * Peer-to-peer delivery is not possible now, and the HTTP origin carries playback
   * alone; not an error. `reason`: the browser has no WebRTC (`webrtc-unsupported`, for
   * good), no signaling server could be reached or none welcomed us in time
   * (`signaling-unreachable`: it keeps trying, and peers join once one answers), or the
   * server refused to let us join (`signaling-error`, for good).
   */
  'p2p-unavailable': P2pUnavailable;
  progress: { have: number; total: number };
  complete: Record<string, never>;
  /** A live stream's edge moved on: chunks up to `end` are signed by the source, at `signedAtMs` (Unix ms, its clock). */
  'live-edge': { end: number; signedAtMs: number };
  /**
   * The live source started a new run of the stream (chunks from 0, perhaps another
   * initialisation segment): the engine joined the new run afresh.
   */
  'live-restarted': Record<string, never>;
  stats: SwarmStats;
  /**
   * Trouble while the swarm runs: `signaling-error`, `no-peers` and `verification-failed`
   * (not fatal: it goes on), `storage-failed` (fatal: nothing more is fetched), and the
   * HTTP origin's `origin-*` codes (fatal only when the origin is given up and there is no
   * signaling server). Errors before it runs reject the call instead.
   */
  error: PpsppError;
}

/**
 * With no connection at all for this long the swarm rejoins signaling for a fresh sample.
 * Not while attempts are being set up: a rejoin gives a new peer id, so their remotes'
 * answers and candidates would no longer reach us (they end at `connectTimeoutMs`).
 */
const LONELY_REJOIN_MS = 5000;
/**
 * The same while the server holds peer-to-peer back (the room is below its `p2pFrom`): the
 * newcomer that brings the room there offers us a connection, so a rejoin only catches a
 * room that grew while no newcomer's sample held us.
 */
const HELD_REJOIN_MS = 30_000;
/**
 * With no peer for this long the `no-peers` error fires, once (the swarm keeps trying). A
 * peer is a connection whose data channel is open (from its `peer-joined` to its
 * `peer-left`); attempts still being set up do not count, as ICE may fail late or never.
 */
const NO_PEERS_ERROR_MS = 10_000;

/** How a {@link Swarm} takes part. */
export interface SwarmSetup {
  /** The signaling servers (null: no peers; an HTTP origin only). */
  signal: string | readonly string[] | null;
  options: ResolvedPeerOptions;
  /** We hold the whole content and say so: peers count our bytes as a seeder's. */
  seeding: boolean;
  /** The HTTP origin, if any. */
  origin?: HttpOriginSettings | null;
  /** `storage: 'opfs'`: its quota in bytes (null or absent: memory only). */
  storageQuota?: number | null;
  /** HTTP only until {@link Swarm.enableP2p} (the `p2p: false` option; needs `origin`). */
  p2pLater?: boolean;
}

export class Swarm extends Emitter<SwarmEvents> {
  readonly content: ContentInfo;
  readonly uri: string;
  /** Null for an HTTP-only swarm (no signaling server: the origin is its only source). */
  private readonly signaling: SignalingClient | null;
  private readonly connections: Connections;
  /** The engine's side: engine, loop, HTTP origin, saved chunks (here, or in a Worker). */
  private readonly loop: SwarmEngine;
  /** The swarm has an HTTP origin, and nothing else can deliver (no signaling, or P2P for later). */
  private readonly hasOrigin: boolean;
  private readonly originOnly: boolean;
  private readonly started = performance.now();
  private closed = false;
  /** The figures at close(), since the engine they come from is freed then. */
  private finalStats: SwarmStats | null = null;
  /** The verified ranges at close(), for the same reason. */
  private finalHave: [number, number][] | null = null;
  private statsTimer: ReturnType<typeof setInterval> | null = null;
  private lonelyTimer: ReturnType<typeof setInterval> | null = null;
  private lonelySince: number | null = null;
  /** Since when no data channel has been open (null: one is). */
  private peerlessSince: number | null = null;
  private noPeersReported = false;
  private lastStats: { at: number; down: number; up: number } | null = null;
  private rates = { down: 0, up: 0 };
  private bytesFromSeeders = 0;
  private bytesFromPeers = 0;
  private bytesFromHttp = 0;
  private bytesFromStorage = 0;
  /** The read-ahead bounds last given to the engine, in chunks: all sources, HTTP. */
  private readAhead: [number, number] = [-1, -1];
  /** Seeders' handles, kept once their connection is gone: a chunk verified in the turn
   * its seeder left still came from a seeder. */
  private readonly seederHandles = new Set<number>();
  private completeValue: boolean;

  private readonly seeding: boolean;
  private readonly storageQuota: number | null;
  private p2pLater: boolean;
  /** Reports for the operator (`reportOffload`), null when the site did not ask for them. */
  private readonly reports: OffloadReports | null;
  /** Where the stalls in those reports come from (the Player's stall watch), if anywhere. */
  private stallSource: () => { stalls: number; stallMs: number } = () => ({ stalls: 0, stallMs: 0 });

  /**
   * `engine`: a Wasm engine, run here on an `EngineLoop`, or one started in a Worker
   * (`WorkerEngine`), with its HTTP origin and saved chunks there too.
   */
  constructor(
    engine: WasmPeer | WorkerEngine,
    content: ContentInfo,
    setup: SwarmSetup,
  ) {
    super();
    const { signal: signalUrls, options, origin = null } = setup;
    this.seeding = setup.seeding;
    this.storageQuota = setup.storageQuota ?? null;
    this.p2pLater = setup.p2pLater ?? false;
    const p2pLater = this.p2pLater;
    this.content = content;
    this.uri = engine.uri();
    this.completeValue = engine.isComplete();
    this.hasOrigin = origin !== null;
    this.originOnly = signalUrls === null || p2pLater;
    const hooks = {
      send: (peer: number, payload: Uint8Array) => this.connections.send(peer, payload),
      event: (event: EngineEvent, chunkBytes: number) => this.dispatch(event, chunkBytes),
      storageFallback: (f: StorageFallback) => this.emit('storage-fallback', f),
      channelOpened: (peer: number) => this.connections.channelOpened(peer),
      channelEnded: (peer: number) => this.connections.channelEnded(peer),
    };
    if (engine instanceof WorkerEngine) {
      engine.attach(hooks);
      this.loop = engine;
    } else {
      this.loop = new EngineLoop(engine, { content, origin, originOnly: this.originOnly }, hooks);
    }
    this.signaling = signalUrls === null ? null : new SignalingClient(signalUrls, content.root, {
      welcome: (_id, peers) => {
        this.reports?.joined(this.signaling?.reportEverySeconds ?? null);
        this.markJoined();
        for (const remote of peers) this.connections.offer(remote);
      },
      signal: (from, data) => this.connections.onSignal(from, data),
      peerLeft: (remote) => this.connections.remoteLeft(remote),
      disconnected: () => {},
      error: (err) => this.emit('error', err),
    }, options.signalingTimeoutMs);
    const signaling = this.signaling;
    this.reports = signaling && options.reportOffload
      ? new OffloadReports(() => this.reportTotals(), (since) => signaling.report(since))
      : null;
    this.connections = new Connections(
      this.signaling ?? OFFLINE,
      {
        iceServers: options.iceServers,
        maxConnections: options.maxConnections,
        iceTransportPolicy: options.iceTransportPolicy,
        connectTimeoutMs: options.connectTimeoutMs,
        seeder: () => this.seeding,
        dataBatchBytes: options.dataBatchBytes,
      },
      {
        open: (handle, remote, initiator) => {
          if (initiator) this.loop.connect(handle);
          const batch = this.connections.dataBatchTo(handle);
          if (batch > 0) this.loop.setDataBatching(handle, batch);
          const seeder = this.connections.isSeeder(handle);
          if (seeder) this.seederHandles.add(handle);
          // Seeders are origins: asked for what playback needs next or nobody else has.
          if (seeder && options.preferPeers) this.loop.setOrigin(handle, true);
          this.emit('peer-joined', { peer: handle, remote, seeder });
          this.loop.kick();
        },
        message: (handle, data) => this.loop.datagram(handle, data),
        closed: (handle, remote, wasOpen) => {
          if (this.closed) return;
          this.loop.peerLost(handle);
          if (wasOpen) this.emit('peer-left', { peer: handle, remote, reason: 'connection closed' });
        },
        error: (err) => this.emit('error', err),
        // Connections still being set up: not alone (see `Engine::set_peers_coming`).
        changed: () => this.loop.setPeersComing(this.connections.size > this.connections.openCount),
        adopt: (handle, channel) => this.loop.adopt(handle, channel),
      },
    );
    if (options.statsIntervalMs > 0) {
      this.statsTimer = setInterval(() => this.emit('stats', this.stats()), options.statsIntervalMs);
    }
  }

  /**
   * Joins the room; rejects with `signaling-unreachable` if the server cannot be reached
   * (or does not welcome us within `signalingTimeoutMs`), or `signaling-error` if it
   * refuses (both fatal). With an HTTP origin, or `background` (the caller has another
   * way to the bytes), nothing waits for signaling: the room is joined in the background,
   * and a failure is a `p2p-unavailable` event (an unreachable server is tried again
   * until it answers).
   */
  async start(opts: { background?: boolean } = {}): Promise<void> {
    // Saved chunks are named to the engine before any peer or the origin is asked.
    if (this.storageQuota !== null) {
      await this.loop.openSaved(this.storageQuota);
      if (this.closed) return;
    }
    if (!this.signaling || this.p2pLater) {
      this.loop.kick();
      return;
    }
    if (this.hasOrigin || opts.background) {
      this.joinInBackground(this.signaling);
    } else {
      try {
        await this.signaling.start();
      } catch (err) {
        throw fatal(err);
      }
      this.watchLonely();
    }
    this.loop.kick();
  }

  /**
   * A swarm made with P2P for later (the `p2p: false` option) joins its room now, in the
   * background as with an origin. Does nothing otherwise, or a second time. Without
   * WebRTC it stays HTTP only and says so (`p2p-unavailable`).
   */
  enableP2p(): void {
    if (this.closed || !this.p2pLater || !this.signaling) return;
    this.p2pLater = false;
    if (!hasWebRtc()) {
      this.emit('p2p-unavailable', webRtcUnsupported());
      return;
    }
    this.joinInBackground(this.signaling);
    this.loop.kick();
  }

  /** Uploads to peers or not; see `Engine::set_uploading`. */
  setUploading(on: boolean): void {
    if (this.closed) return;
    this.loop.setUploading(on);
  }

  /** Joins the room without anyone waiting; a failure is a `p2p-unavailable` event. */
  private joinInBackground(signaling: SignalingClient): void {
    signaling.start({ keepTrying: true }).then(
      () => this.loop.kick(),
      (err: unknown) => {
        if (this.closed) return;
        const e = err instanceof PpsppError ? err : new PpsppError('signaling-unreachable', String(err));
        const reason = e.code === 'signaling-error' ? 'signaling-error' : 'signaling-unreachable';
        this.emit('p2p-unavailable', { reason, message: e.message });
      },
    );
    this.watchLonely();
  }

  private watchLonely(): void {
    this.lonelySince = performance.now();
    this.peerlessSince = this.lonelySince;
    this.lonelyTimer = setInterval(() => this.checkLonely(), 1000);
  }

  // Declared before `joined`, whose initializer replaces it.
  private markJoined: () => void = () => {};
  /** Resolves when the signaling server first welcomed us (never for an HTTP-only swarm). */
  readonly joined: Promise<void> = new Promise((resolve) => (this.markJoined = resolve));

  private checkLonely(): void {
    const now = performance.now();
    if (this.connections.openCount > 0) {
      this.peerlessSince = null;
    } else {
      this.peerlessSince ??= now;
      const peerless = now - this.peerlessSince;
      // While the HTTP origin delivers, having no peer is no trouble.
      const originServes = this.hasOrigin && this.loop.hasHttpOrigin();
      if (peerless >= NO_PEERS_ERROR_MS && !this.noPeersReported && !this.completeValue && !originServes) {
        this.noPeersReported = true;
        const pending = this.connections.size;
        const attempts = pending > 0 ? ` (${pending} connection attempt${pending === 1 ? '' : 's'} not open yet)` : '';
        this.emit(
          'error',
          new PpsppError(
            'no-peers',
            `no peer of swarm ${this.content.root} reachable for ${Math.round(peerless / 1000)} s${attempts}; still trying`,
          ),
        );
        if (this.closed) return;
      }
    }
    if (this.connections.size > 0) {
      this.lonelySince = null;
      return;
    }
    this.lonelySince ??= now;
    const alone = now - this.lonelySince;
    const every = this.signaling?.p2pFrom != null ? HELD_REJOIN_MS : LONELY_REJOIN_MS;
    if (alone >= every && Math.floor(alone / every) !== Math.floor((alone - 1000) / every)) {
      this.signaling?.rejoin();
    }
  }

  get complete(): boolean {
    return this.completeValue;
  }

  /** Runs the pump of every kicked swarm (the loop's MessageChannel task; see {@link Driver.runKicked}). */
  static runKicked(): void {
    Driver.runKicked();
  }

  /** One event of the engine, as the swarm's events; `bytes`: the chunk's, if it names one. */
  private dispatch(event: EngineEvent, bytes: number): void {
    if (this.closed) return;
    switch (event.type) {
      case 'chunk-verified':
        if (this.seederHandles.has(event.peer)) this.bytesFromSeeders += bytes;
        else this.bytesFromPeers += bytes;
        this.emit('chunk-verified', { chunk: event.chunk, peer: event.peer, source: 'peer' });
        break;
      case 'origin-chunk':
        this.bytesFromHttp += bytes;
        this.emit('chunk-verified', { chunk: event.chunk, peer: null, source: 'http' });
        break;
      case 'chunk-restored':
        this.bytesFromStorage += bytes;
        this.emit('chunk-verified', { chunk: event.chunk, peer: null, source: 'storage' });
        break;
      case 'origin-corrupt':
        this.emit('origin-corrupt', { chunk: event.chunk, reason: event.reason });
        break;
      case 'origin-failed': {
        const code: ErrorCode = event.code;
        const what = event.disabled
          ? this.originOnly
            ? 'the HTTP origin is given up, and without a signaling server nothing else can deliver'
            : 'the HTTP origin is given up: peers carry everything from now on'
          : event.retryMs !== null
            ? `retrying in ${Math.round(event.retryMs)} ms`
            : 'its chunks are fetched from peers';
        this.emit(
          'error',
          new PpsppError(code, `${event.message}; ${what}`, { fatal: event.disabled && this.originOnly }),
        );
        break;
      }
      case 'chunk-rejected':
        this.emit('chunk-rejected', { chunk: event.chunk, peer: event.peer, reason: event.reason });
        this.emit(
          'error',
          new PpsppError(
            'verification-failed',
            `chunk ${event.chunk} from peer ${this.connections.remoteOf(event.peer) || event.peer} failed verification (${event.reason}); nothing of it was kept and the peer was dropped`,
          ),
        );
        break;
      case 'peer-closed':
        // The engine ended the channel (misbehaving peer, timeout, a full peer refusing us):
        // end the connection too, and tell the engine it is gone, so that it does not ask a
        // refusing peer again over it (a page has other viewers to turn to).
        {
          const remote = this.connections.remoteOf(event.peer);
          // Already gone (its channel closed before this turn): that was its peer-left.
          if (remote === '') break;
          this.connections.close(event.peer);
          this.loop.peerLost(event.peer);
          this.emit('peer-left', { peer: event.peer, remote, reason: event.message });
        }
        break;
      case 'progress':
        this.emit('progress', { have: event.have, total: event.total });
        break;
      case 'complete':
        this.completeValue = true;
        this.emit('complete', {});
        break;
      case 'live-edge':
        this.emit('live-edge', { end: event.end, signedAtMs: event.signedAtMs });
        break;
      case 'store-failed':
        // The engine asks for nothing more; the page's memory store cannot free space.
        this.emit(
          'error',
          new PpsppError('storage-failed', `chunk ${event.chunk} could not be stored: ${event.message}`),
        );
        break;
      case 'live-restarted':
        this.emit('live-restarted', {});
        break;
      case 'wrong-length':
        // The URI's len= is wrong: nothing can be verified against it, and the engine asks
        // for nothing more. The peers are honest and stay.
        this.emit('error', new PpsppError('bad-uri', event.message, { fatal: true }));
        break;
      case 'store-read-failed':
        // A page's chunks are in memory, which does not fail to read; the native seeder
        // (whose file can change under it) is what this event is for.
        break;
      case 'peer-connected':
        // The channel's handshake completed. Users saw `peer-joined` when the data channel
        // opened; the handshake adds nothing they act on (a peer that never answers it is
        // closed by the engine and comes out as `peer-closed`).
        break;
      case 'peer-discovered':
        // A peer's address learnt by PEX. Browser peers meet through signaling only: the
        // engine's peers here are data-channel handles, and there is no address to dial.
        break;
      case 'stats':
        // Periodic engine figures: never emitted here (engineOptions sets stats_interval_ms
        // to 0); the swarm's own stats timer reads the loop's `stats()` instead.
        break;
      default: {
        // An engine event this switch does not handle is a compile error here.
        const unhandled: never = event;
        void unhandled;
      }
    }
  }

  /** Milliseconds the HTTP origin has held back what playback waited for, for peers still connecting (`EngineStats.originHeldMs`). */
  originHeldMs(): number {
    return this.finalStats ? this.finalStats.originHeldMs : this.loop.stats().engine.originHeldMs;
  }

  /** Current figures (rates are those of the last stats interval). */
  stats(): SwarmStats {
    if (this.finalStats) return this.finalStats;
    const { engine, channels: engineChannels, chunksSaved, bytesSaved } = this.loop.stats();
    const now = performance.now();
    if (this.lastStats && now - this.lastStats.at >= 250) {
      const secs = (now - this.lastStats.at) / 1000;
      this.rates = {
        down: (engine.bytesDownloaded - this.lastStats.down) / secs,
        up: (engine.bytesUploaded - this.lastStats.up) / secs,
      };
    }
    if (!this.lastStats || now - this.lastStats.at >= 250) {
      this.lastStats = { at: now, down: engine.bytesDownloaded, up: engine.bytesUploaded };
    }
    const channels = engineChannels.map((c: ChannelStats) => ({
      ...c,
      remote: this.connections.remoteOf(c.peer),
      seeder: this.connections.isSeeder(c.peer),
      transferred: this.connections.isAdopted(c.peer),
    }));
    const verified = this.bytesFromSeeders + this.bytesFromPeers + this.bytesFromHttp;
    return {
      ...engine,
      elapsedMs: now - this.started,
      connections: this.connections.size,
      downloadBps: this.rates.down,
      uploadBps: this.rates.up,
      bytesFromSeeders: this.bytesFromSeeders,
      bytesFromPeers: this.bytesFromPeers,
      bytesFromHttp: this.bytesFromHttp,
      bytesFromStorage: this.bytesFromStorage,
      chunksSaved,
      bytesSaved,
      offload: verified > 0 ? this.bytesFromPeers / verified : 0,
      messagesDropped: this.connections.dropped + this.loop.messagesDropped(),
      engineThread: this.loop instanceof WorkerEngine ? 'worker' : 'main',
      channels,
    };
  }

  /** The end of the bytes verified without a gap from byte `offset` on. */
  verifiedEnd(offset: number): number {
    const { chunkSize, length } = this.content;
    if (this.closed) return Math.min(length, offset);
    return Math.min(length, this.loop.firstMissing(Math.floor(offset / chunkSize)) * chunkSize);
  }

  /** Where the bytes the engine fetches from its playhead end (the memory bound's window). */
  wantedEnd(): number {
    if (this.closed) return 0;
    return Math.min(this.content.length, this.loop.wantedEnd() * this.content.chunkSize);
  }

  /** Verified bytes `start..end`. */
  read(start: number, end: number): Uint8Array {
    if (this.closed) throw new PpsppError('closed', 'the swarm was left: its chunks are gone');
    return this.loop.read(start, end);
  }

  /** Verified chunk ranges, `[[start, end), …]`. */
  haveRanges(): [number, number][] {
    if (this.finalHave) return this.finalHave.map(([a, b]) => [a, b]);
    const flat = this.loop.haveRanges();
    const out: [number, number][] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] ?? 0, flat[i + 1] ?? 0]);
    return out;
  }

  /** A live stream's edge (one past its newest signed chunk) and the first chunk still in
   * its window; -1 for a file. */
  liveEdge(): number {
    return this.loop.liveEdge();
  }

  liveFloor(): number {
    return this.loop.liveFloor();
  }

  /** Verified chunk `chunk`, or undefined if not held. */
  readChunk(chunk: number): Uint8Array | undefined {
    return this.loop.readChunk(chunk);
  }

  /** The first chunk from `chunk` on that is not verified yet. */
  firstMissing(chunk: number): number {
    if (this.closed) return chunk;
    return this.loop.firstMissing(chunk);
  }

  /**
   * A live presentation's part (its manifest record): rejects with `verification-failed`
   * unless this stream's rendition key signed it, recently (`closed` if the swarm was left).
   */
  async checkLivePart(record: Record<string, unknown>): Promise<void> {
    if (this.closed) throw new PpsppError('closed', 'the swarm was left');
    try {
      await this.loop.checkLivePart(record);
    } catch (err) {
      if (err instanceof PpsppError && err.code === 'closed') throw err;
      throw new PpsppError('verification-failed', messageOf(err), { cause: err });
    }
  }

  /**
   * The segment a live part names, from the web server: checked under its munros and kept
   * (and offered to peers). Rejects with `verification-failed`, keeping nothing, if it is
   * not what the source signed; resolves with the chunks that were new.
   */
  async handleLivePart(record: Record<string, unknown>, data: Uint8Array): Promise<number> {
    if (this.closed) throw new PpsppError('closed', 'the swarm was left');
    let kept: number;
    try {
      kept = await this.loop.handleLivePart(record, data);
    } catch (err) {
      if (err instanceof PpsppError && err.code === 'closed') throw err;
      throw new PpsppError('verification-failed', messageOf(err), { cause: err });
    }
    return kept;
  }

  /** How many connected peers said they hold `chunk` (0 once the swarm is left). */
  async peersHolding(chunk: number): Promise<number> {
    return this.closed ? 0 : this.loop.peersHolding(chunk).catch(() => 0);
  }

  /** Whether `data` is the initialisation segment of `length` bytes and hash `hash` (hex). */
  async liveInitMatches(length: number, hash: string, data: Uint8Array): Promise<boolean> {
    return !this.closed && (await this.loop.liveInitMatches(length, hash, data).catch(() => false));
  }

  /**
   * Fetches at most `chunks` ahead of the playhead, and at most `fromHttp` of them from the
   * HTTP origin; see `Engine::set_read_ahead` and `Engine::set_origin_read_ahead`.
   */
  setReadAhead(chunks: number, fromHttp: number): void {
    if (this.closed || (chunks === this.readAhead[0] && fromHttp === this.readAhead[1])) return;
    this.readAhead = [chunks, fromHttp];
    this.loop.setReadAhead(chunks, fromHttp);
  }

  setPlayhead(chunk: number): void {
    if (this.closed) return;
    this.loop.setPlayhead(chunk);
  }

  /**
   * Playback waits for chunks `start..end` (null: it does not wait; `end` up to `start`:
   * where its segment ends is not known), and may wait for peers for `slackMs` (null or 0:
   * may not); see `Engine::set_waiting_for` and `Engine::set_waiting_slack`.
   */
  setWaitingFor(chunks: { start: number; end: number } | null, slackMs: number | null = null): void {
    if (this.closed) return;
    this.loop.setWaitingFor(chunks?.start ?? -1, chunks?.end ?? 0, slackMs ?? -1);
  }

  /** The selected ICE pair of each open connection (tests prove traffic stays on loopback). */
  selectedPairs(): Promise<SelectedPair[]> {
    return this.connections.selectedPairs();
  }

  /**
   * Where the stalls of the operator's reports come from (`reportOffload`): the Player
   * gives its stall watch; without one, reports carry bytes only.
   */
  setStallSource(source: () => { stalls: number; stallMs: number }): void {
    this.stallSource = source;
  }

  /** The running totals the operator's reports are made of. */
  private reportTotals(): ReportTotals {
    const { stalls, stallMs } = this.stallSource();
    return { peers: this.bytesFromPeers, http: this.bytesFromHttp, seeders: this.bytesFromSeeders, stalls, stallMs };
  }

  /** Leaves the swarm: explicit closes to peers, then connections and signaling go. */
  close(): void {
    if (this.closed) return;
    // While the bytes are still counted and the signaling connection stands.
    this.reports?.close();
    this.loop.leave();
    this.finalStats = this.stats();
    this.finalHave = this.haveRanges();
    this.closed = true;
    if (this.statsTimer !== null) clearInterval(this.statsTimer);
    if (this.lonelyTimer !== null) clearInterval(this.lonelyTimer);
    this.connections.closeAll();
    this.signaling?.close();
    this.loop.free();
    this.removeAllListeners();
  }
}

/** The signaling an HTTP-only swarm has: none, so no connection is ever set up. */
const OFFLINE: SignalPath = {
  send: () => {},
  iceServers: [],
  requestIceServers: () => false,
  peerId: null,
};
