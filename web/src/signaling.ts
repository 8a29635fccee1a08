/**
 * The signaling client (protocol in docs/SIGNALING.md): joins the swarm's room, relays
 * WebRTC offers, answers and candidates, and reconnects with back-off when the socket
 * drops. Each (re)join gives a new peer id and a fresh sample of peers.
 *
 * Given several URLs (instances of one site's signaling, sharing rooms through Redis),
 * it joins at the first that answers and, when that one drops or cannot serve
 * (`unavailable`), moves on to the next, round and round.
 */
import { PpsppError } from './errors.js';

export interface SignalingHandlers {
  /** Joined (again): our id and a sample of the peers already in the room. */
  welcome(peerId: string, peers: string[]): void;
  signal(from: string, data: unknown): void;
  peerLeft(peerId: string): void;
  /** The socket dropped; a reconnect is scheduled unless the client was closed. */
  disconnected(reason: string): void;
  /** A server error message or a failure to reconnect, for the user's error event. */
  error(err: PpsppError): void;
}

/** The protocol version this client speaks (`join.v`). */
export const PROTOCOL_VERSION = 1;
/** The first wait before joining again, and the longest before jitter. */
const FIRST_REJOIN_MS = 1000;
const MAX_REJOIN_MS = 30_000;
/** How long a server has to welcome us (`signalingTimeoutMs`'s default). */
export const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * The wait before attempt number `attempt` (from 0) to join again through `urls` servers:
 * it doubles with each round through them, up to 30 s, times a jitter of 0.75 to 1.25
 * picked by `random` (0 to 1) so pages that lost one server do not all come back at once.
 * The native client follows the same policy (both are checked against
 * tests/policy/adapters.json).
 */
export function rejoinDelayMs(attempt: number, urls: number, random: number): number {
  const round = Math.floor(attempt / Math.max(1, urls));
  const jitter = 0.75 + Math.min(1, Math.max(0, random)) * 0.5;
  return Math.min(MAX_REJOIN_MS, FIRST_REJOIN_MS * 2 ** Math.min(round, 5)) * jitter;
}

/**
 * A message from the server as this client reads it: only the fields it acts on.
 * `signaling/protocol/` (Rust) defines the messages; its JSON fixtures check this file too
 * (`test/signaling-protocol.test.ts`).
 */
export type ServerMessage =
  | { type: 'welcome'; peerId: string; peers: string[]; iceServers?: RTCIceServer[]; reportEvery?: number; p2pFrom?: number }
  | { type: 'signal'; from: string; data: unknown }
  | { type: 'ice-servers'; iceServers: RTCIceServer[] }
  | { type: 'peer-left'; peerId: string }
  | { type: 'error'; code: string; message: string; fatal: boolean };

/**
 * Reads a welcome's `iceServers` (RTCIceServer's shape: `urls` a string or a list of
 * strings, optional string `username` and `credential`). Entries of another shape are
 * left out, so a bad entry cannot make every RTCPeerConnection fail; `undefined` when
 * nothing usable is left (or the field is absent, as from servers without ICE servers).
 */
export function decodeIceServers(value: unknown): RTCIceServer[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const servers: RTCIceServer[] = [];
  for (const entry of value as unknown[]) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { urls, username, credential } = entry as Record<string, unknown>;
    let checked: string | string[];
    if (typeof urls === 'string' && urls !== '') checked = urls;
    else if (Array.isArray(urls) && urls.length > 0 && urls.every((u) => typeof u === 'string' && u !== '')) {
      checked = [...(urls as string[])];
    } else continue;
    if (username !== undefined && typeof username !== 'string') continue;
    if (credential !== undefined && typeof credential !== 'string') continue;
    const server: RTCIceServer = { urls: checked };
    if (username !== undefined) server.username = username;
    if (credential !== undefined) server.credential = credential;
    servers.push(server);
  }
  return servers.length > 0 ? servers : undefined;
}

/**
 * Reads one text frame from the server; `null` for what the client ignores: text that is
 * not a JSON object, and types it does not know (newer servers may send more).
 */
export function decodeServerMessage(text: string): ServerMessage | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const msg = parsed as Record<string, unknown>;
  switch (msg.type) {
    case 'welcome': {
      const welcome: Extract<ServerMessage, { type: 'welcome' }> = {
        type: 'welcome',
        peerId: String(msg.peer_id),
        peers: Array.isArray(msg.peers) ? msg.peers.map(String) : [],
      };
      const iceServers = decodeIceServers(msg.iceServers);
      if (iceServers) welcome.iceServers = iceServers;
      // Seconds between reports, when the server takes them; anything else: it does not.
      const every = msg.reportEvery;
      if (typeof every === 'number' && Number.isInteger(every) && every > 0) welcome.reportEvery = every;
      // The room is below the size the server starts peer-to-peer at.
      const from = msg.p2pFrom;
      if (typeof from === 'number' && Number.isInteger(from) && from > 0) welcome.p2pFrom = from;
      return welcome;
    }
    case 'signal':
      return { type: 'signal', from: String(msg.from), data: msg.data };
    case 'ice-servers':
      return { type: 'ice-servers', iceServers: decodeIceServers(msg.iceServers) ?? [] };
    case 'peer-left':
      return { type: 'peer-left', peerId: String(msg.peer_id) };
    case 'error':
      return { type: 'error', code: String(msg.code), message: String(msg.message), fatal: msg.fatal === true };
    default:
      return null;
  }
}

/** The `join` frame for `swarm` (the root in lowercase hex). */
export function encodeJoin(swarm: string): string {
  return JSON.stringify({ type: 'join', v: PROTOCOL_VERSION, swarm });
}

/** The `signal` frame relaying `data` to peer `to`. */
export function encodeSignal(to: string, data: unknown): string {
  return JSON.stringify({ type: 'signal', to, data });
}

/** The `leave` frame. */
export function encodeLeave(): string {
  return JSON.stringify({ type: 'leave' });
}

/** The `ice` frame: fresh ICE servers (TURN credentials) for the room we are in. */
export function encodeIce(): string {
  return JSON.stringify({ type: 'ice' });
}

/** What a `report` carries: running totals since the join (bytes verified, by source; stalls). */
export interface ReportTotals {
  peers: number;
  http: number;
  seeders: number;
  stalls: number;
  stallMs: number;
}

/** The `report` frame: `totals` since our join, as whole non-negative numbers. */
export function encodeReport(totals: ReportTotals): string {
  const whole = (n: number): number => (Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);
  return JSON.stringify({
    type: 'report',
    bytes: { peers: whole(totals.peers), http: whole(totals.http), seeders: whole(totals.seeders) },
    stalls: whole(totals.stalls),
    stallMs: whole(totals.stallMs),
  });
}

/**
 * When the earliest of `servers`' TURN credentials expires (ms since the epoch, by the
 * server's clock), read from their TURN REST usernames (`<unix expiry>:<peer id>`); null
 * when none has one.
 */
export function credentialsExpireAt(servers: RTCIceServer[]): number | null {
  let earliest: number | null = null;
  for (const s of servers) {
    const m = typeof s.username === 'string' ? /^(\d{1,12}):/.exec(s.username) : null;
    if (!m) continue;
    const at = Number(m[1]) * 1000;
    earliest = earliest === null ? at : Math.min(earliest, at);
  }
  return earliest;
}

/**
 * Fresh credentials are asked for once this share of the old ones' lifetime has passed,
 * but never sooner than {@link MIN_ICE_REFRESH_MS} after the last ask (a page clock far
 * from the server's would otherwise ask without end) nor later than a day.
 */
const ICE_REFRESH_SHARE = 0.8;
export const MIN_ICE_REFRESH_MS = 5_000;
const MAX_ICE_REFRESH_MS = 24 * 3600_000;

/**
 * Whether a server error is routine rather than worth reporting: relaying to a peer that
 * just left (`unknown-peer`), or to one whose queue is full (`peer-busy`: it reads slowly;
 * that connection attempt times out and another peer is tried), or a server that cannot
 * serve now (`unavailable`: its room store is down; the close follows, and the next URL is
 * tried), or a report it did not take (`bad-report`: the operator's figures miss one
 * report; playback is not concerned).
 */
export function isRoutineError(code: string): boolean {
  return code === 'unknown-peer' || code === 'peer-busy' || code === 'unavailable' || code === 'bad-report';
}

export class SignalingClient {
  private readonly urls: readonly string[];
  /** Which of {@link urls} the socket is (or was last) connected to. */
  private index = 0;
  private socket: WebSocket | null = null;
  private closed = false;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private peerIdValue: string | null = null;
  private iceServersValue: RTCIceServer[] = [];
  private iceTimer: ReturnType<typeof setTimeout> | null = null;
  /** When we last sent `ice` (performance.now()), and whether its answer is due. */
  private iceAskedAt = -Infinity;
  private iceAnswerDue = false;
  /** False once the server said it does not know `ice` (an older server). */
  private iceSupported = true;
  /** The latest welcome's `reportEvery`: seconds between reports, null when the server takes none. */
  private reportEveryValue: number | null = null;
  /** The latest welcome's `p2pFrom`: the room size peer-to-peer starts at, null when it has. */
  private p2pFromValue: number | null = null;

  /** After start() failed: go on trying in the background (see {@link start}). */
  private keepTrying = false;

  constructor(
    urls: string | readonly string[],
    readonly swarm: string,
    private readonly handlers: SignalingHandlers,
    /** A server that has not welcomed us this long after we began to connect counts as unreachable. */
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {
    this.urls = typeof urls === 'string' ? [urls] : [...urls];
    if (this.urls.length === 0) throw new PpsppError('bad-option', 'no signaling server given');
  }

  /** The URL in use (or tried last). */
  get url(): string {
    return this.urls[this.index] as string;
  }

  /** Our peer id in the room, once welcomed. */
  get peerId(): string | null {
    return this.peerIdValue;
  }

  /**
   * The ICE servers of the latest `welcome` or `ice-servers` (STUN, and TURN with
   * credentials the server issued for this client; docs/SIGNALING.md), `[]` if it had
   * none. Each (re)join replaces them, before the `welcome` handler runs; they are kept
   * while the socket reconnects. Before TURN credentials expire, fresh ones are asked for
   * (see {@link requestIceServers}).
   */
  get iceServers(): RTCIceServer[] {
    return this.iceServersValue;
  }

  /**
   * Seconds between `report`s the server asked for in the latest welcome (set before the
   * `welcome` handler runs); null when it takes none.
   */
  get reportEverySeconds(): number | null {
    return this.reportEveryValue;
  }

  /**
   * The room size the server starts peer-to-peer at, when the latest welcome said the room
   * is below it (its sample is then empty: the page plays from its other sources until a
   * newcomer offers it a connection); null otherwise.
   */
  get p2pFrom(): number | null {
    return this.p2pFromValue;
  }

  /**
   * Connects and joins. Resolves on the first `welcome`; rejects with
   * `signaling-unreachable` if no URL could be joined, each tried once (a server that
   * does not welcome us within the timeout counts as unreachable), so the promise always
   * settles. Later drops reconnect; with `keepTrying`, so does a failed start (a page
   * playing from HTTP meanwhile joins the swarm once a server answers).
   */
  start(opts: { keepTrying?: boolean } = {}): Promise<void> {
    this.keepTrying = opts.keepTrying ?? false;
    return new Promise((resolve, reject) => this.open(resolve, reject, this.urls.length));
  }

  /** Moves on to the next URL. */
  private advance(): void {
    this.index = (this.index + 1) % this.urls.length;
  }

  /**
   * Opens a socket to the current URL. While starting (`reject` set), a failure moves on
   * to the next URL until `tries` have failed, then rejects.
   */
  private open(resolve?: () => void, reject?: (err: PpsppError) => void, tries = 1): void {
    if (this.closed) return;
    const failed = (why: string): boolean => {
      if (!reject) return false;
      if (tries > 1) {
        this.advance();
        this.open(resolve, reject, tries - 1);
      } else {
        const which =
          this.urls.length === 1 ? `the signaling server at ${this.url}` : `any of the signaling servers (${this.urls.join(', ')}; last ${this.url})`;
        reject(new PpsppError('signaling-unreachable', `cannot reach ${which}: ${why}`));
        reject = undefined;
        resolve = undefined;
        if (this.keepTrying) this.scheduleReconnect();
      }
      return true;
    };
    let socket: WebSocket;
    try {
      socket = new WebSocket(this.url);
    } catch (err) {
      if (!failed(`cannot open a socket: ${String(err)}`)) this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    let welcomed = false;
    // A server that accepts the connection but never welcomes us (a proxy holding the
    // upgrade, a hung process) fails like one that refuses it.
    const silent = setTimeout(() => {
      if (welcomed || this.socket !== socket) return;
      socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
      this.socket = null;
      try {
        socket.close();
      } catch {
        // already closing
      }
      if (failed(`no welcome within ${this.timeoutMs} ms`)) return;
      this.scheduleReconnect();
    }, this.timeoutMs);
    socket.onopen = () => {
      socket.send(encodeJoin(this.swarm));
    };
    socket.onmessage = (ev: MessageEvent) => {
      if (typeof ev.data !== 'string') return;
      // Null: not JSON, or a newer server message (protocol: clients ignore unknown types).
      const msg = decodeServerMessage(ev.data);
      switch (msg?.type) {
        case 'welcome': {
          welcomed = true;
          clearTimeout(silent);
          this.attempt = 0;
          this.peerIdValue = msg.peerId;
          this.iceServersValue = msg.iceServers ?? [];
          this.reportEveryValue = msg.reportEvery ?? null;
          this.p2pFromValue = msg.p2pFrom ?? null;
          this.iceAnswerDue = false;
          this.scheduleIceRefresh();
          this.handlers.welcome(this.peerIdValue, msg.peers);
          resolve?.();
          resolve = undefined;
          reject = undefined;
          break;
        }
        case 'signal':
          this.handlers.signal(msg.from, msg.data);
          break;
        case 'ice-servers':
          this.iceAnswerDue = false;
          this.iceServersValue = msg.iceServers;
          this.scheduleIceRefresh();
          break;
        case 'peer-left':
          this.handlers.peerLeft(msg.peerId);
          break;
        case 'error': {
          const text = `signaling server: ${msg.code}: ${msg.message}`;
          // Routine errors are not reported; everything else is.
          if (isRoutineError(msg.code)) break;
          if (this.iceAnswerDue && (msg.code === 'unknown-type' || msg.code === 'not-joined')) {
            // Our `ice`: a server older than it (ask no more), or sent during a rejoin
            // (whose welcome brings fresh servers anyway).
            this.iceAnswerDue = false;
            if (msg.code === 'unknown-type') this.iceSupported = false;
            break;
          }
          const err = new PpsppError('signaling-error', text);
          if (msg.fatal && reject) {
            reject(err);
            reject = undefined;
            resolve = undefined;
            this.closed = true;
          } else {
            this.handlers.error(err);
          }
          break;
        }
        default:
          break;
      }
    };
    socket.onclose = (ev: CloseEvent) => {
      clearTimeout(silent);
      this.socket = null;
      this.peerIdValue = null;
      this.iceAnswerDue = false;
      this.clearIceTimer();
      if (failed(`close code ${ev.code}${ev.reason ? `: ${ev.reason}` : ''}`)) return;
      if (this.closed) return;
      this.handlers.disconnected(welcomed ? `socket closed (${ev.code})` : `could not rejoin (${ev.code})`);
      this.scheduleReconnect();
    };
    socket.onerror = () => {
      // onclose follows with the code; nothing to add here.
    };
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    // Each attempt takes the next URL.
    const delay = rejoinDelayMs(this.attempt, this.urls.length, Math.random());
    this.attempt += 1;
    this.advance();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.open();
    }, delay);
  }

  /**
   * Sends a `report` of `totals` since our join; false when not sent (not joined, or the
   * server takes no reports).
   */
  report(totals: ReportTotals): boolean {
    if (this.reportEveryValue === null || this.socket?.readyState !== WebSocket.OPEN || this.peerIdValue === null) return false;
    this.socket.send(encodeReport(totals));
    return true;
  }

  /** Relays `data` to `to`; dropped silently while disconnected (the peer will retry). */
  send(to: string, data: unknown): void {
    if (this.socket?.readyState === WebSocket.OPEN && this.peerIdValue !== null) {
      this.socket.send(encodeSignal(to, data));
    }
  }

  /**
   * Asks the server for fresh ICE servers (new TURN credentials for our peer id), which
   * replace {@link iceServers} when they come. Done by itself before credentials expire;
   * call it when a TURN server refuses them. Returns false when not asked: not joined,
   * a server that does not know the request, or an ask less than
   * {@link MIN_ICE_REFRESH_MS} ago.
   */
  requestIceServers(): boolean {
    const now = performance.now();
    if (!this.iceSupported || now - this.iceAskedAt < MIN_ICE_REFRESH_MS) return false;
    if (this.socket?.readyState !== WebSocket.OPEN || this.peerIdValue === null) return false;
    this.iceAskedAt = now;
    this.iceAnswerDue = true;
    this.socket.send(encodeIce());
    return true;
  }

  private scheduleIceRefresh(): void {
    this.clearIceTimer();
    const expiresAt = credentialsExpireAt(this.iceServersValue);
    if (expiresAt === null || this.closed) return;
    const delay = Math.min(MAX_ICE_REFRESH_MS, Math.max(MIN_ICE_REFRESH_MS, (expiresAt - Date.now()) * ICE_REFRESH_SHARE));
    this.iceTimer = setTimeout(() => {
      this.iceTimer = null;
      // Not asked (too soon after a 401's ask): try again at the next chance.
      if (!this.requestIceServers() && this.iceSupported && this.peerIdValue !== null) this.scheduleIceRefresh();
    }, delay);
  }

  private clearIceTimer(): void {
    if (this.iceTimer) clearTimeout(this.iceTimer);
    this.iceTimer = null;
  }

  /** Leaves and joins again: a new id and a fresh sample of peers (when we found none). */
  rejoin(): void {
    if (this.socket?.readyState === WebSocket.OPEN && this.peerIdValue !== null) {
      this.socket.send(encodeLeave());
      this.peerIdValue = null;
      this.socket.send(encodeJoin(this.swarm));
    }
  }

  close(): void {
    this.closed = true;
    this.clearIceTimer();
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const socket = this.socket;
    this.socket = null;
    if (socket && socket.readyState <= WebSocket.OPEN) {
      if (socket.readyState === WebSocket.OPEN) socket.send(encodeLeave());
      socket.close(1000);
    }
  }
}
