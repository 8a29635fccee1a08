/**
 * Loading the engine's WebAssembly module (built by wasm-pack into ../wasm/) and the
 * shapes of the plain objects it returns (crates/ppspp-wasm/src/convert.rs builds them).
 */
import init, { WasmDiscovery, WasmPeer, PeerOptions, parseUri as wasmParseUri } from '../wasm/ppspp_wasm.js';
import { PpsppError, messageOf } from './errors.js';

export { WasmDiscovery, WasmPeer, PeerOptions };

let loading: Promise<void> | null = null;
let loaded = false;

/**
 * Loads the module once per page. `source` overrides where it comes from (a URL, or the
 * bytes); by default it sits next to the package's JavaScript, which bundlers such as Vite
 * resolve by themselves.
 */
export function loadWasm(source?: string | URL | BufferSource | WebAssembly.Module): Promise<void> {
  if (loading) return loading;
  loading = (source === undefined ? init() : init({ module_or_path: source })).then(
    () => {
      loaded = true;
    },
    (err: unknown) => {
      loading = null;
      throw new PpsppError('wasm-load-failed', `cannot load the ppspp WebAssembly module: ${messageOf(err)}`, {
        cause: err,
      });
    },
  );
  return loading;
}

/** True once {@link loadWasm} has finished. */
export function wasmLoaded(): boolean {
  return loaded;
}

/** What a swarm URI says about its content. */
export interface ContentInfo {
  /** The Merkle root in hex: the swarm ID. */
  root: string;
  hash: string;
  chunkSize: number;
  /** Content length in bytes. */
  length: number;
  /** Signaling server URL, if the URI names one. */
  signal?: string;
  /** Native peers speaking PPSPP over UDP (browsers cannot use them). */
  udp: string[];
  name?: string;
}

/** Throws `PpsppError('bad-uri')`; the module must be loaded. */
export function parseUriLoaded(uri: string): ContentInfo {
  try {
    return wasmParseUri(uri) as ContentInfo;
  } catch (err) {
    throw new PpsppError('bad-uri', `not a usable swarm URI: ${messageOf(err)}`, { cause: err });
  }
}

/** The engine's figures (`peer.stats()`). */
export interface EngineStats {
  chunksHave: number;
  chunkCount: number;
  bytesDownloaded: number;
  bytesDuplicate: number;
  bytesUploaded: number;
  chunksVerified: number;
  chunksRejected: number;
  datagramsSent: number;
  datagramsReceived: number;
  datagramsDropped: number;
  retransmissions: number;
  peers: number;
}

/** One channel's figures. */
export interface ChannelStats {
  peer: number;
  established: boolean;
  state: 'ping-pong' | 'slow-start' | 'avoidance' | 'keep-alive';
  cwnd: number;
  rttMs: number;
  /** LEDBAT's one-way queuing delay estimate, once known. */
  queuingDelayMs: number | null;
  priority: number;
  inFlight: number;
  requestsOutstanding: number;
  /** The peer chokes us (we may not ask it for chunks now), and we choke it. */
  chokedByPeer: boolean;
  choking: boolean;
  serveQueue: number;
  peerChunks: number;
  bytesUploaded: number;
  bytesDownloaded: number;
}

export type EngineEvent =
  | { type: 'peer-connected'; peer: number }
  | { type: 'peer-closed'; peer: number; reason: string; message: string }
  | { type: 'peer-discovered'; peer: number }
  | { type: 'chunk-verified'; chunk: number; peer: number }
  | { type: 'chunk-rejected'; chunk: number; peer: number; reason: string }
  | { type: 'progress'; have: number; total: number }
  | { type: 'complete' }
  | { type: 'store-failed'; chunk: number; message: string }
  | { type: 'stats'; stats: EngineStats };
