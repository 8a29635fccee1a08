/**
 * A fake WebRTC stack: RTCPeerConnection and RTCDataChannel in one process, enough for
 * connections.ts. An offer's SDP names the connection that made it, so the answerer finds
 * its other end; once both ends hold both descriptions (and the network lets connections
 * through), the answerer gets the offerer's data channels and both ends open. Messages
 * are copied and delivered in later tasks; `FakeNet.intercept` may drop or alter them.
 */
import { later } from './tasks.js';

export type Intercept = (msg: { from: FakeDataChannel; to: FakeDataChannel; data: Uint8Array }) => Uint8Array | null;

/** One fake network: the connections made while it is installed, and its behaviour. */
export class FakeNet {
  readonly connections: FakePeerConnection[] = [];
  /** False: ICE never completes, channels never open (a peer behind a hostile NAT). */
  connectable = true;
  /**
   * How ICE ends where `connectable` is false. null (the default): it never starts, the
   * states stay 'new'. A number: once both ends hold both descriptions, ICE checks
   * (`iceConnectionState` 'checking', `connectionState` 'connecting') and fails after this
   * many milliseconds, as browsers do when no candidate pair answers (a setTimeout, so
   * fake timers run it); Infinity: it checks forever.
   */
  failAfterMs: number | null = null;
  /** Sees every message on its way; returns what arrives (null: lost). */
  intercept: Intercept | null = null;
  /**
   * How each STUN/TURN URL of a connection's `iceServers` answers while it gathers: null
   * (the default) leaves servers out of gathering; a function says, per URL, 'ok' (a
   * server-reflexive candidate from `stun:`, a relay one from `turn:`) or the error the
   * browser reports (an `icecandidateerror` event with that code).
   */
  iceServerAnswer: ((url: string, server: RTCIceServer) => 'ok' | { errorCode: number; errorText: string }) | null = null;
  /** Messages sent, and delivered, over all channels. */
  sent = 0;
  delivered = 0;
  private nextId = 1;

  /** @internal */
  register(pc: FakePeerConnection): number {
    this.connections.push(pc);
    return this.nextId++;
  }

  /** @internal */
  byId(id: number): FakePeerConnection | undefined {
    return this.connections.find((pc) => pc.id === id);
  }

  /** The open data channels. */
  openChannels(): FakeDataChannel[] {
    return this.connections.flatMap((pc) => pc.channels).filter((c) => c.readyState === 'open');
  }
}

type Handler<E> = ((ev: E) => void) | null;

export class FakeDataChannel {
  readyState: RTCDataChannelState = 'connecting';
  binaryType: BinaryType = 'blob';
  bufferedAmount = 0;
  bufferedAmountLowThreshold = 0;
  onopen: Handler<Event> = null;
  onmessage: Handler<MessageEvent> = null;
  onclose: Handler<Event> = null;
  onerror: Handler<Event> = null;
  onbufferedamountlow: Handler<Event> = null;
  /** The other end, once connected. */
  remote: FakeDataChannel | null = null;

  constructor(
    readonly pc: FakePeerConnection,
    readonly label: string,
    readonly ordered: boolean,
    readonly maxRetransmits: number | null,
  ) {}

  send(data: ArrayBuffer | ArrayBufferView): void {
    if (this.readyState !== 'open') throw new DOMException(`channel is ${this.readyState}`, 'InvalidStateError');
    const view = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const copy = new Uint8Array(view); // the sender may reuse its buffer
    const net = this.pc.net;
    net.sent += 1;
    const to = this.remote;
    if (!to) return;
    later(() => {
      if (to.readyState !== 'open') return;
      const arrived = net.intercept ? net.intercept({ from: this, to, data: copy }) : copy;
      if (!arrived) return;
      net.delivered += 1;
      const buffer = new Uint8Array(arrived).buffer;
      to.onmessage?.(new MessageEvent('message', { data: to.binaryType === 'arraybuffer' ? buffer : new Blob([buffer]) }));
    });
  }

  /** Closes both ends; `close` fires on each (as the SCTP stream resets). */
  close(): void {
    if (this.readyState === 'closed' || this.readyState === 'closing') return;
    this.readyState = 'closing';
    const remote = this.remote;
    later(() => this.closed(true));
    if (remote) later(() => remote.closed(true));
  }

  /** @internal */
  opened(): void {
    if (this.readyState !== 'connecting') return;
    this.readyState = 'open';
    this.onopen?.(new Event('open'));
  }

  /** @internal */
  closed(fire: boolean): void {
    if (this.readyState === 'closed') return;
    this.readyState = 'closed';
    if (fire) this.onclose?.(new Event('close'));
  }
}

interface Description {
  type: RTCSdpType;
  sdp: string;
}

export class FakePeerConnection extends EventTarget {
  readonly id: number;
  iceGatheringState: RTCIceGatheringState = 'new';
  readonly channels: FakeDataChannel[] = [];
  connectionState: RTCPeerConnectionState = 'new';
  iceConnectionState: RTCIceConnectionState = 'new';
  localDescription: Description | null = null;
  remoteDescription: Description | null = null;
  onicecandidate: Handler<{ candidate: { toJSON(): RTCIceCandidateInit } | null }> = null;
  onconnectionstatechange: Handler<Event> = null;
  ondatachannel: Handler<{ channel: FakeDataChannel }> = null;
  /** Candidates the other end relayed to us. */
  readonly candidates: RTCIceCandidateInit[] = [];
  private other: FakePeerConnection | null = null;
  /** The slow failure {@link FakeNet.failAfterMs} scheduled. */
  private failTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    readonly net: FakeNet,
    readonly config: RTCConfiguration = {},
  ) {
    super();
    this.id = net.register(this);
  }

  getConfiguration(): RTCConfiguration {
    return this.config;
  }

  createDataChannel(label: string, init: RTCDataChannelInit = {}): FakeDataChannel {
    if (this.connectionState === 'closed') throw new DOMException('closed', 'InvalidStateError');
    const channel = new FakeDataChannel(this, label, init.ordered ?? true, init.maxRetransmits ?? null);
    this.channels.push(channel);
    return channel;
  }

  async createOffer(): Promise<Description> {
    this.checkOpen();
    return { type: 'offer', sdp: `v=0 fake-pc ${this.id}` };
  }

  async createAnswer(): Promise<Description> {
    this.checkOpen();
    if (this.remoteDescription?.type !== 'offer') throw new DOMException('no remote offer', 'InvalidStateError');
    return { type: 'answer', sdp: `v=0 fake-pc ${this.id}` };
  }

  async setLocalDescription(desc: Description): Promise<void> {
    this.checkOpen();
    this.localDescription = desc;
    // One host candidate, the servers' (FakeNet.iceServerAnswer), then the end of
    // candidates, as a browser gathers them.
    later(() => {
      if (this.connectionState === 'closed') return;
      this.iceGatheringState = 'gathering';
      this.candidate('127.0.0.1', 'host');
      for (const server of this.net.iceServerAnswer ? (this.config.iceServers ?? []) : []) {
        for (const url of typeof server.urls === 'string' ? [server.urls] : server.urls) {
          const answer = this.net.iceServerAnswer!(url, server);
          if (answer === 'ok') this.candidate('198.51.100.7', url.startsWith('turn') ? 'relay' : 'srflx');
          else this.dispatchEvent(Object.assign(new Event('icecandidateerror'), { url, ...answer }));
        }
      }
      this.onicecandidate?.({ candidate: null });
      this.dispatchEvent(Object.assign(new Event('icecandidate'), { candidate: null }));
      this.iceGatheringState = 'complete';
      this.dispatchEvent(new Event('icegatheringstatechange'));
    });
    this.maybeConnect();
  }

  private candidate(address: string, type: RTCIceCandidateType): void {
    const line = `candidate:${this.id} 1 udp 1 ${address} 9 typ ${type}`;
    this.onicecandidate?.({ candidate: { toJSON: () => ({ candidate: line, sdpMid: '0' }) } });
    this.dispatchEvent(Object.assign(new Event('icecandidate'), { candidate: { type, candidate: line } }));
  }

  async setRemoteDescription(desc: RTCSessionDescriptionInit): Promise<void> {
    this.checkOpen();
    const m = /^v=0 fake-pc (\d+)$/.exec(desc.sdp ?? '');
    const other = m ? this.net.byId(Number(m[1])) : undefined;
    if (!other || other === this) throw new DOMException('cannot parse the SDP', 'OperationError');
    this.other = other;
    this.remoteDescription = { type: desc.type ?? 'offer', sdp: desc.sdp ?? '' };
    this.maybeConnect();
  }

  async addIceCandidate(candidate: RTCIceCandidateInit): Promise<void> {
    this.checkOpen();
    if (!this.remoteDescription) throw new DOMException('no remote description yet', 'InvalidStateError');
    this.candidates.push(candidate);
  }

  close(): void {
    if (this.connectionState === 'closed') return;
    this.connectionState = 'closed';
    this.iceConnectionState = 'closed';
    if (this.failTimer !== null) clearTimeout(this.failTimer);
    this.failTimer = null;
    // Our channels close without events; the other end's close with them.
    for (const channel of this.channels) {
      const remote = channel.remote;
      channel.closed(false);
      if (remote) later(() => remote.closed(true));
    }
  }

  /** Fails the connection as ICE does when the path breaks. */
  fail(): void {
    if (this.connectionState === 'closed') return;
    if (this.failTimer !== null) clearTimeout(this.failTimer);
    this.failTimer = null;
    this.iceConnectionState = 'failed';
    this.setState('failed');
  }

  async getStats(): Promise<Map<string, Record<string, unknown>>> {
    const report = new Map<string, Record<string, unknown>>();
    if (this.connectionState !== 'connected') return report;
    report.set('T', { id: 'T', type: 'transport', selectedCandidatePairId: 'P' });
    report.set('P', { id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R' });
    report.set('L', { id: 'L', type: 'local-candidate', address: '127.0.0.1', candidateType: 'host' });
    report.set('R', { id: 'R', type: 'remote-candidate', address: '127.0.0.1', candidateType: 'host' });
    return report;
  }

  private checkOpen(): void {
    if (this.connectionState === 'closed') throw new DOMException('the connection is closed', 'InvalidStateError');
  }

  private setState(state: RTCPeerConnectionState): void {
    if (state === 'connected') this.iceConnectionState = 'connected';
    this.connectionState = state;
    this.onconnectionstatechange?.(new Event('connectionstatechange'));
  }

  /** Both ends hold both descriptions: connect them (in a later task, as ICE does). */
  private maybeConnect(): void {
    const other = this.other;
    if (!other || other.other !== this) return;
    if (!this.localDescription || !this.remoteDescription || !other.localDescription || !other.remoteDescription) return;
    const offerer = this.localDescription.type === 'offer' ? this : other;
    const answerer = offerer === this ? other : this;
    if (!this.net.connectable) {
      const failAfterMs = this.net.failAfterMs;
      if (failAfterMs === null) return;
      // ICE checks that nobody answers: 'checking' until they time out (or forever).
      for (const pc of [offerer, answerer]) {
        if (pc.connectionState !== 'new') continue;
        pc.iceConnectionState = 'checking';
        pc.setState('connecting');
        if (failAfterMs !== Infinity) pc.failTimer = setTimeout(() => pc.fail(), failAfterMs);
      }
      return;
    }
    later(() => {
      if (offerer.connectionState === 'closed' || answerer.connectionState === 'closed') return;
      offerer.setState('connected');
      answerer.setState('connected');
      for (const channel of offerer.channels) {
        if (channel.remote) continue;
        const twin = new FakeDataChannel(answerer, channel.label, channel.ordered, channel.maxRetransmits);
        twin.readyState = 'open';
        channel.remote = twin;
        twin.remote = channel;
        answerer.channels.push(twin);
        answerer.ondatachannel?.({ channel: twin });
        twin.onopen?.(new Event('open'));
        channel.opened();
      }
    });
  }
}

/** Puts a fake RTCPeerConnection on `net` in place of the global one; returns the undo. */
export function installWebRtc(net: FakeNet): () => void {
  const g = globalThis as { RTCPeerConnection?: unknown };
  const had = Object.prototype.hasOwnProperty.call(g, 'RTCPeerConnection');
  const before = g.RTCPeerConnection;
  g.RTCPeerConnection = class extends FakePeerConnection {
    constructor(config?: RTCConfiguration) {
      super(net, config);
    }
  };
  return () => {
    if (had) g.RTCPeerConnection = before;
    else delete g.RTCPeerConnection;
  };
}
