/**
 * An in-memory signaling server (docs/SIGNALING.md, version 1) and the WebSocket that
 * reaches it, for tests that run Swarms without a network: `new WebSocket(server.url)`
 * connects to the server registered at that URL; any other URL fails as an unreachable
 * server does (close code 1006 without an open).
 */
import { later } from './tasks.js';

const servers = new Map<string, FakeSignalServer>();
let serverCount = 0;

interface Client {
  socket: FakeWebSocket;
  peerId: string | null;
  swarm: string | null;
}

/** What a client sent, as the server parsed it. */
export interface Received {
  from: string | null;
  msg: Record<string, unknown>;
}

export class FakeSignalServer {
  readonly url: string;
  private readonly clients = new Set<Client>();
  private nextPeer = 1;
  /** Every client message, in order. */
  readonly received: Received[] = [];
  /** Answers joins with `unavailable` and closes (1013), as an instance that lost its Redis. */
  unavailable = false;
  /** Accepts connections and never answers anything (a hung process, a proxy holding the upgrade). */
  silent = false;
  /** The welcome's `reportEvery` (seconds between reports); null: the server takes none. */
  reportEvery: number | null = null;
  /** Peers a room needs before welcomes list any (`p2pFrom` below it); 0: always. */
  p2pMinPeers = 0;

  constructor() {
    serverCount += 1;
    this.url = `ws://fake-signal-${serverCount}.test/ws`;
    servers.set(this.url, this);
  }

  /** Peer ids in `swarm`'s room, in the order they joined. */
  room(swarm: string): string[] {
    return [...this.clients].filter((c) => c.swarm === swarm && c.peerId !== null).map((c) => c.peerId as string);
  }

  /** Relays `data` to `to` as if peer `from` had sent it (a peer the test plays). */
  inject(to: string, from: string, data: unknown): void {
    const client = this.byPeer(to);
    if (client) this.push(client, { type: 'signal', from, data });
  }

  /** Registers the server again after {@link close} (as a server coming back up). */
  reopen(): void {
    servers.set(this.url, this);
  }

  /** Unregisters the server and drops every connection (as a server going down). */
  close(): void {
    servers.delete(this.url);
    for (const client of [...this.clients]) client.socket.serverClosed(1001);
  }

  /** @internal A socket opened to this server. */
  connect(socket: FakeWebSocket): Client {
    const client: Client = { socket, peerId: null, swarm: null };
    this.clients.add(client);
    return client;
  }

  /** @internal */
  message(client: Client, text: string): void {
    const msg = JSON.parse(text) as Record<string, unknown>;
    this.received.push({ from: client.peerId, msg });
    if (this.silent) return;
    switch (msg.type) {
      case 'join': {
        if (client.peerId !== null) {
          this.push(client, { type: 'error', code: 'already-joined', message: 'leave first' });
          return;
        }
        if (this.unavailable) {
          this.push(client, { type: 'error', code: 'unavailable', message: 'no room store', fatal: true });
          client.socket.serverClosed(1013);
          return;
        }
        const swarm = String(msg.swarm);
        const held = this.room(swarm).length + 1 < this.p2pMinPeers;
        const peers = held ? [] : this.room(swarm);
        client.peerId = (this.nextPeer++).toString(16).padStart(32, '0');
        client.swarm = swarm;
        const welcome: Record<string, unknown> = { type: 'welcome', v: 1, swarm, peer_id: client.peerId, peers };
        if (this.reportEvery !== null) welcome.reportEvery = this.reportEvery;
        if (held) welcome.p2pFrom = this.p2pMinPeers;
        this.push(client, welcome);
        break;
      }
      case 'signal': {
        const to = this.byPeer(String(msg.to));
        if (!to || to === client || to.swarm !== client.swarm) {
          this.push(client, { type: 'error', code: 'unknown-peer', message: `no peer ${String(msg.to)}` });
          return;
        }
        this.push(to, { type: 'signal', from: client.peerId, data: msg.data });
        break;
      }
      case 'leave':
        this.leave(client);
        break;
      default:
        break;
    }
  }

  /** @internal The client's socket closed. */
  disconnect(client: Client): void {
    this.leave(client);
    this.clients.delete(client);
  }

  private leave(client: Client): void {
    const { peerId, swarm } = client;
    if (peerId === null) return;
    client.peerId = null;
    client.swarm = null;
    for (const other of this.clients) {
      if (other !== client && other.swarm === swarm) this.push(other, { type: 'peer-left', peer_id: peerId });
    }
  }

  private byPeer(peerId: string): Client | undefined {
    return [...this.clients].find((c) => c.peerId === peerId);
  }

  private push(client: Client, msg: Record<string, unknown>): void {
    client.socket.deliver(JSON.stringify(msg));
  }
}

/** The WebSocket members SignalingClient uses. */
export class FakeWebSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;

  readyState = FakeWebSocket.CONNECTING;
  onopen: ((ev: Event) => void) | null = null;
  onmessage: ((ev: MessageEvent) => void) | null = null;
  onclose: ((ev: CloseEvent) => void) | null = null;
  onerror: ((ev: Event) => void) | null = null;
  private client: Client | null = null;
  private server: FakeSignalServer | undefined;

  constructor(readonly url: string) {
    this.server = servers.get(url);
    later(() => {
      if (this.readyState !== FakeWebSocket.CONNECTING) return;
      if (!this.server) {
        this.finish(1006, '');
        return;
      }
      this.client = this.server.connect(this);
      this.readyState = FakeWebSocket.OPEN;
      this.onopen?.(new Event('open'));
    });
  }

  send(text: string): void {
    if (this.readyState !== FakeWebSocket.OPEN) throw new DOMException('not open', 'InvalidStateError');
    const client = this.client;
    const server = this.server;
    later(() => {
      if (client && server) server.message(client, text);
    });
  }

  close(code = 1000): void {
    if (this.readyState >= FakeWebSocket.CLOSING) return;
    this.readyState = FakeWebSocket.CLOSING;
    later(() => this.finish(code, ''));
  }

  /** @internal A server message for this socket. */
  deliver(text: string): void {
    later(() => {
      if (this.readyState === FakeWebSocket.OPEN) this.onmessage?.(new MessageEvent('message', { data: text }));
    });
  }

  /** @internal The server went away. */
  serverClosed(code: number): void {
    later(() => this.finish(code, 'server closed'));
  }

  private finish(code: number, reason: string): void {
    if (this.readyState === FakeWebSocket.CLOSED) return;
    this.readyState = FakeWebSocket.CLOSED;
    if (this.client && this.server) this.server.disconnect(this.client);
    this.client = null;
    const ev = Object.assign(new Event('close'), { code, reason, wasClean: code === 1000 }) as CloseEvent;
    this.onclose?.(ev);
  }
}

/** Puts {@link FakeWebSocket} in place of the global WebSocket; returns the undo. */
export function installWebSocket(): () => void {
  const g = globalThis as { WebSocket?: unknown };
  const had = Object.prototype.hasOwnProperty.call(g, 'WebSocket');
  const before = g.WebSocket;
  g.WebSocket = FakeWebSocket;
  return () => {
    if (had) g.WebSocket = before;
    else delete g.WebSocket;
  };
}
