/**
 * An HLS or DASH presentation over PPSPP: each rendition of its manifest
 * (`NAME.ppspp.json`, `ppspp hls prepare`) is one swarm, made when a player first asks
 * for one of its segments. A segment comes from peers, or from the site's own web server
 * or CDN (the rendition's files, read by byte range) where no peer has it in time; either
 * way every byte is verified against the rendition's root before the player gets it.
 * Player integrations (integrations/hls.ts) turn a segment request into {@link load}.
 */
import { hasWebRtc, webRtcUnsupported } from '../connections.js';
import { Emitter } from '../emitter.js';
import { PpsppError, messageOf } from '../errors.js';
import type { HttpOriginSettings } from '../http-origin.js';
import { type PresentationOptions, type ResolvedPresentationOptions, resolvePresentationOptions } from '../options.js';
import { SpareWorker } from '../engine-start.js';
import { signalWithOrigin } from '../peer.js';
import { meteredConnection } from '../player.js';
import { bufferedAhead } from '../media/stall-watch.js';
import { type P2pUnavailable, Swarm, type SwarmStats } from '../swarm.js';
import { loadWasm, parseUriLoaded } from '../wasm.js';
import { Goodput } from './goodput.js';
import { LiveDelivery, type LiveSegmentRef } from './live-delivery.js';
import { beginRendition, renditionFailure } from './rendition-engine.js';
import type { LiveManifest } from './live-manifest.js';
import { type Manifest, type Rendition, SegmentIndex, type SegmentRef, loadManifest, renditionUri } from './manifest.js';

/** Figures of a rendition, and of the whole presentation. */
export interface DeliveryFigures {
  segmentsLoaded: number;
  bytesFromHttp: number;
  bytesFromPeers: number;
  bytesFromSeeders: number;
  /** Content bytes the web server sent, verified or not. */
  httpBytesReceived: number;
  bytesUploaded: number;
}

/** One rendition's figures (`stats().renditions`). */
export interface RenditionStats extends DeliveryFigures {
  id: string;
  kind: Rendition['kind'];
  /** Its swarm has been made (a segment of it was asked for). */
  active: boolean;
}

export interface PresentationStats extends DeliveryFigures {
  /** Times the player moved to another rendition of the same kind (`rendition-switched`). */
  switches: number;
  /** What the network delivered to segments that were waited for, in bytes per second (null: not measured yet). */
  goodputBps: number | null;
  /** Share of the verified bytes that came from peers rather than seeders or HTTP (0–1). */
  offload: number;
  renditions: RenditionStats[];
}

export interface PresentationEvents {
  /**
   * The player asked for a segment of another rendition of the same kind (video, audio or
   * muxed) than its last one: its ABR switched. `from` is null for the first of a kind.
   */
  'rendition-switched': { kind: Rendition['kind']; from: number | null; to: number };
  /**
   * A segment was verified whole and handed over: bytes `start..end` of the rendition's
   * content (live: of the segment itself, `url`).
   */
  'segment-loaded': { rendition: number; start: number; end: number; ms: number; url?: string };
  /** As the Player's: peer-to-peer delivery is not possible now; HTTP carries playback. Once. */
  'p2p-unavailable': P2pUnavailable;
  /**
   * A chunk from the web server failed verification (the Swarm's `origin-corrupt`): it was
   * not kept, it comes from peers instead, and the server is not asked for it again.
   */
  'origin-corrupt': { rendition: number; chunk: number; reason: string };
  /** A rendition's swarm met trouble (the Swarm's `error` event), with which rendition. */
  error: PpsppError & { rendition?: number };
}

/**
 * Of the media a player holds ahead when it asks for a segment, what a segment no peer has
 * yet never waits for peers still connecting: it then comes from the web server with this
 * much left to play. hls.js abandons a load it expects to outlast the buffer left (and the
 * next segment's fetch needs time too), so the wait ends well before that.
 */
const STALL_RESERVE_MS = 6_000;

/** How a segment load ended, for the player integration. */
export type LoadOutcome =
  /**
   * `ms`: how long it took; `reportedMs`: how long to tell the player's ABR, at least the
   * bytes at the network's measured rate (see goodput.ts); the time the web server was held
   * back for peers still connecting (the player held media enough) is left out, as it says
   * nothing of the network.
   */
  | { bytes: Uint8Array; ms: number; reportedMs: number }
  | { aborted: true }
  | { timedOut: true }
  | { error: PpsppError };

interface Pending {
  ref: SegmentRef;
  resolve: (o: LoadOutcome) => void;
  onProgress: ((loaded: number) => void) | undefined;
  startedAt: number;
  /** The segment's bytes not yet verified when it was asked for. */
  missingAtStart: number;
  /** Until when (`performance.now()`) it may wait for peers, its player holding media enough (null: it may not). */
  patientUntil: number | null;
  /** The swarm's `originHeldMs` when it was asked for. */
  heldAtStart: number;
}

interface Active {
  swarm: Swarm;
  pending: Set<Pending>;
}

export class Presentation extends Emitter<PresentationEvents> {
  readonly manifest: Manifest | LiveManifest;
  private readonly index: SegmentIndex | null;
  /** A live presentation's delivery (null: on demand). */
  private readonly live: LiveDelivery | null;
  private readonly active = new Map<number, Active>();
  /** The figures of swarms closed with {@link close}. */
  private readonly finalStats = new Map<number, SwarmStats>();
  /** Segments handed over, per rendition. */
  private readonly segments = new Map<number, number>();
  private closed = false;
  private p2pReported = false;
  private readonly goodput = new Goodput();
  /** The rendition of each kind the player asked for last, and how often that changed. */
  private readonly lastOfKind = new Map<Rendition['kind'], number>();
  private switches = 0;
  /** A Worker could not make an engine: the next ones run on the main thread. */
  private workerFailed = false;
  /** A Worker started ahead for the next rendition's engine. */
  private readonly spare = new SpareWorker();
  /** The element the player plays into ({@link attachMedia}), if the page said. */
  private media: HTMLMediaElement | null = null;

  private constructor(
    manifest: Manifest | LiveManifest,
    private readonly options: ResolvedPresentationOptions,
  ) {
    super();
    this.manifest = manifest;
    if (manifest.type === 'live') {
      this.index = null;
      this.live = new LiveDelivery(manifest, options, {
        noteRendition: (r) => this.noteRendition(r),
        reportP2p: (e) => this.reportP2p(e),
        emit: (type, payload) => this.emit(type, payload),
        loaded: (rendition, missingAtStart, ms, bytes) => {
          this.segments.set(rendition, (this.segments.get(rendition) ?? 0) + 1);
          this.goodput.sample(missingAtStart, ms);
          this.emit('segment-loaded', { rendition, start: 0, end: bytes.length, ms });
          return this.goodput.reportedMs(bytes.length, ms);
        },
        engineOptions: () => this.engineThread(),
        spareWorker: (options) => this.spare.take(options),
        engineReady: () => this.prepareSpare(),
        engineFailed: (err) => this.noteEngineFailure(err),
      });
    } else {
      this.index = new SegmentIndex(manifest);
      this.live = null;
    }
    // The first rendition's Worker loads its scripts while the player reads its playlists.
    this.prepareSpare();
  }

  /**
   * Loads the manifest at `url` (`NAME.ppspp.json` beside the master playlist or MPD) and
   * the engine. `signal` is required: the signaling server's URL(s), or `false` for HTTP
   * only; a live manifest needs `streamKey` too, and its records are checked against it
   * here. Rejects with `bad-option`, `manifest-unreachable`, `bad-manifest` or
   * `wasm-load-failed`; nothing joins a swarm until a segment is asked for.
   */
  static async load(url: string, options: PresentationOptions = {}): Promise<Presentation> {
    const resolved = resolvePresentationOptions(options);
    if (resolved.signal === undefined) {
      throw new PpsppError('bad-option', 'option signal is needed: the signaling server URL (ws:// or wss://), a list of them, or false for HTTP only');
    }
    const [manifest] = await Promise.all([loadManifest(url, resolved.manifestTimeoutMs), loadWasm(resolved.wasm)]);
    return new Presentation(manifest, resolved);
  }

  /**
   * The element the player plays into (null: none). With it, a segment asked for while the
   * player holds more than a few seconds of media ahead may wait for peers still
   * connecting rather than come from the web server at once, so a page whose first peer
   * comes late takes from it what its player buffers ahead. hls.js and Shaka do not tell
   * their loaders, so pass the element you attach them to; `ppspp-web/videojs` passes its
   * own.
   */
  attachMedia(media: HTMLMediaElement | null): void {
    this.media = media;
  }

  /** Forgets `media` if it is the element attached (a player that played into it is gone). */
  detachMedia(media: HTMLMediaElement): void {
    if (this.media === media) this.media = null;
  }

  /** How long a segment asked for now may wait for peers (0: not at all). */
  private slackMs(): number {
    const media = this.media;
    if (!media) return 0;
    const rate = Math.max(1, Math.abs(media.playbackRate) || 1);
    return Math.max(0, (bufferedAhead(media) * 1000) / rate - STALL_RESERVE_MS);
  }

  /**
   * Where a request for `url` (bytes `rangeStart..rangeEnd`, end exclusive) lies, or null
   * if no rendition holds it. Live: a segment the manifest names, or one in the directory
   * and with the extension of its segments, which the manifest is read again for.
   */
  find(url: string, rangeStart?: number, rangeEnd?: number): SegmentRef | LiveSegmentRef | null {
    if (this.live) return this.live.find(url, rangeStart, rangeEnd);
    return this.index?.find(url, rangeStart, rangeEnd) ?? null;
  }


  /**
   * The verified bytes of segment `ref`. Settles always: with the bytes, or aborted
   * (`signal`), or timed out after `timeoutMs`, or an error (the presentation closed, or
   * its swarm could not be made).
   */
  load(ref: SegmentRef | LiveSegmentRef, opts: { signal?: AbortSignal; timeoutMs: number; onProgress?: (loaded: number) => void }): Promise<LoadOutcome> {
    if (this.closed) return Promise.resolve({ error: new PpsppError('closed', 'the presentation was closed') });
    if (opts.signal?.aborted) return Promise.resolve({ aborted: true });
    if ('live' in ref) {
      if (!this.live) return Promise.resolve({ error: new PpsppError('bad-manifest', 'a live segment asked of an on-demand presentation') });
      return this.live.load(ref, opts);
    }
    this.noteRendition(ref.rendition);
    let active: Active;
    try {
      active = this.activate(ref.rendition);
    } catch (err) {
      return Promise.resolve({ error: err instanceof PpsppError ? err : new PpsppError('bad-manifest', messageOf(err)) });
    }
    return new Promise<LoadOutcome>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | null = null;
      const onAbort = (): void => settle({ aborted: true });
      const startedAt = performance.now();
      const slack = this.slackMs();
      const p: Pending = {
        ref,
        onProgress: opts.onProgress,
        startedAt,
        missingAtStart: ref.end - Math.min(ref.end, active.swarm.verifiedEnd(ref.start)),
        patientUntil: slack > 0 ? startedAt + slack : null,
        heldAtStart: active.swarm.originHeldMs(),
        resolve: (o) => settle(o),
      };
      const settle = (o: LoadOutcome): void => {
        if (!active.pending.delete(p)) return;
        if (timer !== null) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        if (active.pending.size === 0) active.swarm.setWaitingFor(null);
        else this.aimPending(ref.rendition, active);
        resolve(o);
      };
      active.pending.add(p);
      this.aimPending(ref.rendition, active);
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      timer = setTimeout(() => settle({ timedOut: true }), opts.timeoutMs);
      this.check(ref.rendition);
    });
  }

  /** Reports a switch when `rendition` is not the last one asked for of its kind. */
  private noteRendition(rendition: number): void {
    const kind = this.manifest.renditions[rendition]?.kind;
    if (kind === undefined) return;
    const from = this.lastOfKind.get(kind) ?? null;
    if (from === rendition) return;
    this.lastOfKind.set(kind, rendition);
    if (from !== null) this.switches += 1;
    this.emit('rendition-switched', { kind, from, to: rendition });
  }

  private vodRendition(i: number): Rendition | undefined {
    return this.manifest.type === 'vod' ? this.manifest.renditions[i] : undefined;
  }

  /** The rendition's swarm, made on first use. */
  private activate(rendition: number): Active {
    const found = this.active.get(rendition);
    if (found) return found;
    const r = this.vodRendition(rendition);
    if (!r) throw new PpsppError('bad-manifest', `no rendition ${rendition}`);
    const uri = renditionUri(r);
    const content = parseUriLoaded(uri);
    const origin: HttpOriginSettings = {
      url: r.parts[0]!.url,
      tree: r.tree,
      parts: r.parts,
      maxRequests: 4,
      timeoutMs: 10_000,
      // A player asks for segments: what it asks for is what the origin serves.
      headBytes: 0,
    };
    const o = this.options;
    let signal = signalWithOrigin(o, content, origin);
    if (signal !== null && !hasWebRtc()) {
      signal = null;
      this.reportP2p(webRtcUnsupported());
    }
    const window = Math.max(16, Math.ceil((4 << 20) / r.chunkSize));
    const engineOptions = this.engineThread();
    const begun = beginRendition(r.id, engineOptions, uri, content, { vodWindow: window, maxHeldBytes: o.maxMemoryBytes }, origin, signal === null, this.spare.take(engineOptions));
    const swarm = new Swarm(begun.engine, content, { signal, options: o, seeding: false, origin });
    const active: Active = { swarm, pending: new Set() };
    this.active.set(rendition, active);
    begun.ready.then(
      () => this.prepareSpare(),
      (err: unknown) => this.engineFailed(rendition, active, r.id, err),
    );
    swarm.on('chunk-verified', () => this.check(rendition));
    swarm.on('p2p-unavailable', (e) => this.reportP2p(e));
    swarm.on('origin-corrupt', (e) => this.emit('origin-corrupt', { rendition, ...e }));
    swarm.on('error', (e) => this.emit('error', Object.assign(e, { rendition })));
    if (o.upload === false || (o.upload === 'auto' && meteredConnection())) swarm.setUploading(false);
    swarm.start().catch((err: unknown) => {
      const e = err instanceof PpsppError ? err : new PpsppError('signaling-unreachable', messageOf(err));
      this.emit('error', Object.assign(e, { rendition }));
      for (const p of [...active.pending]) p.resolve({ error: e });
    });
    return active;
  }

  /** A Worker for the next rendition's engine, while some have none. */
  private prepareSpare(): void {
    const inactive = this.manifest.renditions.some((_, i) => (this.live ? !this.live.isActive(i) : !this.active.has(i)));
    if (inactive && !this.closed) this.spare.prepare(this.engineThread());
  }

  /** The options the next engine starts with: on the main thread once a Worker could not make one. */
  private engineThread(): ResolvedPresentationOptions {
    return this.workerFailed ? { ...this.options, engineThread: 'main' } : this.options;
  }

  /** A Worker that could not make an engine: the next ones run on the main thread. */
  private noteEngineFailure(err: unknown): void {
    if (err instanceof PpsppError && err.code === 'wasm-load-failed') this.workerFailed = true;
  }

  /**
   * A rendition's engine could not be made (its Worker failed, or it refused the URI): its
   * loads fail (the player tries them again), and the next load makes the swarm again, on
   * the main thread.
   */
  private engineFailed(rendition: number, active: Active, id: string, err: unknown): void {
    if (this.active.get(rendition) !== active) return;
    this.noteEngineFailure(err);
    const e = renditionFailure(id, err);
    this.active.delete(rendition);
    for (const p of [...active.pending]) p.resolve({ error: e });
    active.swarm.close();
  }

  private reportP2p(e: P2pUnavailable): void {
    if (this.p2pReported) return;
    this.p2pReported = true;
    this.emit('p2p-unavailable', e);
  }

  /**
   * Points the swarm at the first of its pending segments (a player may ask for an init
   * segment and a media segment at once; the engine has one playhead): the others follow
   * as each settles.
   */
  private aimPending(rendition: number, active: Active): void {
    let first: Pending | null = null;
    for (const p of active.pending) if (!first || p.ref.start < first.ref.start) first = p;
    if (first) this.aim({ ...first.ref, rendition }, first.patientUntil, active);
  }

  /**
   * Points the rendition's swarm at `ref`: playback needs it now (or, `patientUntil`, by
   * then), the next segments soon.
   */
  private aim(ref: SegmentRef, patientUntil: number | null, active: Active): void {
    const r = this.vodRendition(ref.rendition);
    if (!r) return;
    const cs = r.chunkSize;
    const first = Math.floor(ref.start / cs);
    const end = Math.ceil(ref.end / cs);
    const segmentChunks = Math.max(1, end - first);
    const swarm = active.swarm;
    swarm.setPlayhead(first);
    swarm.setReadAhead(segmentChunks * (1 + this.options.readAheadSegments), segmentChunks);
    const missing = Math.floor(swarm.verifiedEnd(ref.start) / cs);
    const slackMs = patientUntil === null ? null : Math.max(0, patientUntil - performance.now());
    if (missing < end) swarm.setWaitingFor({ start: missing, end }, slackMs);
    // Other renditions of the same kind are not being played: they fetch nothing more
    // (and serve what they hold).
    for (const [i, other] of this.active) {
      if (i !== ref.rendition && other.pending.size === 0 && this.manifest.renditions[i]!.kind === r.kind) other.swarm.setReadAhead(1, 1);
    }
  }

  /** Settles the rendition's loads whose bytes are all verified; reports progress of the rest. */
  private check(rendition: number): void {
    const active = this.active.get(rendition);
    if (!active) return;
    for (const p of [...active.pending]) {
      const verified = active.swarm.verifiedEnd(p.ref.start);
      if (verified >= p.ref.end) {
        const ms = performance.now() - p.startedAt;
        let bytes: Uint8Array;
        try {
          bytes = active.swarm.read(p.ref.start, p.ref.end);
        } catch (err) {
          p.resolve({ error: err instanceof PpsppError ? err : new PpsppError('closed', messageOf(err)) });
          continue;
        }
        this.segments.set(rendition, (this.segments.get(rendition) ?? 0) + 1);
        // Time the web server was held back for peers still connecting is not the network's.
        const networkMs = Math.max(0, ms - (active.swarm.originHeldMs() - p.heldAtStart));
        this.goodput.sample(p.missingAtStart, networkMs);
        p.resolve({ bytes, ms, reportedMs: this.goodput.reportedMs(bytes.length, networkMs) });
        this.emit('segment-loaded', { rendition, start: p.ref.start, end: p.ref.end, ms });
      } else {
        p.onProgress?.(Math.max(0, verified - p.ref.start));
      }
    }
  }

  stats(): PresentationStats {
    const renditions = this.manifest.renditions.map((r, i): RenditionStats => {
      const a = this.active.get(i);
      const s = this.live ? this.live.renditionStats(i) : a ? a.swarm.stats() : this.finalStats.get(i);
      return {
        id: r.id,
        kind: r.kind,
        active: this.live ? this.live.isActive(i) : a !== undefined,
        segmentsLoaded: this.segments.get(i) ?? 0,
        bytesFromHttp: s?.bytesFromHttp ?? 0,
        bytesFromPeers: s?.bytesFromPeers ?? 0,
        bytesFromSeeders: s?.bytesFromSeeders ?? 0,
        httpBytesReceived: s?.httpBytesReceived ?? 0,
        bytesUploaded: s?.bytesUploaded ?? 0,
      };
    });
    const sum = (k: keyof DeliveryFigures): number => renditions.reduce((a, r) => a + r[k], 0);
    const verified = sum('bytesFromHttp') + sum('bytesFromPeers') + sum('bytesFromSeeders');
    return {
      segmentsLoaded: sum('segmentsLoaded'),
      bytesFromHttp: sum('bytesFromHttp'),
      bytesFromPeers: sum('bytesFromPeers'),
      bytesFromSeeders: sum('bytesFromSeeders'),
      httpBytesReceived: sum('httpBytesReceived'),
      bytesUploaded: sum('bytesUploaded'),
      switches: this.switches,
      offload: verified > 0 ? sum('bytesFromPeers') / verified : 0,
      goodputBps: this.goodput.bytesPerMs === null ? null : this.goodput.bytesPerMs * 1000,
      renditions,
    };
  }

  /** Leaves every swarm; loads still pending settle with a `closed` error. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.spare.close();
    this.live?.close();
    for (const [i, a] of this.active) {
      for (const p of [...a.pending]) p.resolve({ error: new PpsppError('closed', 'the presentation was closed') });
      this.finalStats.set(i, a.swarm.stats());
      a.swarm.close();
    }
    this.active.clear();
    this.removeAllListeners();
  }
}
