/**
 * Loading the engine's WebAssembly module (built by wasm-pack into ../wasm/) and the
 * shapes of the plain objects it returns (crates/ppspp-wasm/src/convert.rs builds them).
 *
 * Those shapes are written by hand here. Each has a field table next to it (`…_FIELDS`:
 * every key and the JavaScript type of its value) that the compiler proves equal to the
 * interface: a key missing from either, an extra one, or a type that does not match is a
 * compile error. test/wasm-shapes.test.ts then checks every kind of object the real Wasm
 * build returns against the tables, so a change on the Rust side that is not made here
 * fails the tests.
 */
import init, { OriginOptions, PartMap, WasmDiscovery, WasmPeer, PeerOptions, parseUri as wasmParseUri, treeFile, verifyLiveRendition } from '../wasm/ppspp_wasm.js';
import { PpsppError, messageOf } from './errors.js';

export { OriginOptions, PartMap, WasmDiscovery, WasmPeer, PeerOptions, treeFile, verifyLiveRendition };

let loading: Promise<void> | null = null;
let loaded = false;
/** The compiled module, once loaded: an engine's Worker instantiates it without compiling again. */
let compiled: WebAssembly.Module | null = null;

/**
 * How long fetching the module may go without a byte arriving (the answer's headers, then
 * each piece of its body) before it fails: a stalled server fails the load rather than
 * leaving it waiting. A bound on the whole fetch would fail slow lines too.
 */
export const WASM_STALL_MS = 15_000;

/** Compiles the module from where `source` says (by default next to the package's JavaScript). */
async function compile(source?: string | URL | BufferSource | WebAssembly.Module): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  if (source !== undefined && !(typeof source === 'string' || source instanceof URL)) return WebAssembly.compile(source);
  const url = source ?? new URL('../wasm/ppspp_wasm_bg.wasm', import.meta.url);
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arrived = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(new Error(`${String(url)}: nothing arrived for ${WASM_STALL_MS / 1000} s`)), WASM_STALL_MS);
  };
  arrived();
  try {
    const answer = await fetch(url, { signal: controller.signal });
    if (!answer.ok) throw new Error(`${String(url)}: HTTP ${answer.status}`);
    arrived();
    // Each piece of the body that arrives puts the stall's deadline off.
    const body = answer.body?.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(piece, out) {
          arrived();
          out.enqueue(piece);
        },
      }),
    );
    const response = body ? new Response(body, { status: answer.status, headers: answer.headers }) : answer;
    // Streaming needs the server's application/wasm; anything else is compiled from the bytes.
    if (response.headers.get('content-type')?.startsWith('application/wasm')) return await WebAssembly.compileStreaming(response);
    return await WebAssembly.compile(await response.arrayBuffer());
  } catch (err) {
    throw controller.signal.aborted ? controller.signal.reason : err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Loads the module once per page (or Worker). `source` overrides where it comes from (a
 * URL, the bytes, or a compiled module); by default it sits next to the package's
 * JavaScript, which bundlers such as Vite resolve by themselves.
 */
export function loadWasm(source?: string | URL | BufferSource | WebAssembly.Module): Promise<void> {
  if (loading) return loading;
  loading = compile(source).then(async (module) => {
    await init({ module_or_path: module });
    compiled = module;
  }).then(
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

/** The compiled module once {@link loadWasm} has finished (null before). */
export function wasmModule(): WebAssembly.Module | null {
  return compiled;
}

/** True once {@link loadWasm} has finished. */
export function wasmLoaded(): boolean {
  return loaded;
}

/** The type of a JavaScript value as the field tables name it (`typeof`, with arrays and null apart). */
export type TypeTag = 'number' | 'string' | 'boolean' | 'array' | 'null' | 'undefined' | 'object';

/** The tags a value of type `V` may have (`number | null` → `'number' | 'null'`). */
type TagOf<V> = V extends number
  ? 'number'
  : V extends string
    ? 'string'
    : V extends boolean
      ? 'boolean'
      : V extends readonly unknown[]
        ? 'array'
        : V extends null
          ? 'null'
          : V extends undefined
            ? 'undefined'
            : 'object';

/**
 * A field table of `T`: every key of `T` (optional ones too), each with the tag of its
 * value or the list of tags it may have. Written as `{…} satisfies Fields<T>`, a key
 * missing, a key too many (excess property) or a tag `T` does not allow fails to compile.
 */
export type Fields<T> = { readonly [K in keyof T]-?: TagOf<T[K]> | readonly TagOf<T[K]>[] };

/** The tag of a value at run time, as {@link TypeTag} names it. */
export function typeTag(value: unknown): TypeTag {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  return t === 'number' || t === 'string' || t === 'boolean' || t === 'undefined' ? t : 'object';
}

/** What a swarm URI says about its content (`parseUri`, `WasmPeer.content()`). */
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
  /** The HTTP origin's content URL (`http=`), if the URI names one; `tree` comes with it. */
  http?: string;
  /** The HTTP origin's tree file URL (`tree=`). */
  tree?: string;
  /** A live stream (`ppspp://live/…`): then `root` is its signaling room. */
  live?: LiveInfo;
}

/** What a live URI says beyond the content fields (convert.rs `live_content_object`). */
export interface LiveInfo {
  /** The source's public key in DNSKEY form, hex: the swarm ID. */
  swarmId: string;
  /** Chunks under one signed munro; 1: every chunk signed itself (Sign All). */
  chunksPerSignature: number;
  /** The discard window, in chunks. */
  window: number;
  /** The media's initialisation segment (`init=`, the earlier URI form: sources now send it in the stream). */
  init?: Uint8Array;
}

/** convert.rs `content_object`: `signal` and `name` are always set, to undefined when absent. */
export const CONTENT_INFO_FIELDS = {
  root: 'string',
  hash: 'string',
  chunkSize: 'number',
  length: 'number',
  signal: ['string', 'undefined'],
  udp: 'array',
  name: ['string', 'undefined'],
  http: ['string', 'undefined'],
  tree: ['string', 'undefined'],
  live: ['object', 'undefined'],
} as const satisfies Fields<ContentInfo>;

/** convert.rs `live_content_object`'s `live`. */
export const LIVE_INFO_FIELDS = {
  swarmId: 'string',
  chunksPerSignature: 'number',
  window: 'number',
  init: ['object', 'undefined'],
} as const satisfies Fields<LiveInfo>;

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
  /** Chunks verified and held (fewer than verified in all under `maxMemoryBytes`). */
  chunksHave: number;
  /** Chunks in the content (a live stream: up to its edge). */
  chunkCount: number;
  /** Payload bytes of verified chunks received (duplicates excluded). */
  bytesDownloaded: number;
  /** Payload bytes of chunks that arrived again after they were held. */
  bytesDuplicate: number;
  /** Payload bytes of DATA sent to peers, retransmissions included. */
  bytesUploaded: number;
  /** Chunks received that passed verification (duplicates excluded). */
  chunksVerified: number;
  /** Chunks received from peers that failed verification (each sender was dropped). */
  chunksRejected: number;
  /** PPSPP datagrams (data-channel messages) sent, and received (dropped ones included). */
  datagramsSent: number;
  datagramsReceived: number;
  /** Datagrams dropped before processing (undecodable, unknown channel, wrong swarm). */
  datagramsDropped: number;
  /** Chunks sent again after they were taken for lost. */
  retransmissions: number;
  /**
   * Content bytes received from the HTTP origin, verified or not (the tree file not
   * counted): what the origin sent. `bytesFromHttp` counts those that passed verification
   * (the figure to compare with `bytesFromPeers`).
   */
  httpBytesReceived: number;
  /** Range requests made of the HTTP origin (content and tree file). */
  originRequests: number;
  /** Chunks from the HTTP origin that failed verification. */
  chunksOriginCorrupt: number;
  /**
   * Milliseconds the HTTP origin held back what playback waited for, for peers still
   * connecting (a `Presentation` whose player holds media ahead): loads that took this
   * long on purpose.
   */
  originHeldMs: number;
  /** Chunks let go of to stay within the memory bound (`maxMemoryBytes`). */
  chunksEvicted: number;
  /** Chunks read back from the page's saved copies (`storage: 'opfs'`); not downloaded. */
  chunksRestored: number;
  /** Bytes of those chunks. */
  bytesRestored: number;
  /** Saved copies that failed verification (fetched again). */
  chunksSavedCorrupt: number;
  /** Open channels to peers. */
  peers: number;
  /**
   * Bytes of the engine's WebAssembly memory, where it holds its chunks, wherever it runs
   * (the page, or its Worker): it grows and never shrinks. Engines in one module (a
   * `Presentation`'s renditions) share it, and each reports the whole.
   */
  wasmMemoryBytes: number;
}

/** convert.rs `stats_object`. */
export const ENGINE_STATS_FIELDS = {
  chunksHave: 'number',
  chunkCount: 'number',
  bytesDownloaded: 'number',
  bytesDuplicate: 'number',
  bytesUploaded: 'number',
  chunksVerified: 'number',
  chunksRejected: 'number',
  datagramsSent: 'number',
  datagramsReceived: 'number',
  datagramsDropped: 'number',
  retransmissions: 'number',
  httpBytesReceived: 'number',
  originRequests: 'number',
  chunksOriginCorrupt: 'number',
  originHeldMs: 'number',
  chunksEvicted: 'number',
  chunksRestored: 'number',
  bytesRestored: 'number',
  chunksSavedCorrupt: 'number',
  peers: 'number',
  wasmMemoryBytes: 'number',
} as const satisfies Fields<EngineStats>;

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

/** convert.rs `channel_stats_object`, one element. */
export const CHANNEL_STATS_FIELDS = {
  peer: 'number',
  established: 'boolean',
  state: 'string',
  cwnd: 'number',
  rttMs: 'number',
  queuingDelayMs: ['number', 'null'],
  priority: 'number',
  inFlight: 'number',
  requestsOutstanding: 'number',
  chokedByPeer: 'boolean',
  choking: 'boolean',
  serveQueue: 'number',
  peerChunks: 'number',
  bytesUploaded: 'number',
  bytesDownloaded: 'number',
} as const satisfies Fields<ChannelStats>;

/** Every `state` convert.rs writes (`SendState` and congestion `Phase`). */
export const CHANNEL_STATES = {
  'ping-pong': true,
  'slow-start': true,
  avoidance: true,
  'keep-alive': true,
} as const satisfies Record<ChannelStats['state'], true>;

/** Why the engine closed a channel: the `reason` of a `peer-closed` event (convert.rs `close_reason`). */
export type PeerCloseReason =
  | 'closed-by-peer'
  | 'closed-locally'
  | 'unreachable'
  | 'timeout'
  | 'misbehaving'
  | 'refused'
  | 'own-address'
  | 'nothing-to-exchange';

export const PEER_CLOSE_REASONS = {
  'closed-by-peer': true,
  'closed-locally': true,
  unreachable: true,
  timeout: true,
  misbehaving: true,
  refused: true,
  'own-address': true,
  'nothing-to-exchange': true,
} as const satisfies Record<PeerCloseReason, true>;

export type EngineEvent =
  | { type: 'peer-connected'; peer: number }
  | { type: 'peer-closed'; peer: number; reason: PeerCloseReason; message: string }
  | { type: 'peer-discovered'; peer: number }
  | { type: 'chunk-verified'; chunk: number; peer: number }
  | { type: 'chunk-rejected'; chunk: number; peer: number; reason: string }
  | { type: 'origin-chunk'; chunk: number }
  | { type: 'chunk-restored'; chunk: number }
  | { type: 'origin-corrupt'; chunk: number; reason: string }
  | {
      type: 'origin-failed';
      code: OriginErrorCode;
      message: string;
      /** The HTTP status, for `origin-status`. */
      status: number | null;
      /** When requests go out again; null: no wait, or the origin is no longer used. */
      retryMs: number | null;
      /** The origin is no longer used. */
      disabled: boolean;
    }
  | { type: 'progress'; have: number; total: number }
  | { type: 'complete' }
  /** A live stream's edge moved on: chunks up to `end` are signed, at `signedAtMs` (Unix ms, the source's clock). */
  | { type: 'live-edge'; end: number; signedAtMs: number }
  | { type: 'store-failed'; chunk: number; message: string }
  /** The live source restarted (a new run of it): the engine joined the new run afresh. */
  | { type: 'live-restarted' }
  /** A chunk announced to peers could not be read back from the store to serve it. */
  | { type: 'store-read-failed'; chunk: number; message: string }
  /**
   * The content length the swarm was given (the URI's `len=`) is wrong: a chunk that
   * verifies against the root shows the content is `min` to `max` bytes. No peer is
   * blamed, and the engine asks for nothing more.
   */
  | { type: 'wrong-length'; stated: number; min: number; max: number; message: string }
  | { type: 'stats'; stats: EngineStats };

/** The event of type `T`. */
export type EngineEventOf<T extends EngineEvent['type']> = Extract<EngineEvent, { type: T }>;

/**
 * convert.rs `event_object`: the fields of each event type. A type missing here, or one
 * too many, fails to compile too. The `stats` event's `stats` is {@link ENGINE_STATS_FIELDS}.
 */
export const ENGINE_EVENT_FIELDS = {
  'peer-connected': { type: 'string', peer: 'number' },
  'peer-closed': { type: 'string', peer: 'number', reason: 'string', message: 'string' },
  'peer-discovered': { type: 'string', peer: 'number' },
  'chunk-verified': { type: 'string', chunk: 'number', peer: 'number' },
  'chunk-rejected': { type: 'string', chunk: 'number', peer: 'number', reason: 'string' },
  'origin-chunk': { type: 'string', chunk: 'number' },
  'chunk-restored': { type: 'string', chunk: 'number' },
  'origin-corrupt': { type: 'string', chunk: 'number', reason: 'string' },
  'origin-failed': {
    type: 'string',
    code: 'string',
    message: 'string',
    status: ['number', 'null'],
    retryMs: ['number', 'null'],
    disabled: 'boolean',
  },
  progress: { type: 'string', have: 'number', total: 'number' },
  complete: { type: 'string' },
  'live-edge': { type: 'string', end: 'number', signedAtMs: 'number' },
  'store-failed': { type: 'string', chunk: 'number', message: 'string' },
  'store-read-failed': { type: 'string', chunk: 'number', message: 'string' },
  'live-restarted': { type: 'string' },
  'wrong-length': { type: 'string', stated: 'number', min: 'number', max: 'number', message: 'string' },
  stats: { type: 'string', stats: 'object' },
} as const satisfies { readonly [T in EngineEvent['type']]: Fields<EngineEventOf<T>> };

/** Why an HTTP origin request failed: the `code` of an `origin-failed` event (convert.rs `origin_error_code`). */
export type OriginErrorCode =
  | 'origin-no-range'
  | 'origin-status'
  | 'origin-unreachable'
  | 'origin-timeout'
  | 'origin-bad-response'
  | 'origin-bad-tree';

export const ORIGIN_ERROR_CODES = {
  'origin-no-range': true,
  'origin-status': true,
  'origin-unreachable': true,
  'origin-timeout': true,
  'origin-bad-response': true,
  'origin-bad-tree': true,
} as const satisfies Record<OriginErrorCode, true>;

/** A Range request the engine wants made (`WasmPeer.pollOriginRequest`, convert.rs `origin_request_object`). */
export interface OriginRequest {
  id: number;
  file: 'tree' | 'content';
  /** Byte range, end exclusive. */
  start: number;
  end: number;
}

export const ORIGIN_REQUEST_FIELDS = {
  id: 'number',
  file: 'string',
  start: 'number',
  end: 'number',
} as const satisfies Fields<OriginRequest>;
