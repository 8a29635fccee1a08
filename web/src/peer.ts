/**
 * The lower-level API: fetch any content from a swarm (bytes or a stream), or seed bytes
 * you have. Every byte it returns was verified against the URI's Merkle root.
 */
import { requireWebRtc, type SelectedPair } from './connections.js';
import { isRootHex, uriFor } from './discover.js';
import { Emitter } from './emitter.js';
import { PpsppError, abortReason, fatal } from './errors.js';
import type { HttpOriginSettings } from './http-origin.js';
import { type PeerOptions, type ResolvedPeerOptions, checkSignalUrl, checkSignalUrls, resolveHttpOrigin, resolvePeerOptions } from './options.js';
import { Swarm, type SwarmEvents, type SwarmStats } from './swarm.js';
import { startEngine } from './engine-start.js';
import { type ContentInfo, type WasmPeer, loadWasm, parseUriLoaded } from './wasm.js';
import type { WorkerEngine } from './worker-engine.js';

/** What {@link Peer} emits: the swarm events, each with the swarm's root. */
export type PeerEvents = {
  [K in keyof SwarmEvents]: K extends 'error' ? SwarmEvents[K] : SwarmEvents[K] & { root: string };
};

export interface SeedOptions {
  /**
   * Signaling server for the URI and for peers to meet at (else the peer's `signal`
   * option). Several: peers meet at the first that answers; the URI names the first.
   */
  signal?: string | readonly string[];
  /** Chunk size in bytes (default 8192). */
  chunkSize?: number;
  /** Merkle hash function (default sha256). */
  hash?: 'sha1' | 'sha256';
  /** File name for the URI. */
  name?: string;
}

export interface FetchOptions {
  /**
   * Aborts the fetch (the web platform's `AbortSignal`, as for `fetch()`; not to be mixed
   * up with the `signal` option of `Peer.create`, the signaling server): it rejects with
   * `signal.reason`, and the download stops. See {@link Peer.fetch}.
   */
  signal?: AbortSignal;
}

/** A swarm of this peer, and who uses it. */
interface Joined {
  swarm: Swarm;
  /** Settles once the swarm has joined signaling (rejects, fatal, if it could not). */
  started: Promise<void>;
  /** Calls waiting on it now (fetch, stream). */
  users: number;
  /** Joined by `seed`: it stays until `close()`. */
  seeding: boolean;
}

/** Settles a {@link Peer.guard}ed wait. */
interface Settle {
  resolve(): void;
  reject(err: unknown): void;
}

/** The `signal` of fetch's options, checked: an AbortSignal, not a signaling URL. */
function abortSignalOption(options: FetchOptions | undefined): AbortSignal | undefined {
  const signal: unknown = options?.signal;
  if (signal === undefined) return undefined;
  const s = signal as Partial<AbortSignal> | null;
  if (typeof s !== 'object' || s === null || typeof s.aborted !== 'boolean' || typeof s.addEventListener !== 'function') {
    throw new PpsppError(
      'bad-option',
      "fetch's signal option must be an AbortSignal (the signaling server is Peer.create's signal option)",
    );
  }
  return s as AbortSignal;
}

/**
 * The signaling URL of a swarm with HTTP origin `origin`: as {@link signalFor}, but null
 * (an HTTP-only swarm) when there is an origin and no signaling server, or `signal: false`.
 */
export function signalWithOrigin(
  options: ResolvedPeerOptions,
  content: ContentInfo,
  origin: HttpOriginSettings | null,
): readonly string[] | null {
  if (origin && (options.signal === false || (options.signal === undefined && content.signal === undefined))) return null;
  return signalFor(options, content);
}

/** The signaling URLs to use: the option's, else the URI's. */
export function signalFor(options: ResolvedPeerOptions, content: ContentInfo): readonly string[] {
  if (options.signal === false) {
    throw new PpsppError('bad-option', 'signal: false (HTTP only) needs an HTTP origin: the URI has no http= and tree= parameters and no httpOrigin option was given');
  }
  if (options.signal !== undefined) return options.signal;
  if (content.signal === undefined) {
    throw new PpsppError('bad-option', 'no signaling server: the URI has no signal= parameter and no signal option was given');
  }
  return [checkSignalUrl(content.signal, 'the signaling URL')];
}

export class Peer extends Emitter<PeerEvents> {
  private readonly swarms = new Map<string, Joined>();
  private closed = false;
  /** Aborted by {@link close}: what pending calls wait on besides their own signal. */
  private readonly closing = new AbortController();

  private constructor(private readonly options: ResolvedPeerOptions) {
    super();
  }

  /**
   * Checks the options and loads the WebAssembly module. Rejects with `bad-option`,
   * `webrtc-unsupported` or `wasm-load-failed`.
   */
  static async create(options: PeerOptions = {}): Promise<Peer> {
    const resolved = resolvePeerOptions(options);
    requireWebRtc();
    await loadWasm(resolved.wasm);
    return new Peer(resolved);
  }

  /** Parses a swarm URI (throws `bad-uri` with the reason). */
  static parseUri(uri: string): ContentInfo {
    return parseUriLoaded(uri);
  }

  private check(): void {
    if (this.closed) throw new PpsppError('closed', 'this peer was closed');
  }

  private forward(swarm: Swarm): void {
    const root = swarm.content.root;
    const types: (keyof SwarmEvents)[] = [
      'peer-joined', 'peer-left', 'chunk-verified', 'chunk-rejected', 'origin-corrupt', 'progress', 'complete', 'stats',
    ];
    for (const type of types) {
      swarm.on(type, (payload) => this.emit(type, { ...(payload as object), root } as never));
    }
    swarm.on('error', (err) => this.emit('error', err));
  }

  /**
   * The swarm of `content` (the one already joined, or a new one that is joining now),
   * meeting peers at `signals` if given, else as the options and the URI say.
   */
  private join(engine: WasmPeer | WorkerEngine, content: ContentInfo, seeding: boolean, signals?: readonly string[]): Joined {
    const existing = this.swarms.get(content.root);
    if (existing) {
      engine.free();
      existing.seeding ||= seeding;
      return existing;
    }
    let swarm: Swarm;
    try {
      // A fetcher uses the URI's HTTP origin, if it names one; a seeder has everything.
      const origin = seeding ? null : resolveHttpOrigin(undefined, content);
      const signal = signals ?? signalWithOrigin(this.options, content, origin);
      swarm = new Swarm(engine, content, { signal, options: this.options, seeding, origin });
    } catch (err) {
      engine.free();
      throw err;
    }
    const joined: Joined = { swarm, started: Promise.resolve(), users: 0, seeding };
    joined.started = swarm.start().catch((err: unknown) => {
      this.leave(joined);
      throw fatal(err);
    });
    // Nobody may be waiting (a call that was aborted meanwhile): no unhandled rejection.
    joined.started.catch(() => {});
    this.swarms.set(content.root, joined);
    this.forward(swarm);
    return joined;
  }

  /** Leaves `joined`'s swarm (once; a newer swarm of the same root stays). */
  private leave(joined: Joined): void {
    if (this.swarms.get(joined.swarm.content.root) === joined) this.swarms.delete(joined.swarm.content.root);
    joined.swarm.close();
  }

  private async swarmFor(uriOrRoot: string, abort?: AbortSignal): Promise<Joined> {
    this.check();
    if (isRootHex(uriOrRoot)) {
      const existing = this.swarms.get(uriOrRoot.trim().toLowerCase());
      if (existing) return existing;
    }
    const uri = await uriFor(uriOrRoot, this.options, abort);
    this.check();
    if (abort?.aborted) throw abortReason(abort);
    const content = parseUriLoaded(uri);
    const existing = this.swarms.get(content.root);
    if (existing) return existing;
    const origin = resolveHttpOrigin(undefined, content);
    const signal = signalWithOrigin(this.options, content, origin);
    const engine = await startEngine(this.options, { kind: 'fetcher', uri }, {}, origin, signal === null);
    if (this.closed) {
      engine.free();
      this.check();
    }
    return this.join(engine, content, false);
  }

  /**
   * Waits for what `start` sets going until it calls `resolve` or `reject`, or until
   * `abort` aborts (rejects with its reason) or the peer is closed (rejects with `closed`).
   * `start` returns its clean-up, which runs in every case.
   */
  private guard(start: (settle: Settle) => () => void, abort: AbortSignal | undefined, closedMessage: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const closing = this.closing.signal;
      let cleanup = (): void => {};
      let settled = false;
      const finish = (f: () => void): void => {
        if (settled) return;
        settled = true;
        cleanup();
        abort?.removeEventListener('abort', onAbort);
        closing.removeEventListener('abort', onClose);
        f();
      };
      const onAbort = (): void => finish(() => reject(abortReason(abort as AbortSignal)));
      const onClose = (): void => finish(() => reject(new PpsppError('closed', closedMessage)));
      if (abort?.aborted) return onAbort();
      if (closing.aborted) return onClose();
      abort?.addEventListener('abort', onAbort);
      closing.addEventListener('abort', onClose);
      cleanup = start({ resolve: () => finish(resolve), reject: (err) => finish(() => reject(err)) });
      if (settled) cleanup();
    });
  }

  /**
   * Fetches the content and resolves with all of it, verified. The peer keeps seeding it
   * to others until {@link close}. `uri` may also be just the root hash in hex, with the
   * `signal` option of {@link Peer.create} set: the chunk size and length are then learnt
   * from the peers first (rejects with `no-peers` if none can say within 30 s).
   *
   * `options.signal`, an `AbortSignal`, aborts it: the call rejects with the signal's
   * reason (an `AbortError` DOMException for `controller.abort()`, a `TimeoutError` for
   * `AbortSignal.timeout()`), learning the content from the peers stops, and the swarm is
   * left unless it completed or another call (`fetch`, `stream`, `seed`) uses it. It also
   * rejects with `closed` when the peer is closed first, and with the error of a fatal
   * `error` event of its swarm (`storage-failed`).
   */
  async fetch(uri: string, options?: FetchOptions): Promise<Uint8Array> {
    const abort = abortSignalOption(options);
    if (abort?.aborted) throw abortReason(abort);
    const joined = await this.swarmFor(uri, abort);
    const { swarm } = joined;
    joined.users++;
    try {
      await this.guard(
        (settle) => {
          joined.started.then(settle.resolve, settle.reject);
          return () => {};
        },
        abort,
        'the peer was closed before the download started',
      );
      await this.guard(
        (settle) => {
          if (swarm.complete) {
            settle.resolve();
            return () => {};
          }
          const onComplete = (): void => settle.resolve();
          const onError = (err: PpsppError): void => {
            if (err.fatal) settle.reject(err);
          };
          swarm.once('complete', onComplete);
          swarm.on('error', onError);
          return () => {
            swarm.off('complete', onComplete);
            swarm.off('error', onError);
          };
        },
        abort,
        'the peer was closed before the download completed',
      );
    } finally {
      joined.users--;
      if (abort?.aborted && joined.users === 0 && !joined.seeding && !swarm.complete) this.leave(joined);
    }
    return swarm.read(0, swarm.content.length);
  }

  /** The content as a stream of verified bytes, in order, as soon as they arrive (`uri`: as for {@link fetch}). */
  stream(uri: string): ReadableStream<Uint8Array> {
    let joined: Joined | null = null;
    let offset = 0;
    let wake: (() => void) | null = null;
    const onData = (): void => {
      wake?.();
      wake = null;
    };
    const release = (): void => {
      if (!joined) return;
      joined.swarm.off('chunk-verified', onData);
      joined.users--;
      joined = null;
    };
    return new ReadableStream<Uint8Array>({
      start: async () => {
        const j = await this.swarmFor(uri);
        j.users++;
        joined = j;
        j.swarm.on('chunk-verified', onData);
        try {
          await j.started;
        } catch (err) {
          release();
          throw err;
        }
      },
      pull: async (controller) => {
        const s = joined?.swarm;
        if (!s) return;
        const { chunkSize, length } = s.content;
        for (;;) {
          if (this.closed) {
            release();
            throw new PpsppError('closed', 'the peer was closed');
          }
          const end = s.verifiedEnd(offset);
          if (end > offset) {
            controller.enqueue(s.read(offset, end));
            offset = end;
            if (offset >= length) {
              release();
              controller.close();
            }
            return;
          }
          s.setPlayhead(Math.floor(offset / chunkSize));
          await new Promise<void>((resolve) => {
            wake = resolve;
            setTimeout(resolve, 1000);
          });
        }
      },
      cancel: () => release(),
    });
  }

  /**
   * Seeds `data`: hashes it, joins its swarm and serves it. Resolves with its URI, which
   * others pass to `fetch` or `Player.attach`.
   */
  async seed(data: Uint8Array, options: SeedOptions = {}): Promise<string> {
    this.check();
    const signals = options.signal === undefined ? this.options.signal : checkSignalUrls(options.signal);
    if (signals === undefined || signals === false) {
      throw new PpsppError('bad-option', 'seed needs a signaling server: pass { signal: "ws://…" }');
    }
    // The URI names one server; the swarm meets at the first that answers.
    const signal = signals[0] as string;
    const chunkSize = options.chunkSize ?? 8192;
    if (!Number.isInteger(chunkSize) || chunkSize < 1 || chunkSize > 65536) {
      throw new PpsppError('bad-option', `chunkSize must be a whole number of bytes from 1 to 65536, not ${chunkSize}`);
    }
    if (data.length === 0) throw new PpsppError('bad-option', 'cannot seed empty content');
    const engine = await startEngine(
      this.options,
      { kind: 'seeder', data, chunkSize, hash: options.hash ?? 'sha256', signal, name: options.name ?? null },
      {},
      null,
      false,
    );
    if (this.closed) {
      engine.free();
      this.check();
    }
    const uri = engine.uri();
    const content = parseUriLoaded(uri);
    await this.join(engine, content, true, signals).started;
    return uri;
  }

  /** Figures of the swarm of `uri` (or of the only swarm), or null if there is none. */
  stats(uri?: string): SwarmStats | null {
    const joined = uri === undefined ? this.swarms.values().next().value : this.swarms.get(parseUriLoaded(uri).root);
    return joined ? joined.swarm.stats() : null;
  }

  /** Verified chunk ranges of `uri`'s content. */
  have(uri: string): [number, number][] {
    return this.swarms.get(parseUriLoaded(uri).root)?.swarm.haveRanges() ?? [];
  }

  /** Selected ICE candidate pairs of every connection (for tests and diagnostics). */
  async selectedPairs(): Promise<SelectedPair[]> {
    const all = await Promise.all([...this.swarms.values()].map((j) => j.swarm.selectedPairs()));
    return all.flat();
  }

  /** Leaves every swarm and frees the engines; pending `fetch` calls reject with `closed`. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const joined = [...this.swarms.values()];
    this.swarms.clear();
    this.closing.abort(new PpsppError('closed', 'the peer was closed'));
    for (const j of joined) j.swarm.close();
  }
}
