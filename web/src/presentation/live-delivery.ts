/**
 * A live presentation's segments (`ppspp hls live`, docs/FORMATS.md, the live manifest):
 * each rendition is a signed live swarm, made when the player first asks for one of its
 * segments. A media segment the player asks for is found in the manifest (read again,
 * at a bounded rate, while the player is ahead of it), its record checked against the
 * rendition's key, and its chunks taken from peers; if peers do not deliver it within
 * `livePeerWaitMs` (at once with no peer), it is fetched whole from the web server and
 * checked under its munros before anything of it is kept. Either way the player gets
 * only what the source signed. The initialisation segment comes from the web server,
 * checked against the hash in the rendition's record, which the stream key signs.
 */
import { hasWebRtc, webRtcUnsupported } from '../connections.js';
import { PpsppError, messageOf } from '../errors.js';
import type { ResolvedPresentationOptions } from '../options.js';
import { meteredConnection } from '../player.js';
import { type P2pUnavailable, Swarm, type SwarmStats } from '../swarm.js';
import { parseUriLoaded, verifyLiveRendition } from '../wasm.js';
import { type LiveManifest, type LivePartEntry, type LiveRenditionEntry, withoutHash } from './live-manifest.js';
import { loadManifest } from './manifest.js';
import { beginRendition, renditionFailure } from './rendition-engine.js';
import type { LoadOutcome, PresentationEvents } from './presentation.js';

/** A segment of a live presentation the player asked for. */
export interface LiveSegmentRef {
  live: true;
  /** Absolute URL, without a fragment. */
  url: string;
  /** Its rendition, or null while the manifest does not name it yet. */
  rendition: number | null;
  /** The rendition's initialisation segment. */
  init: boolean;
}

/** What the presentation does for its live delivery. */
export interface LiveHooks {
  /** The player asked for a segment of `rendition` (its ABR's choice). */
  noteRendition(rendition: number): void;
  reportP2p(e: P2pUnavailable): void;
  emit<K extends keyof PresentationEvents>(type: K, payload: PresentationEvents[K]): void;
  /** A segment (media or initialisation) was verified whole: what the player's ABR is to be told it took. */
  loaded(rendition: number, missingAtStart: number, ms: number, bytes: Uint8Array): number;
  /** The options a rendition's engine starts with (the main thread once a Worker failed). */
  engineOptions(): ResolvedPresentationOptions;
  /** A Worker started ahead for the engine, if there is one. */
  spareWorker(options: ResolvedPresentationOptions): Worker | null;
  /** A rendition's engine was made. */
  engineReady(): void;
  /** A rendition's engine could not be made: why. */
  engineFailed(err: unknown): void;
}

/** The manifest is read again no more often than this while a segment waits for it. */
const REFRESH_GAP_MS = 250;
/** How often a segment waiting for peers looks whether any still holds it. */
const HOLDERS_POLL_MS = 100;
/** The most a segment no peer holds waits (at random) before it is fetched from the web server. */
const NOBODY_HOLDS_WAIT_MS = 250;

interface Pending {
  part: LivePartEntry;
  startedAt: number;
  /** Bytes of the segment not verified yet when it was asked for. */
  missingAtStart: number;
  onProgress: ((loaded: number) => void) | undefined;
  settle: (o: LoadOutcome) => void;
}

interface Active {
  swarm: Swarm;
  chunkSize: number;
  pending: Set<Pending>;
  /** Open peer connections. */
  peers: number;
  /** The verified initialisation segment, once fetched. */
  init: Uint8Array | null;
}

/** Waits `ms`. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The directory and file extension of a URL: how a segment not in the manifest yet is told from other files. */
function shapeOf(url: string): string {
  const path = url.split('?')[0]!;
  const slash = path.lastIndexOf('/');
  const name = path.slice(slash + 1);
  const dot = name.lastIndexOf('.');
  return `${path.slice(0, slash + 1)}|${dot < 0 ? '' : name.slice(dot)}`;
}

export class LiveDelivery {
  manifest: LiveManifest;
  private readonly streamKey: string;
  private readonly active = new Map<number, Active>();
  private readonly finalStats = new Map<number, SwarmStats>();
  /** Every load not settled yet (closing settles them). */
  private readonly loads = new Set<(o: LoadOutcome) => void>();
  /** Directory and extension of the manifest's segments. */
  private segmentShapes = new Set<string>();
  private refreshing: Promise<void> | null = null;
  private lastRefreshAt = 0;
  private closed = false;

  /**
   * Checks every rendition's record against the stream key; throws `bad-option` without
   * one, `bad-manifest` if a record is not the stream key's.
   */
  constructor(
    manifest: LiveManifest,
    private readonly options: ResolvedPresentationOptions,
    private readonly hooks: LiveHooks,
  ) {
    if (options.streamKey === null) {
      throw new PpsppError('bad-option', 'option streamKey is needed for a live presentation: the stream key its source prints');
    }
    this.streamKey = options.streamKey;
    if (manifest.key !== this.streamKey) {
      throw new PpsppError('bad-manifest', `${manifest.url}: the manifest is of stream key ${manifest.key.slice(0, 16)}…, not of the one given (${this.streamKey.slice(0, 16)}…)`);
    }
    for (const r of manifest.renditions) this.verify(manifest, r);
    this.manifest = manifest;
    this.noteShapes();
  }

  private verify(manifest: LiveManifest, r: LiveRenditionEntry): void {
    try {
      verifyLiveRendition(this.streamKey, r.record);
    } catch (err) {
      throw new PpsppError('bad-manifest', `${manifest.url}: ${messageOf(err)}`, { cause: err });
    }
  }

  private noteShapes(): void {
    this.segmentShapes = new Set(this.manifest.renditions.flatMap((r) => r.parts.map((p) => shapeOf(p.url))));
  }

  /** Where a request for `url` lies, or null if it is not a segment of the presentation. */
  find(url: string, _rangeStart?: number, rangeEnd?: number): LiveSegmentRef | null {
    // Live parts are whole files (the source refuses byte-range playlists).
    if (rangeEnd !== undefined && rangeEnd > 0) return null;
    let key: string;
    try {
      key = withoutHash(new URL(url, typeof document !== 'undefined' ? document.baseURI : undefined).href);
    } catch {
      return null;
    }
    const found = this.locate(key);
    if (found) return { live: true, url: key, rendition: found.rendition, init: found.part === null };
    // A segment newer than the manifest read last: it names it soon.
    if (!this.manifest.ended && this.segmentShapes.has(shapeOf(key))) return { live: true, url: key, rendition: null, init: false };
    return null;
  }

  /** The rendition and part (null: the initialisation segment) at `url` in the manifest. */
  private locate(url: string): { rendition: number; part: LivePartEntry | null } | null {
    const renditions = this.manifest.renditions;
    for (let i = 0; i < renditions.length; i++) {
      if (renditions[i]!.init?.url === url) return { rendition: i, part: null };
    }
    for (let i = 0; i < renditions.length; i++) {
      const part = renditions[i]!.parts.find((p) => p.url === url || p.url.split('?')[0] === url.split('?')[0]);
      if (part) return { rendition: i, part };
    }
    return null;
  }

  /** The verified bytes of segment `ref`. Settles always, as `Presentation.load`. */
  load(ref: LiveSegmentRef, opts: { signal?: AbortSignal; timeoutMs: number; onProgress?: (loaded: number) => void }): Promise<LoadOutcome> {
    if (this.closed) return Promise.resolve({ error: new PpsppError('closed', 'the presentation was closed') });
    if (opts.signal?.aborted) return Promise.resolve({ aborted: true });
    return new Promise<LoadOutcome>((resolve) => {
      const cleanups: (() => void)[] = [];
      let done = false;
      const settle = (o: LoadOutcome): void => {
        if (done) return;
        done = true;
        for (const c of cleanups) c();
        resolve(o);
      };
      const timer = setTimeout(() => settle({ timedOut: true }), opts.timeoutMs);
      const onAbort = (): void => settle({ aborted: true });
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.loads.add(settle);
      cleanups.push(
        () => clearTimeout(timer),
        () => opts.signal?.removeEventListener('abort', onAbort),
        () => this.loads.delete(settle),
      );
      this.run(ref, opts.onProgress, settle, cleanups, () => done).catch((err: unknown) =>
        settle({ error: err instanceof PpsppError ? err : new PpsppError('closed', messageOf(err)) }),
      );
    });
  }

  private async run(
    ref: LiveSegmentRef,
    onProgress: ((loaded: number) => void) | undefined,
    settle: (o: LoadOutcome) => void,
    cleanups: (() => void)[],
    done: () => boolean,
  ): Promise<void> {
    let found = this.locate(ref.url);
    while (!found) {
      if (this.manifest.ended || this.closed) {
        settle({ error: new PpsppError('bad-manifest', `${ref.url} is not a segment of the live manifest, and the stream ended`) });
        return;
      }
      await this.refresh();
      if (done()) return;
      found = this.locate(ref.url);
    }
    const { rendition, part } = found;
    this.hooks.noteRendition(rendition);
    const active = this.activate(rendition);
    if (part === null) {
      await this.loadInit(rendition, active, settle, cleanups, done);
      return;
    }
    await active.swarm.checkLivePart(part.record);
    if (done()) return;
    const startedAt = performance.now();
    const p: Pending = {
      part,
      startedAt,
      missingAtStart: this.missingBytes(active, part),
      onProgress,
      settle,
    };
    active.pending.add(p);
    cleanups.push(() => {
      active.pending.delete(p);
      this.aim(rendition, active);
    });
    this.aim(rendition, active);
    this.check(rendition);
    if (done()) return;
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | null = null;
    cleanups.push(() => {
      if (timer !== null) clearTimeout(timer);
      controller.abort();
    });
    // Peers that hold the segment get `livePeerWaitMs` to deliver it. With none holding it
    // yet, a moment's wait lets a peer that is fetching it from the web server say so
    // (pages that ask at once would all fetch it); with no peer at all, none.
    const decide = async (): Promise<void> => {
      timer = null;
      if (done()) return;
      const holders = await active.swarm.peersHolding(part.firstChunk);
      if (done()) return;
      const waited = performance.now() - startedAt;
      if (holders > 0 && waited < this.options.livePeerWaitMs) {
        timer = setTimeout(() => void decide(), Math.min(HOLDERS_POLL_MS, this.options.livePeerWaitMs - waited));
        return;
      }
      void this.fromHttp(rendition, active, part, controller.signal);
    };
    const nobodyHolds = active.peers > 0 && (await active.swarm.peersHolding(part.firstChunk)) === 0;
    if (done()) return;
    const jitter = nobodyHolds ? Math.random() * Math.min(NOBODY_HOLDS_WAIT_MS, this.options.livePeerWaitMs) : 0;
    timer = setTimeout(() => void decide(), jitter);
  }

  /** Reads the manifest again (at most every {@link REFRESH_GAP_MS}); never rejects. */
  private refresh(): Promise<void> {
    if (this.refreshing) return this.refreshing;
    const gap = Math.max(0, this.lastRefreshAt + REFRESH_GAP_MS - performance.now());
    this.refreshing = sleep(gap)
      .then(() => loadManifest(this.manifest.url, this.options.manifestTimeoutMs))
      .then(
        (m) => this.take(m.type === 'live' ? m : null),
        () => {
          // Not reachable now: the segments waiting for it try again, within their own time.
        },
      )
      .finally(() => {
        this.lastRefreshAt = performance.now();
        this.refreshing = null;
      });
    return this.refreshing;
  }

  /** A manifest read again: taken if it is of the same renditions, each record the stream key's. */
  private take(m: LiveManifest | null): void {
    if (this.closed) return;
    const old = this.manifest;
    const same = m !== null && m.key === old.key && m.renditions.length === old.renditions.length && m.renditions.every((r, i) => r.id === old.renditions[i]!.id);
    if (!m || !same) {
      this.hooks.emit('error', new PpsppError('verification-failed', `${old.url}: read again, it is not the same live presentation; kept the one read before`));
      return;
    }
    try {
      m.renditions.forEach((r, i) => {
        if (r.record.signature !== old.renditions[i]!.record.signature) this.verify(m, r);
      });
    } catch (err) {
      this.hooks.emit('error', new PpsppError('verification-failed', `${messageOf(err)}; kept the manifest read before`));
      return;
    }
    m.renditions.forEach((r, i) => {
      const a = this.active.get(i);
      // A new initialisation segment (the packager restarted) is fetched again.
      if (a && (r.init?.hash ?? null) !== (old.renditions[i]!.init?.hash ?? null)) a.init = null;
    });
    this.manifest = m;
    this.noteShapes();
  }

  /** The rendition's swarm, made on first use. */
  private activate(rendition: number): Active {
    const found = this.active.get(rendition);
    if (found) return found;
    const r = this.manifest.renditions[rendition]!;
    const content = parseUriLoaded(r.swarm);
    const o = this.options;
    let signal: readonly string[] | null = o.signal === false || o.signal === undefined ? null : o.signal;
    if (signal !== null && !hasWebRtc()) {
      signal = null;
      this.hooks.reportP2p(webRtcUnsupported());
    }
    const engineOptions = this.hooks.engineOptions();
    const begun = beginRendition(r.id, engineOptions, r.swarm, content, {}, null, signal === null, this.hooks.spareWorker(engineOptions));
    const swarm = new Swarm(begun.engine, content, { signal, options: o, seeding: false });
    const active: Active = { swarm, chunkSize: content.chunkSize, pending: new Set(), peers: 0, init: null };
    this.active.set(rendition, active);
    // Loads waiting on the engine fail with it (the player tries them again); the next
    // makes the swarm again.
    begun.ready.then(() => this.hooks.engineReady(), (err: unknown) => {
      if (this.active.get(rendition) !== active) return;
      this.hooks.engineFailed(err);
      this.active.delete(rendition);
      const e = renditionFailure(r.id, err);
      for (const p of [...active.pending]) p.settle({ error: e });
      active.swarm.close();
    });
    swarm.on('chunk-verified', () => this.check(rendition));
    swarm.on('peer-joined', () => (active.peers += 1));
    swarm.on('peer-left', () => (active.peers = Math.max(0, active.peers - 1)));
    swarm.on('p2p-unavailable', (e) => this.hooks.reportP2p(e));
    swarm.on('error', (e) => this.hooks.emit('error', Object.assign(e, { rendition })));
    if (o.upload === false || (o.upload === 'auto' && meteredConnection())) swarm.setUploading(false);
    // The web server carries what peers do not: nothing waits for signaling.
    swarm.start({ background: true }).catch((err: unknown) => {
      this.hooks.emit('error', Object.assign(err instanceof PpsppError ? err : new PpsppError('signaling-unreachable', messageOf(err)), { rendition }));
    });
    return active;
  }

  /** The initialisation segment from the web server, checked against the record's hash. */
  private async loadInit(rendition: number, active: Active, settle: (o: LoadOutcome) => void, cleanups: (() => void)[], done: () => boolean): Promise<void> {
    const init = this.manifest.renditions[rendition]!.init!;
    if (!active.init) {
      const controller = new AbortController();
      cleanups.push(() => controller.abort());
      const startedAt = performance.now();
      let data: Uint8Array;
      try {
        data = await this.fetchWhole(init.url, controller.signal);
      } catch (err) {
        if (!done()) settle({ error: err instanceof PpsppError ? err : new PpsppError('origin-unreachable', messageOf(err)) });
        return;
      }
      if (done()) return;
      const matches = await active.swarm.liveInitMatches(init.length, init.hash, data);
      if (done()) return;
      if (!matches) {
        this.hooks.emit('origin-corrupt', { rendition, chunk: -1, reason: `${init.url}: not the initialisation segment the stream key signed` });
        settle({ error: new PpsppError('verification-failed', `${init.url}: not the initialisation segment the stream key signed`) });
        return;
      }
      active.init = data;
      const ms = performance.now() - startedAt;
      settle({ bytes: data, ms, reportedMs: this.hooks.loaded(rendition, data.length, ms, data) });
      return;
    }
    settle({ bytes: active.init, ms: 0, reportedMs: this.hooks.loaded(rendition, 0, 0, active.init) });
  }

  /** GETs `url` whole; throws an `origin-*` error naming what failed. */
  private async fetchWhole(url: string, signal: AbortSignal): Promise<Uint8Array> {
    let response: Response;
    try {
      response = await fetch(url, { signal });
    } catch (err) {
      throw new PpsppError('origin-unreachable', `${url}: ${messageOf(err)}`, { cause: err });
    }
    if (!response.ok) throw new PpsppError('origin-status', `${url}: HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }

  /** A segment peers did not deliver in time, from the web server; refused unless the source signed it. */
  private async fromHttp(rendition: number, active: Active, part: LivePartEntry, signal: AbortSignal): Promise<void> {
    if (active.swarm.firstMissing(part.firstChunk) >= part.firstChunk + part.chunks) return;
    let data: Uint8Array;
    try {
      data = await this.fetchWhole(part.url, signal);
    } catch (err) {
      if (!signal.aborted && err instanceof PpsppError) this.hooks.emit('error', Object.assign(err, { rendition }));
      return;
    }
    if (signal.aborted || this.closed) return;
    try {
      await active.swarm.handleLivePart(part.record, data);
    } catch (err) {
      // Peers may still deliver it, within the load's time.
      this.hooks.emit('origin-corrupt', { rendition, chunk: part.firstChunk, reason: messageOf(err) });
      return;
    }
    this.check(rendition);
  }

  private missingBytes(active: Active, part: LivePartEntry): number {
    const held = active.swarm.firstMissing(part.firstChunk) - part.firstChunk;
    return Math.max(0, part.length - held * active.chunkSize);
  }

  /**
   * Points the swarm at the first of its pending segments, with the next
   * `readAheadSegments` of it; renditions of the same kind not played fetch nothing more.
   */
  private aim(rendition: number, active: Active): void {
    if (this.closed) return;
    let first: Pending | null = null;
    for (const p of active.pending) if (!first || p.part.firstChunk < first.part.firstChunk) first = p;
    if (!first) return;
    active.swarm.setPlayhead(first.part.firstChunk);
    active.swarm.setReadAhead(first.part.chunks * (1 + this.options.readAheadSegments), 0);
    const kind = this.manifest.renditions[rendition]!.kind;
    for (const [i, other] of this.active) {
      if (i !== rendition && other.pending.size === 0 && this.manifest.renditions[i]!.kind === kind) other.swarm.setReadAhead(1, 0);
    }
  }

  /** Settles the rendition's loads whose chunks are all verified; reports progress of the rest. */
  private check(rendition: number): void {
    const active = this.active.get(rendition);
    if (!active) return;
    for (const p of [...active.pending]) {
      const { firstChunk, chunks, length } = p.part;
      const missing = active.swarm.firstMissing(firstChunk);
      if (missing < firstChunk + chunks) {
        p.onProgress?.(Math.min(length, (missing - firstChunk) * active.chunkSize));
        continue;
      }
      const bytes = new Uint8Array(length);
      let at = 0;
      for (let c = firstChunk; c < firstChunk + chunks; c++) {
        const chunk = active.swarm.readChunk(c);
        if (!chunk || at + chunk.length > length) break;
        bytes.set(chunk, at);
        at += chunk.length;
      }
      if (at !== length) {
        p.settle({ error: new PpsppError('closed', `${p.part.url}: its chunks left the stream's window before it was read`) });
        continue;
      }
      const ms = performance.now() - p.startedAt;
      const reportedMs = this.hooks.loaded(rendition, p.missingAtStart, ms, bytes);
      p.settle({ bytes, ms, reportedMs });
    }
  }

  /** The figures of rendition `i`'s swarm (undefined: never made). */
  renditionStats(i: number): SwarmStats | undefined {
    return this.active.get(i)?.swarm.stats() ?? this.finalStats.get(i);
  }

  isActive(i: number): boolean {
    return this.active.has(i);
  }

  /** Leaves every swarm; loads still pending settle with a `closed` error. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const settle of [...this.loads]) settle({ error: new PpsppError('closed', 'the presentation was closed') });
    for (const [i, a] of this.active) {
      this.finalStats.set(i, a.swarm.stats());
      a.swarm.close();
    }
    this.active.clear();
  }
}
