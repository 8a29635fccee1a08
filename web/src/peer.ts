/**
 * The lower-level API: fetch any content from a swarm (bytes or a stream), or seed bytes
 * you have. Every byte it returns was verified against the URI's Merkle root.
 */
import { requireWebRtc } from './connections.js';
import { isRootHex, uriFor } from './discover.js';
import { Emitter } from './emitter.js';
import { PpsppError, messageOf } from './errors.js';
import { type PeerOptions, type ResolvedPeerOptions, checkSignalUrl, resolvePeerOptions } from './options.js';
import { Swarm, type SwarmEvents, type SwarmStats } from './swarm.js';
import { type ContentInfo, PeerOptions as WasmOptions, WasmPeer, loadWasm, parseUriLoaded } from './wasm.js';

/** What {@link Peer} emits: the swarm events, each with the swarm's root. */
export type PeerEvents = {
  [K in keyof SwarmEvents]: K extends 'error' ? SwarmEvents[K] : SwarmEvents[K] & { root: string };
};

export interface SeedOptions {
  /** Signaling server for the URI and for peers to meet at (else the peer's `signal` option). */
  signal?: string;
  /** Chunk size in bytes (default 8192). */
  chunkSize?: number;
  /** Merkle hash function (default sha256). */
  hash?: 'sha1' | 'sha256';
  /** File name for the URI. */
  name?: string;
}

/** Wasm engine settings from resolved options (shared with the Player). */
export function engineOptions(options: ResolvedPeerOptions, extra: { vodWindow?: number; urgentPriority?: number } = {}): WasmOptions {
  const o = new WasmOptions();
  o.upload_limit = options.uploadLimit;
  o.download_limit = options.downloadLimit;
  o.max_peers = options.maxConnections;
  o.priority = options.priority;
  o.urgent_priority = extra.urgentPriority ?? 0;
  o.vod_window = extra.vodWindow ?? 0;
  o.stats_interval_ms = 0;
  o.timer_granularity_ms = 4;
  const seed = new Uint32Array(2);
  crypto.getRandomValues(seed);
  o.seed_lo = seed[0] ?? 0;
  o.seed_hi = seed[1] ?? 0;
  // DATA timestamps on the Unix epoch, as libswift peers expect.
  o.time_origin_ms = performance.timeOrigin;
  return o;
}

/** The signaling URL to use: the option, else the URI's. */
export function signalFor(options: ResolvedPeerOptions, content: ContentInfo): string {
  const url = options.signal ?? content.signal;
  if (url === undefined) {
    throw new PpsppError('bad-option', 'no signaling server: the URI has no signal= parameter and no signal option was given');
  }
  return checkSignalUrl(url, 'the signaling URL');
}

export class Peer extends Emitter<PeerEvents> {
  private readonly swarms = new Map<string, Swarm>();
  private closed = false;

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
    const types: (keyof SwarmEvents)[] = ['peer-joined', 'peer-left', 'chunk-verified', 'chunk-rejected', 'progress', 'complete', 'stats'];
    for (const type of types) {
      swarm.on(type, (payload) => this.emit(type, { ...(payload as object), root } as never));
    }
    swarm.on('error', (err) => this.emit('error', err));
  }

  private async join(engine: WasmPeer, content: ContentInfo, seeding: boolean): Promise<Swarm> {
    const existing = this.swarms.get(content.root);
    if (existing) {
      engine.free();
      return existing;
    }
    let swarm: Swarm;
    try {
      swarm = new Swarm(engine, content, signalFor(this.options, content), this.options, seeding);
    } catch (err) {
      engine.free();
      throw err;
    }
    this.swarms.set(content.root, swarm);
    this.forward(swarm);
    try {
      await swarm.start();
    } catch (err) {
      this.swarms.delete(content.root);
      swarm.close();
      throw err;
    }
    return swarm;
  }

  private async swarmFor(uriOrRoot: string): Promise<Swarm> {
    this.check();
    if (isRootHex(uriOrRoot)) {
      const existing = this.swarms.get(uriOrRoot.trim().toLowerCase());
      if (existing) return existing;
    }
    const uri = await uriFor(uriOrRoot, this.options);
    this.check();
    const content = parseUriLoaded(uri);
    const existing = this.swarms.get(content.root);
    if (existing) return existing;
    signalFor(this.options, content);
    let engine: WasmPeer;
    try {
      engine = WasmPeer.fetcher(uri, engineOptions(this.options), performance.now());
    } catch (err) {
      throw new PpsppError('bad-uri', messageOf(err), { cause: err });
    }
    return this.join(engine, content, false);
  }

  /**
   * Fetches the content and resolves with all of it, verified. The peer keeps seeding it
   * to others until {@link close}. `uri` may also be just the root hash in hex, with the
   * `signal` option set: the chunk size and length are then learnt from the peers first
   * (rejects with `no-peers` if none can say within 30 s).
   */
  async fetch(uri: string): Promise<Uint8Array> {
    const swarm = await this.swarmFor(uri);
    if (!swarm.complete) {
      await new Promise<void>((resolve, reject) => {
        const done = (): void => {
          swarm.off('complete', done);
          clearInterval(poll);
          resolve();
        };
        swarm.on('complete', done);
        // The swarm may be closed under us (peer.close()): stop waiting then.
        const poll = setInterval(() => {
          if (this.closed) {
            clearInterval(poll);
            reject(new PpsppError('closed', 'the peer was closed before the download completed'));
          }
        }, 250);
      });
    }
    return swarm.read(0, swarm.content.length);
  }

  /** The content as a stream of verified bytes, in order, as soon as they arrive (`uri`: as for {@link fetch}). */
  stream(uri: string): ReadableStream<Uint8Array> {
    let swarm: Swarm | null = null;
    let offset = 0;
    let wake: (() => void) | null = null;
    const onData = (): void => {
      wake?.();
      wake = null;
    };
    return new ReadableStream<Uint8Array>({
      start: async () => {
        swarm = await this.swarmFor(uri);
        swarm.on('chunk-verified', onData);
      },
      pull: async (controller) => {
        const s = swarm;
        if (!s) return;
        const { chunkSize, length } = s.content;
        for (;;) {
          if (this.closed) throw new PpsppError('closed', 'the peer was closed');
          const end = s.verifiedEnd(offset);
          if (end > offset) {
            controller.enqueue(s.read(offset, end));
            offset = end;
            if (offset >= length) {
              s.off('chunk-verified', onData);
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
      cancel: () => {
        swarm?.off('chunk-verified', onData);
      },
    });
  }

  /**
   * Seeds `data`: hashes it, joins its swarm and serves it. Resolves with its URI, which
   * others pass to `fetch` or `Player.attach`.
   */
  async seed(data: Uint8Array, options: SeedOptions = {}): Promise<string> {
    this.check();
    const signal = options.signal ?? this.options.signal;
    if (signal === undefined) throw new PpsppError('bad-option', 'seed needs a signaling server: pass { signal: "ws://…" }');
    checkSignalUrl(signal);
    const chunkSize = options.chunkSize ?? 8192;
    if (!Number.isInteger(chunkSize) || chunkSize < 1 || chunkSize > 65536) {
      throw new PpsppError('bad-option', `chunkSize must be a whole number of bytes from 1 to 65536, not ${chunkSize}`);
    }
    if (data.length === 0) throw new PpsppError('bad-option', 'cannot seed empty content');
    let engine: WasmPeer;
    try {
      engine = WasmPeer.seeder(data, chunkSize, options.hash ?? 'sha256', signal, options.name, engineOptions(this.options), performance.now());
    } catch (err) {
      throw new PpsppError('bad-option', messageOf(err), { cause: err });
    }
    const uri = engine.uri();
    const content = parseUriLoaded(uri);
    await this.join(engine, content, true);
    return uri;
  }

  /** Figures of the swarm of `uri` (or of the only swarm), or null if there is none. */
  stats(uri?: string): SwarmStats | null {
    const swarm = uri === undefined ? this.swarms.values().next().value : this.swarms.get(parseUriLoaded(uri).root);
    return swarm ? swarm.stats() : null;
  }

  /** Verified chunk ranges of `uri`'s content. */
  have(uri: string): [number, number][] {
    return this.swarms.get(parseUriLoaded(uri).root)?.haveRanges() ?? [];
  }

  /** Selected ICE candidate pairs of every connection (for tests and diagnostics). */
  async selectedPairs(): Promise<{ local: string; remote: string }[]> {
    const all = await Promise.all([...this.swarms.values()].map((s) => s.selectedPairs()));
    return all.flat();
  }

  /** Leaves every swarm and frees the engines. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const swarm of this.swarms.values()) swarm.close();
    this.swarms.clear();
  }
}
