import { PpsppError } from './errors.js';
import type { HttpOriginSettings } from './http-origin.js';

/**
 * An HTTP origin: the content on a plain web server or CDN, with its tree file
 * (`ppspp root video.webm --tree video.tree`). Every byte from it is verified against the
 * swarm's root like a peer's. The server must answer Range requests (status 206), and,
 * from another origin than the page's, allow the page by CORS.
 */
export interface HttpOriginOptions {
  /** The content's URL, absolute or relative to the page. */
  url: string;
  /** The tree file's URL, absolute or relative to the page. */
  tree: string;
  /** Range requests in flight at most (default 4). */
  maxRequests?: number;
  /** A request not answered whole in this long fails and is retried (default 10 000 ms). */
  timeoutMs?: number;
  /** The first bytes fetched from the origin at once, for a fast first frame (default 64 KiB). */
  headBytes?: number;
}

/** Options of a {@link Peer} (and of the peer inside a {@link Player}). */
export interface PeerOptions {
  /**
   * Signaling server URL (`ws://` or `wss://`), or several instances of one site's
   * signaling (rooms shared through Redis): the first that answers is used, and when it
   * drops or cannot serve, the next. Default: the URI's `signal` parameter. `false` (or
   * an empty list): no signaling, so no peers: HTTP only, from the HTTP origin (which
   * then must be given).
   */
  signal?: string | readonly string[] | false;
  /**
   * Milliseconds a signaling server has to welcome us (the WebSocket opened and the room
   * joined) before it counts as unreachable and the next URL is tried (default 10000; at
   * least 1000). With an HTTP origin, playback never waits for it.
   */
  signalingTimeoutMs?: number;
  /**
   * The page's own ICE servers for RTCPeerConnection; default none (enough on one host or
   * LAN). A signaling server configured with STUN/TURN sends its own in each `welcome`
   * (TURN with credentials made for that join): every connection uses these first, then
   * the server's (merged, not replaced).
   */
  iceServers?: RTCIceServer[];
  /**
   * `'relay'`: peer connections go through TURN relays only (`iceTransportPolicy`), so no
   * peer ever learns this page's IP addresses; it needs TURN servers (the signaling
   * server's or `iceServers`). Default `'all'`.
   */
  iceTransportPolicy?: 'all' | 'relay';
  /** Most RTCPeerConnections open at once (default 8). */
  maxConnections?: number;
  /** Upload limit in bytes per second; 0 (default) = unlimited. */
  uploadLimit?: number;
  /** Download limit in bytes per second; 0 (default) = unlimited. */
  downloadLimit?: number;
  /**
   * Congestion priority: 0 (default) = LEDBAT, which yields to the user's other traffic;
   * N = as hard as N TCP flows.
   */
  priority?: number;
  /** A connection whose data channel is not open after this long is dropped (default 15 s). */
  connectTimeoutMs?: number;
  /**
   * Chunks to a peer that reads them so share one data-channel message of up to this
   * many bytes while the path to it loses nothing (default 32768; at most 65536; 0: one
   * chunk per message). Fewer, larger messages cost both pages less CPU per byte.
   */
  dataBatchBytes?: number;
  /** How often the `stats` event fires, in milliseconds (default 1000; 0 = never). */
  statsIntervalMs?: number;
  /** Where the WebAssembly module is, if not next to the package (first load only). */
  wasm?: string | URL;
  /**
   * Where the engine runs: `'worker'`, a dedicated Worker (the package's
   * `engine-worker.js`, which bundlers find through `new URL(…, import.meta.url)`), so
   * that its timers, verification and sends do not wait behind the page's own work; or
   * `'main'`, the page's main thread. Where the browser cannot start the Worker, or the
   * Worker cannot make the engine, the engine runs on the main thread. Default `'worker'`.
   */
  engineThread?: 'main' | 'worker';
  /**
   * Fetch from other viewers first and from seeders (the origin) only what playback needs
   * next or nobody else has (default true): this is what keeps the origin's upload low.
   */
  preferPeers?: boolean;
  /**
   * Report this page's figures to the signaling server for the site's operator (default
   * false): every `reportEvery` seconds the server asks for, the bytes received from
   * peers, from HTTP and from seeders, and the stalls, which the server adds up per swarm
   * on its metrics. Nothing that identifies the viewer is sent.
   */
  reportOffload?: boolean;
}

/** Options of a {@link Player}. */
export interface PlayerOptions extends PeerOptions {
  /**
   * MIME type with codecs for MediaSource, e.g. `video/webm; codecs="vp9,opus"`;
   * default: read from the file's initialization segment.
   */
  mimeType?: string;
  /** Seconds of played video kept in the buffer behind the playhead (default 30). */
  keepBehindSeconds?: number;
  /** Bytes ahead of the playback position fetched in order, before rarest-first (default 4 MiB). */
  readAheadBytes?: number;
  /**
   * Seconds of media ahead of the playback position fetched at most, from peers and HTTP
   * alike (default 30; 0: no bound, the whole video). A viewer who leaves early costs
   * the origin and the swarm little more than what was watched; what the page holds it
   * keeps serving. Estimated from the video's average bit rate (at least 1 MiB ahead); the
   * window opens from 5 s by 2 s per second played (after a seek, as the buffer fills).
   */
  readAheadSeconds?: number;
  /**
   * Whether the page uploads to other viewers: `true`, `false` (it fetches from peers and
   * the origin but announces and serves nothing), or `'auto'` (default): not on a
   * connection the browser says is metered or asks to save data
   * (`navigator.connection.saveData`, or its `type` `'cellular'`), re-read when the
   * connection changes. `player.setUpload()` changes it later.
   */
  upload?: boolean | 'auto';
  /**
   * Which MediaSource to play through: `'auto'` (default) takes `MediaSource` where the
   * browser has it and `ManagedMediaSource` where it does not (iPhone, iOS 17.1+);
   * `'managed'` takes `ManagedMediaSource` where both exist (Safari 17+ on a Mac), which
   * lets the browser pause fetching into it and save power.
   */
  mediaSource?: 'auto' | 'managed';
  /**
   * `false`: start from the HTTP origin alone, without contacting the signaling server
   * or any peer, until `player.enableP2P()` (after the viewer's consent, say). Needs an
   * HTTP origin. Default `true`.
   */
  p2p?: boolean;
  /**
   * Of that, seconds of media the HTTP origin is asked for at most ahead of the playback
   * position (default 10; 0: as far as `readAheadSeconds`): peers carry what lies beyond.
   * What playback waits for (its next segment) comes from HTTP whatever this says.
   */
  httpReadAheadSeconds?: number;
  /** Priority of a channel while it carries chunks playback needs next (default 2; 0 = never raise). */
  urgentPriority?: number;
  /**
   * Milliseconds the playhead may stand still with media buffered ahead before the
   * Player reports a `playback-stuck` error (default 8000; stalls for lack of data only
   * give `stall` events).
   */
  stuckTimeoutMs?: number;
  /**
   * Fetch from this HTTP origin too: the first chunks, and what playback needs soon and no
   * peer delivers in time; peers carry the rest, and get what came from it. Default: the
   * URI's `http=` and `tree=` parameters, if it has them; `false` ignores those. With an
   * origin and no signaling server (no `signal` option or URI parameter), the Player plays
   * from HTTP alone.
   */
  httpOrigin?: HttpOriginOptions | false;
  /**
   * Bytes of the video the page holds at most (default 256 MiB; 0 = all of it): a window
   * from the playback position is fetched, and what was played longest ago is let go of
   * (fetched again if the viewer seeks back). MediaSource's own buffer is apart
   * (`keepBehindSeconds`). At least 1 MiB.
   */
  maxMemoryBytes?: number;
  /**
   * Where verified chunks are kept besides memory: `'memory'` (default) or `'opfs'`, the
   * Origin Private File System. With `'opfs'` a reload or a later visit reads the chunks it
   * saved instead of fetching them again (each checked against the root first) and serves
   * them to peers. Where OPFS is unavailable or full, the Player goes on in memory and
   * says so with a `storage-fallback` event. `clearSavedChunks()` deletes what was saved.
   */
  storage?: 'memory' | 'opfs';
  /** Bytes of saved chunks `storage: 'opfs'` keeps at most for one video, across visits (default 1 GiB; at least 1 MiB). */
  storageQuotaBytes?: number;
  /**
   * Live streams: seconds of media playback stays behind the newest appended (default 3;
   * at least 0.5). A little further behind, playback runs faster until back (`behind`,
   * then `caught-up` events).
   */
  liveLatencySeconds?: number;
  /** Live streams: seconds beyond the latency target at which playback jumps forward rather than plays faster (default 4; at least 1). */
  liveJumpSeconds?: number;
  /** Live streams: milliseconds without a new signed chunk after which the stream counts as ended (`live-ended`; default 10000; at least 1000). */
  liveEndAfterMs?: number;
}

export interface ResolvedPeerOptions {
  /** At least one URL when a list; false: no signaling (HTTP only). */
  signal: readonly string[] | false | undefined;
  signalingTimeoutMs: number;
  iceServers: RTCIceServer[];
  iceTransportPolicy: 'all' | 'relay';
  maxConnections: number;
  uploadLimit: number;
  downloadLimit: number;
  priority: number;
  connectTimeoutMs: number;
  dataBatchBytes: number;
  statsIntervalMs: number;
  wasm: string | URL | undefined;
  engineThread: 'main' | 'worker';
  preferPeers: boolean;
  reportOffload: boolean;
}

export interface ResolvedPlayerOptions extends ResolvedPeerOptions {
  mimeType: string | undefined;
  keepBehindSeconds: number;
  readAheadBytes: number;
  readAheadSeconds: number;
  httpReadAheadSeconds: number;
  upload: boolean | 'auto';
  p2p: boolean;
  mediaSource: 'auto' | 'managed';
  urgentPriority: number;
  stuckTimeoutMs: number;
  /** The option as given, checked; merged with the URI's by {@link resolveHttpOrigin}. */
  httpOrigin: HttpOriginOptions | false | undefined;
  maxMemoryBytes: number;
  storage: 'memory' | 'opfs';
  storageQuotaBytes: number;
  liveLatencySeconds: number;
  liveJumpSeconds: number;
  liveEndAfterMs: number;
}

function bad(message: string): PpsppError {
  return new PpsppError('bad-option', message);
}

function number(
  options: object,
  name: string,
  fallback: number,
  check: { min: number; max?: number; integer?: boolean },
): number {
  const value = (options as Record<string, unknown>)[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw bad(`option ${name} must be a finite number, not ${JSON.stringify(value)}`);
  }
  if (check.integer && !Number.isInteger(value)) throw bad(`option ${name} must be a whole number, not ${value}`);
  if (value < check.min) throw bad(`option ${name} must be at least ${check.min}, not ${value}`);
  if (check.max !== undefined && value > check.max) {
    throw bad(`option ${name} must be at most ${check.max}, not ${value}`);
  }
  return value;
}

function uploadOption(value: unknown): boolean | 'auto' {
  if (value === undefined || value === 'auto') return 'auto';
  if (typeof value !== 'boolean') throw bad(`option upload must be true, false or 'auto', not ${JSON.stringify(value)}`);
  return value;
}

function oneOf<T extends string>(options: object, name: string, values: readonly T[], fallback: T): T {
  const value = (options as Record<string, unknown>)[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(values as readonly string[]).includes(value)) {
    throw bad(`option ${name} must be ${values.map((v) => JSON.stringify(v)).join(' or ')}, not ${JSON.stringify(value)}`);
  }
  return value as T;
}

function boolean(options: object, name: string, fallback: boolean): boolean {
  const value = (options as Record<string, unknown>)[name];
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw bad(`option ${name} must be true or false, not ${JSON.stringify(value)}`);
  return value;
}

/** Most signaling URLs one option may list. */
const MAX_SIGNAL_URLS = 16;

/** Checks the `signal` option (one URL or a list of them); returns the list, or throws `bad-option`. */
export function checkSignalUrls(value: unknown, what = 'option signal'): string[] {
  if (typeof value === 'string') return [checkSignalUrl(value, what)];
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_SIGNAL_URLS) {
    throw bad(`${what} must be a ws:// or wss:// URL, or a list of 1 to ${MAX_SIGNAL_URLS} of them`);
  }
  return value.map((url: unknown) => {
    if (typeof url !== 'string') throw bad(`${what} must list URLs as strings, not ${JSON.stringify(url)}`);
    return checkSignalUrl(url, what);
  });
}

/** The `signal` option: undefined (the URI's), false (none: HTTP only), or its URLs. */
function signalOption(value: unknown): readonly string[] | false | undefined {
  if (value === undefined) return undefined;
  if (value === false || (Array.isArray(value) && value.length === 0)) return false;
  return checkSignalUrls(value);
}

/** Checks a signaling URL; returns it or throws `bad-option`. */
export function checkSignalUrl(url: string, what = 'option signal'): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad(`${what} must be a ws:// or wss:// URL, not ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') {
    throw bad(`${what} must be a ws:// or wss:// URL, not ${JSON.stringify(url)}`);
  }
  return url;
}

/** The default `dataBatchBytes`: four 8 KiB chunks with their hashes do not fit, three do. */
export const DEFAULT_DATA_BATCH_BYTES = 32_768;
/** The longest datagram the engine reads. */
export const MAX_DATA_BATCH_BYTES = 65_536;

const KNOWN_PEER = [
  'signal', 'signalingTimeoutMs', 'iceServers', 'iceTransportPolicy', 'maxConnections', 'uploadLimit', 'downloadLimit', 'priority',
  'connectTimeoutMs', 'dataBatchBytes', 'statsIntervalMs', 'wasm', 'engineThread', 'preferPeers', 'reportOffload',
];
const KNOWN_PLAYER = [
  ...KNOWN_PEER, 'mimeType', 'keepBehindSeconds', 'readAheadBytes', 'readAheadSeconds', 'httpReadAheadSeconds',
  'upload', 'p2p', 'mediaSource', 'urgentPriority', 'stuckTimeoutMs', 'httpOrigin',
  'maxMemoryBytes', 'storage', 'storageQuotaBytes', 'liveLatencySeconds', 'liveJumpSeconds', 'liveEndAfterMs',
];
const KNOWN_ORIGIN = ['url', 'tree', 'maxRequests', 'timeoutMs', 'headBytes'];

function url(options: object, name: string): string {
  const value = (options as Record<string, unknown>)[name];
  if (typeof value !== 'string' || value.trim() === '') {
    throw bad(`option httpOrigin.${name} must be a URL (absolute or relative to the page), not ${JSON.stringify(value)}`);
  }
  return value;
}

function checkHttpOrigin(value: unknown): HttpOriginOptions | false | undefined {
  if (value === undefined || value === false) return value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw bad('option httpOrigin must be { url, tree } or false');
  }
  for (const key of Object.keys(value)) {
    if (!KNOWN_ORIGIN.includes(key)) {
      throw bad(`unknown option httpOrigin.${key} (known: ${KNOWN_ORIGIN.join(', ')})`);
    }
  }
  const o = value as HttpOriginOptions;
  const n = (name: string, fallback: number, check: { min: number; max?: number; integer?: boolean }): number =>
    number(o, name, fallback, check);
  try {
    return {
      url: url(o, 'url'),
      tree: url(o, 'tree'),
      maxRequests: n('maxRequests', 4, { min: 1, max: 64, integer: true }),
      timeoutMs: n('timeoutMs', 10_000, { min: 100 }),
      headBytes: n('headBytes', 64 << 10, { min: 0, integer: true }),
    };
  } catch (err) {
    if (err instanceof PpsppError) throw bad(err.message.replace(/^option /, 'option httpOrigin.'));
    throw err;
  }
}

function memoryBound(options: PlayerOptions): number {
  const bytes = number(options, 'maxMemoryBytes', 256 << 20, { min: 0, integer: true });
  if (bytes !== 0 && bytes < 1 << 20) throw bad(`option maxMemoryBytes must be 0 (no bound) or at least 1 MiB, not ${bytes}`);
  return bytes;
}

function storage(options: PlayerOptions): 'memory' | 'opfs' {
  const value = options.storage ?? 'memory';
  if (value !== 'memory' && value !== 'opfs') throw bad(`option storage must be 'memory' or 'opfs', not ${JSON.stringify(value)}`);
  return value;
}

/**
 * The HTTP origin to use: the option, else the URI's `http=` and `tree=` (with the
 * defaults), or null for none.
 */
export function resolveHttpOrigin(
  option: HttpOriginOptions | false | undefined,
  uri: { http?: string; tree?: string },
): HttpOriginSettings | null {
  if (option === false) return null;
  const chosen = option ?? (uri.http !== undefined && uri.tree !== undefined ? checkHttpOrigin({ url: uri.http, tree: uri.tree }) : undefined);
  if (!chosen) return null;
  return {
    url: chosen.url,
    tree: chosen.tree,
    maxRequests: chosen.maxRequests ?? 4,
    timeoutMs: chosen.timeoutMs ?? 10_000,
    headBytes: chosen.headBytes ?? 64 << 10,
  };
}

function checkKnown(options: object, known: string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw bad(`unknown option ${JSON.stringify(key)} (known: ${known.join(', ')})`);
  }
}

/** Fills in defaults and rejects bad values with a `bad-option` error naming the option. */
export function resolvePeerOptions(options: PeerOptions = {}, known = KNOWN_PEER): ResolvedPeerOptions {
  if (typeof options !== 'object' || options === null) throw bad('options must be an object');
  checkKnown(options, known);
  const iceServers = options.iceServers ?? [];
  if (!Array.isArray(iceServers)) throw bad('option iceServers must be an array of RTCIceServer');
  const wasm = options.wasm;
  if (wasm !== undefined && typeof wasm !== 'string' && !(wasm instanceof URL)) {
    throw bad('option wasm must be a URL or a string');
  }
  return {
    signal: signalOption(options.signal),
    signalingTimeoutMs: number(options, 'signalingTimeoutMs', 10_000, { min: 1000 }),
    iceServers,
    iceTransportPolicy: oneOf(options, 'iceTransportPolicy', ['all', 'relay'] as const, 'all'),
    maxConnections: number(options, 'maxConnections', 8, { min: 1, max: 256, integer: true }),
    uploadLimit: number(options, 'uploadLimit', 0, { min: 0 }),
    downloadLimit: number(options, 'downloadLimit', 0, { min: 0 }),
    priority: number(options, 'priority', 0, { min: 0, max: 16, integer: true }),
    connectTimeoutMs: number(options, 'connectTimeoutMs', 15_000, { min: 100 }),
    dataBatchBytes: number(options, 'dataBatchBytes', DEFAULT_DATA_BATCH_BYTES, {
      min: 0,
      max: MAX_DATA_BATCH_BYTES,
      integer: true,
    }),
    statsIntervalMs: number(options, 'statsIntervalMs', 1000, { min: 0 }),
    wasm,
    engineThread: oneOf(options, 'engineThread', ['main', 'worker'] as const, 'worker'),
    preferPeers: boolean(options, 'preferPeers', true),
    reportOffload: boolean(options, 'reportOffload', false),
  };
}

export function resolvePlayerOptions(options: PlayerOptions = {}): ResolvedPlayerOptions {
  const peer = resolvePeerOptions(options, KNOWN_PLAYER);
  const mimeType = options.mimeType;
  if (mimeType !== undefined && (typeof mimeType !== 'string' || mimeType.trim() === '')) {
    throw bad('option mimeType must be a non-empty string such as video/webm; codecs="vp9,opus"');
  }
  return {
    ...peer,
    mimeType,
    keepBehindSeconds: number(options, 'keepBehindSeconds', 30, { min: 2 }),
    readAheadBytes: number(options, 'readAheadBytes', 4 << 20, { min: 0 }),
    readAheadSeconds: number(options, 'readAheadSeconds', 30, { min: 0 }),
    httpReadAheadSeconds: number(options, 'httpReadAheadSeconds', 10, { min: 0 }),
    upload: uploadOption(options.upload),
    p2p: boolean(options, 'p2p', true),
    mediaSource: oneOf(options, 'mediaSource', ['auto', 'managed'] as const, 'auto'),
    urgentPriority: number(options, 'urgentPriority', 2, { min: 0, max: 16, integer: true }),
    stuckTimeoutMs: number(options, 'stuckTimeoutMs', 8000, { min: 1000 }),
    httpOrigin: checkHttpOrigin(options.httpOrigin),
    maxMemoryBytes: memoryBound(options),
    storage: storage(options),
    storageQuotaBytes: number(options, 'storageQuotaBytes', 1 << 30, { min: 1 << 20, integer: true }),
    liveLatencySeconds: number(options, 'liveLatencySeconds', 3, { min: 0.5 }),
    liveJumpSeconds: number(options, 'liveJumpSeconds', 4, { min: 1 }),
    liveEndAfterMs: number(options, 'liveEndAfterMs', 10_000, { min: 1000 }),
  };
}

/** Options of {@link Presentation.load} (an HLS or DASH presentation, one swarm per rendition). */
export interface PresentationOptions extends PeerOptions {
  /**
   * Segments fetched from peers ahead of the one a player asks for (default 2): ready
   * when it asks for them. What the origin serves stays the segment asked for.
   */
  readAheadSegments?: number;
  /** Content bytes each rendition's swarm holds at most (default 64 MiB; 0: no bound). */
  maxMemoryBytes?: number;
  /** The manifest not loaded in this long: `manifest-unreachable` (default 10 s). */
  manifestTimeoutMs?: number;
  /** Whether the page uploads to other viewers (as {@link PlayerOptions.upload}; default 'auto'). */
  upload?: boolean | 'auto';
  /**
   * A live presentation's stream key (hex, as `ppspp hls live` prints it): what every
   * record of its manifest, and so every segment, is checked against. Required for a live
   * manifest: the manifest's own `key` is not trusted.
   */
  streamKey?: string;
  /**
   * Live: how long a segment that peers hold may wait for them before it is fetched whole
   * from the web server (default 1000 ms). One no peer holds is fetched at once (after a
   * moment's random wait, under a quarter second, while peers are connected: one of them
   * may be fetching it). Longer takes more from peers, and leaves less time to fetch it
   * before the player needs it.
   */
  livePeerWaitMs?: number;
}

export interface ResolvedPresentationOptions extends ResolvedPeerOptions {
  readAheadSegments: number;
  maxMemoryBytes: number;
  manifestTimeoutMs: number;
  upload: boolean | 'auto';
  streamKey: string | null;
  livePeerWaitMs: number;
}

const KNOWN_PRESENTATION = [
  ...KNOWN_PEER,
  'readAheadSegments',
  'maxMemoryBytes',
  'manifestTimeoutMs',
  'upload',
  'streamKey',
  'livePeerWaitMs',
];

function streamKeyOption(value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'string' || !/^[0-9a-f]+$/i.test(value.trim()) || value.trim().length % 2 !== 0) {
    throw bad('option streamKey must be the stream key in hex, as the live source prints it');
  }
  return value.trim().toLowerCase();
}

/** Fills in defaults and rejects bad values with a `bad-option` error naming the option. */
export function resolvePresentationOptions(options: PresentationOptions = {}): ResolvedPresentationOptions {
  const peer = resolvePeerOptions(options, KNOWN_PRESENTATION);
  const bytes = number(options, 'maxMemoryBytes', 64 << 20, { min: 0, integer: true });
  if (bytes !== 0 && bytes < 1 << 20) throw bad(`option maxMemoryBytes must be 0 (no bound) or at least 1 MiB, not ${bytes}`);
  return {
    ...peer,
    readAheadSegments: number(options, 'readAheadSegments', 2, { min: 0, max: 32, integer: true }),
    maxMemoryBytes: bytes,
    manifestTimeoutMs: number(options, 'manifestTimeoutMs', 10_000, { min: 100 }),
    upload: uploadOption(options.upload),
    streamKey: streamKeyOption(options.streamKey),
    livePeerWaitMs: number(options, 'livePeerWaitMs', 1000, { min: 0, max: 60_000 }),
  };
}
