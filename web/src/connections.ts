/**
 * WebRTC connections of one swarm: one RTCPeerConnection and one data channel per remote
 * peer, set up through signaling. Data channels are unordered with `maxRetransmits: 0`
 * and carry one PPSPP datagram per message: PPSPP retransmits and paces by itself, so
 * SCTP must not.
 *
 * Connections are created only when used (never pre-created offers: Chromium allows
 * about 500 RTCPeerConnections per page lifetime), at most `maxConnections` at once.
 */
import { ChannelSender, type SendCounts } from './channel-sender.js';
import { PpsppError } from './errors.js';
import { IceServerWatch } from './ice-server-watch.js';
import { MAX_DATA_BATCH_BYTES } from './options.js';
import type { SignalingClient } from './signaling.js';

/** What connections use of signaling (an HTTP-only swarm has none: see `Swarm`). */
export type SignalPath = Pick<SignalingClient, 'send' | 'iceServers' | 'requestIceServers' | 'peerId'>;

/** The ICE candidate pair a connection uses: addresses and candidate types (host, srflx, prflx, relay). */
export interface SelectedPair {
  local: string;
  remote: string;
  localType: RTCIceCandidateType;
  remoteType: RTCIceCandidateType;
}

/** The data channel's label; the native seeder uses the same. */
export const CHANNEL_LABEL = 'ppspp';
/** Chromium allows about 500 RTCPeerConnections per page; stay clear of it. */
export const LIFETIME_CONNECTION_LIMIT = 400;

export interface ConnectionHandlers {
  /** The data channel to `handle` opened; `initiator` when we sent the offer. */
  open(handle: number, remote: string, initiator: boolean): void;
  message(handle: number, data: Uint8Array): void;
  /** The connection is gone (`wasOpen`: its channel had opened). */
  closed(handle: number, remote: string, wasOpen: boolean): void;
  error(err: PpsppError): void;
  /** A connection was added, opened or dropped: {@link Connections.size} or `openCount` may differ. */
  changed?(): void;
  /**
   * The data channel to `handle`, just made or received and not used yet: true if the
   * engine takes it over (transferred to its Worker), after which it sends and receives on
   * it and this page neither sends nor listens: it learns that the channel opened by
   * {@link Connections.channelOpened} and that it ended by {@link Connections.channelEnded}.
   */
  adopt?(handle: number, channel: RTCDataChannel): boolean;
}

/** Offers made again to a remote whose attempts failed before opening. */
const MAX_OFFER_RETRIES = 3;

interface Conn {
  handle: number;
  remote: string;
  pc: RTCPeerConnection;
  channel: RTCDataChannel | null;
  initiator: boolean;
  open: boolean;
  /** The remote says it holds all of the content from the start (a seeder). */
  remoteSeeder: boolean;
  /** The longest message of several chunks the remote says it reads (0: one chunk each). */
  remoteDataBatch: number;
  /** Signaling steps run one after another (candidates wait for the remote description). */
  chain: Promise<void>;
  /** Sends on `channel` once it is attached (none once the engine took it over). */
  sender: ChannelSender | null;
  /** The engine took the channel over: it is not this page's to touch any more. */
  adopted: boolean;
  timer: ReturnType<typeof setTimeout> | null;
}

export interface ConnectionOptions {
  /**
   * The page's own ICE servers (the `iceServers` option). Each connection uses these
   * followed by the signaling server's from its latest `welcome`
   * ({@link SignalingClient.iceServers}): see {@link Connections.rtcConfiguration}.
   */
  iceServers: RTCIceServer[];
  /** `'relay'`: TURN relays only, so no peer learns this page's addresses. */
  iceTransportPolicy: RTCIceTransportPolicy;
  maxConnections: number;
  connectTimeoutMs: number;
  /** Say in our offers and answers that we seed (for others' offload figures). */
  seeder: () => boolean;
  /** The longest message of several chunks we read and send (0: one chunk each). */
  dataBatchBytes: number;
}

/** A remote's `dataBatch` (untrusted): a whole number of bytes the engine reads, else 0. */
function dataBatchOf(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= MAX_DATA_BATCH_BYTES ? value : 0;
}

/** Whether the page has RTCPeerConnection (WebRTC's data channels). */
export function hasWebRtc(): boolean {
  return typeof RTCPeerConnection !== 'undefined';
}

/** What the `p2p-unavailable` event says when a page without WebRTC plays from HTTP. */
export function webRtcUnsupported(): { reason: 'webrtc-unsupported'; message: string } {
  return {
    reason: 'webrtc-unsupported',
    message: 'this browser has no WebRTC (RTCPeerConnection): playing from the HTTP origin alone',
  };
}

/**
 * Throws `webrtc-unsupported` where the page has no RTCPeerConnection (some WebKit builds,
 * or WebRTC disabled by policy): without data channels a page cannot join a swarm, and it
 * should say so rather than wait for peers forever.
 */
export function requireWebRtc(): void {
  if (!hasWebRtc()) {
    throw new PpsppError('webrtc-unsupported', 'this browser has no WebRTC (RTCPeerConnection): it cannot join a swarm');
  }
}

export class Connections {
  private readonly byHandle = new Map<number, Conn>();
  private readonly byRemote = new Map<string, Conn>();
  /** Offers to a remote that failed before opening, made again after a back-off. */
  private readonly retries = new Map<string, { count: number; timer: ReturnType<typeof setTimeout> | null }>();
  private nextHandle = 1;
  private created = 0;
  private limitReported = false;
  /** The signaling server's ICE servers the browser refused (left out until a new welcome). */
  private refusedIceServers: RTCIceServer[] | null = null;
  private iceRefusalReported = false;
  private readonly iceWatch: IceServerWatch;
  /** Messages sent, and dropped (no open channel, or its buffer and our queue full). */
  private readonly counts: SendCounts = { sent: 0, dropped: 0 };
  received = 0;

  constructor(
    private readonly signaling: SignalPath,
    private readonly options: ConnectionOptions,
    private readonly handlers: ConnectionHandlers,
  ) {
    this.iceWatch = new IceServerWatch({
      signaled: () => this.signaling.iceServers,
      refresh: () => this.signaling.requestIceServers(),
      error: (err) => this.handlers.error(err),
    });
  }

  /** Connections, those being set up included (each holds one of `maxConnections`' slots). */
  get size(): number {
    return this.byHandle.size;
  }

  /**
   * Peers: connections whose data channel opened (the `open` callback came, and `closed`
   * has not). Attempts still in ICE or DTLS are not peers: they may fail late or never
   * complete, and are closed after `connectTimeoutMs`.
   */
  get openCount(): number {
    let n = 0;
    for (const conn of this.byHandle.values()) if (conn.open) n += 1;
    return n;
  }

  has(remote: string): boolean {
    return this.byRemote.has(remote);
  }

  /** The signaling peer id behind `handle` ('' once it is gone). */
  remoteOf(handle: number): string {
    return this.byHandle.get(handle)?.remote ?? '';
  }

  /**
   * How long a message of several chunks to `handle` may be (0: one chunk per message):
   * the shorter of what we and the remote said, within what its data channel carries.
   */
  dataBatchTo(handle: number): number {
    const conn = this.byHandle.get(handle);
    if (!conn) return 0;
    const carried = conn.pc.sctp?.maxMessageSize ?? 0;
    const batch = Math.min(this.options.dataBatchBytes, conn.remoteDataBatch, carried > 0 ? carried : Infinity);
    return batch > 0 ? batch : 0;
  }

  /** What our offers and answers say about us besides the SDP. */
  private aboutUs(): { seeder: boolean; dataBatch?: number } {
    const seeder = this.options.seeder();
    return this.options.dataBatchBytes > 0 ? { seeder, dataBatch: this.options.dataBatchBytes } : { seeder };
  }

  /** True for a handle whose remote said it seeds. */
  isSeeder(handle: number): boolean {
    return this.byHandle.get(handle)?.remoteSeeder ?? false;
  }

  private canCreate(): boolean {
    if (this.byHandle.size >= this.options.maxConnections) return false;
    if (this.created >= LIFETIME_CONNECTION_LIMIT) {
      if (!this.limitReported) {
        this.limitReported = true;
        this.handlers.error(
          new PpsppError(
            'no-peers',
            `this page created ${this.created} peer connections; browsers allow about 500 per page, so no more are made`,
          ),
        );
      }
      return false;
    }
    return true;
  }

  /**
   * The configuration of a new connection: the page's own `iceServers` first, then the
   * ones of the latest `welcome` (merged, not replaced: a page's STUN server and the
   * server's TURN credentials both count). Read at each connection, so connections made
   * after a rejoin use the credentials that rejoin brought.
   */
  rtcConfiguration(): RTCConfiguration {
    const signaled = this.signaling.iceServers;
    const iceTransportPolicy = this.options.iceTransportPolicy;
    if (signaled.length === 0 || signaled === this.refusedIceServers) return { iceServers: this.options.iceServers, iceTransportPolicy };
    return { iceServers: [...this.options.iceServers, ...signaled], iceTransportPolicy };
  }

  /**
   * A new RTCPeerConnection. Should the browser refuse the signaling server's ICE servers
   * (a URL it cannot parse, TURN without credentials), the page's own servers are used
   * until the next welcome brings others, and the first refusal is reported as a
   * `signaling-error`.
   */
  private newPeerConnection(): RTCPeerConnection {
    const config = this.rtcConfiguration();
    const own = { iceServers: this.options.iceServers, iceTransportPolicy: this.options.iceTransportPolicy };
    if (config.iceServers === this.options.iceServers) return new RTCPeerConnection(config);
    try {
      return new RTCPeerConnection(config);
    } catch (err) {
      this.refusedIceServers = this.signaling.iceServers;
      if (!this.iceRefusalReported) {
        this.iceRefusalReported = true;
        this.handlers.error(
          new PpsppError('signaling-error', `the browser refused the signaling server's iceServers (${String(err)}); using the page's own`),
        );
      }
      return new RTCPeerConnection(own);
    }
  }

  private create(remote: string, initiator: boolean): Conn {
    const pc = this.newPeerConnection();
    this.iceWatch.watch(pc, pc.getConfiguration().iceServers ?? []);
    this.created += 1;
    const conn: Conn = {
      handle: this.nextHandle++,
      remote,
      pc,
      channel: null,
      initiator,
      open: false,
      remoteSeeder: false,
      remoteDataBatch: 0,
      chain: Promise.resolve(),
      sender: null,
      adopted: false,
      timer: null,
    };
    this.nextHandle = this.nextHandle > 0xffff_fff0 ? 1 : this.nextHandle;
    this.byHandle.set(conn.handle, conn);
    this.handlers.changed?.();
    this.byRemote.set(remote, conn);
    conn.timer = setTimeout(() => {
      if (!conn.open) this.drop(conn);
    }, this.options.connectTimeoutMs);
    pc.onicecandidate = (ev) => {
      if (ev.candidate) this.signaling.send(remote, { kind: 'candidate', candidate: ev.candidate.toJSON() });
    };
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === 'failed' || pc.connectionState === 'closed') this.drop(conn);
    };
    return conn;
  }

  private attach(conn: Conn, channel: RTCDataChannel): void {
    conn.channel = channel;
    // Offered to the engine before anything here touches it: a browser transfers a
    // channel to a Worker only while it is unused (Firefox: only one we made, not open yet).
    if (this.handlers.adopt?.(conn.handle, channel)) {
      conn.adopted = true;
      return;
    }
    conn.sender = new ChannelSender(channel, this.counts);
    channel.binaryType = 'arraybuffer';
    channel.onopen = () => this.opened(conn);
    channel.onmessage = (ev: MessageEvent) => {
      if (ev.data instanceof ArrayBuffer) {
        this.received += 1;
        this.handlers.message(conn.handle, new Uint8Array(ev.data));
      }
    };
    channel.onclose = () => this.drop(conn);
  }

  /** Offers a connection to `remote` unless one exists or we are full. */
  offer(remote: string): boolean {
    if (this.byRemote.has(remote) || !this.canCreate()) return false;
    const conn = this.create(remote, true);
    const channel = conn.pc.createDataChannel(CHANNEL_LABEL, { ordered: false, maxRetransmits: 0 });
    this.attach(conn, channel);
    this.step(conn, async () => {
      const offer = await conn.pc.createOffer();
      await conn.pc.setLocalDescription(offer);
      this.signaling.send(remote, { kind: 'offer', sdp: offer.sdp, ...this.aboutUs() });
    });
    return true;
  }

  /** A relayed signaling message from `from` (untrusted: bad input is ignored). */
  onSignal(from: string, data: unknown): void {
    if (typeof data !== 'object' || data === null) return;
    const msg = data as { kind?: unknown; sdp?: unknown; candidate?: unknown; seeder?: unknown; dataBatch?: unknown };
    const existing = this.byRemote.get(from);
    if (msg.kind === 'offer' && typeof msg.sdp === 'string') {
      if (existing) {
        // Both sides offered at once: the peer with the larger id yields and answers.
        const ours = this.signaling.peerId ?? '';
        if (!existing.initiator || existing.open || ours < from) return;
        this.drop(existing);
      }
      if (!this.canCreate()) return;
      const conn = this.create(from, false);
      conn.remoteSeeder = msg.seeder === true;
      conn.remoteDataBatch = dataBatchOf(msg.dataBatch);
      conn.pc.ondatachannel = (ev) => {
        if (ev.channel.label === CHANNEL_LABEL && !conn.channel) this.attach(conn, ev.channel);
      };
      const sdp = msg.sdp;
      this.step(conn, async () => {
        await conn.pc.setRemoteDescription({ type: 'offer', sdp });
        const answer = await conn.pc.createAnswer();
        await conn.pc.setLocalDescription(answer);
        this.signaling.send(from, { kind: 'answer', sdp: answer.sdp, ...this.aboutUs() });
      });
    } else if (msg.kind === 'answer' && typeof msg.sdp === 'string' && existing?.initiator) {
      existing.remoteSeeder = msg.seeder === true;
      existing.remoteDataBatch = dataBatchOf(msg.dataBatch);
      const sdp = msg.sdp;
      this.step(existing, () => existing.pc.setRemoteDescription({ type: 'answer', sdp }));
    } else if (msg.kind === 'candidate' && existing && typeof msg.candidate === 'object' && msg.candidate) {
      const candidate = msg.candidate as RTCIceCandidateInit;
      this.step(existing, () => existing.pc.addIceCandidate(candidate));
    }
  }

  private step(conn: Conn, f: () => Promise<void>): void {
    conn.chain = conn.chain.then(f).catch(() => {
      // A malformed SDP or candidate from a peer: give up on this connection only.
      this.drop(conn);
    });
  }

  /** The remote left signaling: a connection still being set up cannot complete. */
  remoteLeft(remote: string): void {
    const conn = this.byRemote.get(remote);
    if (conn && !conn.open) this.drop(conn);
    this.cancelRetry(remote);
  }

  /**
   * An attempt we offered failed before its channel opened (ICE failed or timed out):
   * offer again after 1, 2, then 4 s. Across NATs the first attempt can fail for reasons
   * that pass (a TURN permission or a NAT mapping made too late), and nothing else would
   * bring the two peers together while either has other connections.
   */
  private scheduleRetry(remote: string): void {
    const entry = this.retries.get(remote) ?? { count: 0, timer: null };
    if (entry.count >= MAX_OFFER_RETRIES || entry.timer !== null) return;
    entry.timer = setTimeout(() => {
      entry.timer = null;
      entry.count += 1;
      this.offer(remote);
    }, 1000 * 2 ** entry.count);
    this.retries.set(remote, entry);
  }

  private cancelRetry(remote: string): void {
    const entry = this.retries.get(remote);
    if (entry?.timer) clearTimeout(entry.timer);
    this.retries.delete(remote);
  }

  /**
   * Sends one datagram, or queues it while the channel's buffer is full. Returns false
   * when it was dropped: no open channel, or the queue is full too.
   */
  send(handle: number, data: Uint8Array): boolean {
    const sender = this.byHandle.get(handle)?.sender;
    if (!sender) {
      this.counts.dropped += 1;
      return false;
    }
    return sender.send(data);
  }

  /** Messages dropped: no open channel, or its buffer and our queue were full. */
  get dropped(): number {
    return this.counts.dropped;
  }

  /** Messages handed to the data channels. */
  get sent(): number {
    return this.counts.sent;
  }

  /** Closes the connection to `handle` (no `closed` callback: the caller asked). */
  close(handle: number): void {
    const conn = this.byHandle.get(handle);
    if (conn) this.drop(conn, false);
  }

  /** The channel of `conn` opened: it is a peer now. */
  private opened(conn: Conn): void {
    if (conn.open || !this.byHandle.has(conn.handle)) return;
    conn.open = true;
    if (conn.timer) clearTimeout(conn.timer);
    conn.timer = null;
    this.cancelRetry(conn.remote);
    this.handlers.open(conn.handle, conn.remote, conn.initiator);
    this.handlers.changed?.();
  }

  /** The engine's Worker saw the data channel to `handle` open. */
  channelOpened(handle: number): void {
    const conn = this.byHandle.get(handle);
    if (conn?.adopted) this.opened(conn);
  }

  /** Whether the engine took the data channel to `handle` over. */
  isAdopted(handle: number): boolean {
    return this.byHandle.get(handle)?.adopted ?? false;
  }

  /** The engine's Worker saw the data channel to `handle` close: the connection ends. */
  channelEnded(handle: number): void {
    const conn = this.byHandle.get(handle);
    if (conn?.adopted) this.drop(conn);
  }

  closeAll(): void {
    for (const remote of [...this.retries.keys()]) this.cancelRetry(remote);
    for (const conn of [...this.byHandle.values()]) this.drop(conn, false);
  }

  private drop(conn: Conn, notify = true): void {
    if (this.byHandle.get(conn.handle) !== conn) return;
    this.byHandle.delete(conn.handle);
    if (this.byRemote.get(conn.remote) === conn) this.byRemote.delete(conn.remote);
    if (conn.timer) clearTimeout(conn.timer);
    // A channel the engine took over is closed there (its peer is lost) or already was.
    if (conn.channel && !conn.adopted) {
      conn.channel.onopen = null;
      conn.channel.onmessage = null;
      conn.channel.onclose = null;
      conn.channel.close();
    }
    conn.sender?.clear();
    conn.pc.onicecandidate = null;
    conn.pc.onconnectionstatechange = null;
    conn.pc.ondatachannel = null;
    conn.pc.close();
    if (notify && conn.initiator && !conn.open) this.scheduleRetry(conn.remote);
    if (notify) this.handlers.closed(conn.handle, conn.remote, conn.open);
    this.handlers.changed?.();
  }

  /**
   * The selected ICE candidate pair of every open connection, from getStats: where each
   * end is and how it was reached (tests prove traffic stayed on loopback, or crossed a
   * NAT directly or through a relay).
   */
  async selectedPairs(): Promise<SelectedPair[]> {
    const pairs: SelectedPair[] = [];
    for (const conn of this.byHandle.values()) {
      if (!conn.open) continue;
      const report = await conn.pc.getStats();
      const byId = new Map<string, Record<string, unknown>>();
      report.forEach((s: Record<string, unknown>) => byId.set(String(s.id), s));
      for (const s of byId.values()) {
        if (s.type !== 'transport' || typeof s.selectedCandidatePairId !== 'string') continue;
        const pair = byId.get(s.selectedCandidatePairId);
        const local = pair && byId.get(String(pair.localCandidateId));
        const remote = pair && byId.get(String(pair.remoteCandidateId));
        if (local && remote) {
          pairs.push({
            local: String(local.address),
            remote: String(remote.address),
            localType: String(local.candidateType) as RTCIceCandidateType,
            remoteType: String(remote.candidateType) as RTCIceCandidateType,
          });
        }
      }
    }
    return pairs;
  }
}
