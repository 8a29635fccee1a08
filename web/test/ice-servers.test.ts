/**
 * ICE servers from the signaling server's `welcome` (docs/SIGNALING.md): read leniently,
 * kept per (re)join by the SignalingClient, and merged after the page's own `iceServers`
 * into every new RTCPeerConnection's configuration (the fake one records it). A set the
 * browser refuses is reported once and left out; a Swarm with the real engine uses them.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { Connections, type ConnectionHandlers } from '../src/connections.js';
import type { PpsppError } from '../src/errors.js';
import { resolvePeerOptions } from '../src/options.js';
import { engineOptions } from '../src/engine-start.js';
import { SignalingClient, credentialsExpireAt, decodeIceServers, decodeServerMessage } from '../src/signaling.js';
import { Swarm } from '../src/swarm.js';
import { WasmPeer, parseUriLoaded } from '../src/wasm.js';
import { loadEngine } from './fakes/engine.js';
import { FakeWebSocket } from './fakes/signaling.js';
import { nextEvent } from './fakes/tasks.js';
import { randomBytes } from './fakes/webm.js';
import { FakeNet, FakePeerConnection, installWebRtc } from './fakes/webrtc.js';
import { useFakeWorld } from './fakes/world.js';

const SWARM = 'c89800bfc82ed01ed6e3bfd5408c51274491f7d4';
const PAGE_STUN: RTCIceServer = { urls: 'stun:stun.page.test:3478' };

function turn(n: number): RTCIceServer {
  return { urls: ['turn:198.51.100.1:3478?transport=udp'], username: `${1_700_000_000 + n}:peer${n}`, credential: `cred${n}=` };
}
const SERVER_STUN: RTCIceServer = { urls: ['stun:198.51.100.1:3478'] };

function welcomeText(peerId: string, peers: string[], iceServers?: unknown): string {
  const msg: Record<string, unknown> = { type: 'welcome', v: 1, swarm: SWARM, peer_id: peerId, peers };
  if (iceServers !== undefined) msg.iceServers = iceServers;
  return JSON.stringify(msg);
}

describe('decodeIceServers', () => {
  it('keeps RTCIceServer-shaped entries as sent, both forms of urls', () => {
    const servers = [{ urls: 'stun:a.test' }, { urls: ['turn:b.test', 'turns:b.test:5349'], username: '9:p', credential: 'c' }];
    expect(decodeIceServers(servers)).toStrictEqual(servers);
  });

  it('leaves out entries of another shape, and is undefined when nothing is left', () => {
    expect(
      decodeIceServers([
        null,
        'stun:a.test',
        { urls: 7 },
        { urls: [] },
        { urls: ['stun:a.test', 5] },
        { urls: '' },
        { urls: 'turn:x.test', username: 5, credential: 'c' },
        { urls: 'turn:x.test', username: 'u', credential: { secret: 1 } },
        { urls: 'stun:ok.test', credentialType: 'password', extra: true },
      ]),
    ).toStrictEqual([{ urls: 'stun:ok.test' }]);
    expect(decodeIceServers([{ urls: 1 }])).toBeUndefined();
    expect(decodeIceServers([])).toBeUndefined();
    expect(decodeIceServers({ urls: 'stun:a.test' })).toBeUndefined();
    expect(decodeIceServers(undefined)).toBeUndefined();
  });

  it('a welcome without usable iceServers has no such key', () => {
    expect(decodeServerMessage(welcomeText('p', [], 'nope'))).toStrictEqual({ type: 'welcome', peerId: 'p', peers: [] });
    expect(decodeServerMessage(welcomeText('p', [], [SERVER_STUN]))).toStrictEqual({
      type: 'welcome',
      peerId: 'p',
      peers: [],
      iceServers: [SERVER_STUN],
    });
  });
});

/** A WebSocket the test drives: it records what is sent and delivers what the test says. */
class ScriptedSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  static last: ScriptedSocket | null = null;
  readyState = ScriptedSocket.CONNECTING;
  readonly sent: string[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: (() => void) | null = null;

  constructor(readonly url: string) {
    ScriptedSocket.last = this;
  }

  open(): void {
    this.readyState = ScriptedSocket.OPEN;
    this.onopen?.();
  }

  deliver(text: string): void {
    this.onmessage?.({ data: text });
  }

  send(data: string): void {
    this.sent.push(data);
  }

  close(): void {
    this.readyState = ScriptedSocket.CLOSED;
  }
}

describe('Connections with the welcome’s ICE servers', () => {
  let net: FakeNet;
  const undo: (() => void)[] = [];
  let errors: PpsppError[];
  /** Closed after each test, before the fakes go: pending ICE gathering must not outlive it. */
  const opened: { client: SignalingClient; connections: Connections }[] = [];

  beforeEach(() => {
    net = new FakeNet();
    errors = [];
    vi.stubGlobal('WebSocket', ScriptedSocket);
    undo.push(installWebRtc(net));
  });

  afterEach(() => {
    for (const { client, connections } of opened.splice(0)) {
      connections.closeAll();
      client.close();
    }
    vi.unstubAllGlobals();
    for (const u of undo.splice(0).reverse()) u();
    ScriptedSocket.last = null;
  });

  /** A joined client and its connections, offering to every peer of each welcome. */
  async function joined(
    own: RTCIceServer[],
    firstIceServers: unknown,
  ): Promise<{ socket: ScriptedSocket; client: SignalingClient; connections: Connections; seen: RTCIceServer[][] }> {
    const seen: RTCIceServer[][] = [];
    const handlers: ConnectionHandlers = {
      open: () => {},
      message: () => {},
      closed: () => {},
      error: (err) => errors.push(err),
    };
    let connections: Connections | null = null;
    const client = new SignalingClient('ws://signal.test/ws', SWARM, {
      welcome: (_id, peers) => {
        // The welcome's servers are in place before its handler runs.
        seen.push(client.iceServers);
        for (const remote of peers) connections?.offer(remote);
      },
      signal: () => {},
      peerLeft: () => {},
      disconnected: () => {},
      error: (err) => errors.push(err),
    });
    connections = new Connections(client, { iceServers: own, iceTransportPolicy: 'all', maxConnections: 8, connectTimeoutMs: 15_000, seeder: () => false, dataBatchBytes: 0 }, handlers);
    opened.push({ client, connections });
    const started = client.start();
    const socket = ScriptedSocket.last;
    if (!socket) throw new Error('no socket');
    socket.open();
    socket.deliver(welcomeText('a'.repeat(32), ['b'.repeat(32)], firstIceServers));
    await started;
    return { socket, client, connections, seen };
  }

  function configs(): (RTCIceServer[] | undefined)[] {
    return net.connections.map((pc) => pc.config.iceServers);
  }

  it('uses the page’s servers followed by the welcome’s, and a rejoin’s new credentials for later connections', async () => {
    const { socket, client, connections, seen } = await joined([PAGE_STUN], [SERVER_STUN, turn(1)]);
    expect(seen).toEqual([[SERVER_STUN, turn(1)]]);
    expect(configs()).toEqual([[PAGE_STUN, SERVER_STUN, turn(1)]]);
    expect(connections.rtcConfiguration()).toEqual({ iceServers: [PAGE_STUN, SERVER_STUN, turn(1)], iceTransportPolicy: 'all' });

    // Rejoin (as the swarm does when alone): fresh credentials for what is made next.
    client.rejoin();
    socket.deliver(welcomeText('c'.repeat(32), ['d'.repeat(32)], [SERVER_STUN, turn(2)]));
    expect(client.iceServers).toEqual([SERVER_STUN, turn(2)]);
    connections.offer('e'.repeat(32));
    expect(configs()).toEqual([
      [PAGE_STUN, SERVER_STUN, turn(1)],
      [PAGE_STUN, SERVER_STUN, turn(2)],
      [PAGE_STUN, SERVER_STUN, turn(2)],
    ]);

    // A welcome without iceServers (the server's were removed): the page's alone.
    client.rejoin();
    socket.deliver(welcomeText('f'.repeat(32), ['0'.repeat(32)]));
    expect(client.iceServers).toEqual([]);
    expect(configs().at(-1)).toEqual([PAGE_STUN]);
    expect(errors).toEqual([]);
  });

  it('without page servers the welcome’s alone; with neither, none', async () => {
    await joined([], [turn(3)]);
    expect(configs()).toEqual([[turn(3)]]);
    net.connections.length = 0;
    const { connections } = await joined([], undefined);
    expect(configs()).toEqual([[]]);
    expect(connections.rtcConfiguration()).toEqual({ iceServers: [], iceTransportPolicy: 'all' });
  });

  it('a set the browser refuses is reported once, and the page’s servers are used until a welcome brings others', async () => {
    // As browsers do: a TURN URL without credentials makes the constructor throw.
    const g = globalThis as { RTCPeerConnection?: unknown };
    const strict = net;
    g.RTCPeerConnection = class extends FakePeerConnection {
      constructor(config?: RTCConfiguration) {
        for (const s of config?.iceServers ?? []) {
          const urls = typeof s.urls === 'string' ? [s.urls] : s.urls;
          if (urls.some((u) => u.startsWith('turn')) && (s.username === undefined || s.credential === undefined)) {
            throw new DOMException('TURN server needs a username and credential', 'InvalidAccessError');
          }
        }
        super(strict, config);
      }
    };
    const { socket, client, connections } = await joined([PAGE_STUN], [{ urls: 'turn:198.51.100.1' }]);
    connections.offer('9'.repeat(32));
    expect(configs()).toEqual([[PAGE_STUN], [PAGE_STUN]]);
    expect(errors.map((e) => e.code)).toEqual(['signaling-error']);
    expect(errors[0]?.message).toMatch(/refused the signaling server's iceServers \(.*TURN server needs a username.*\); using the page's own/);

    client.rejoin();
    socket.deliver(welcomeText('c'.repeat(32), ['d'.repeat(32)], [turn(4)]));
    expect(configs().at(-1)).toEqual([PAGE_STUN, turn(4)]);
    // A later refusal is not reported again.
    client.rejoin();
    socket.deliver(welcomeText('e'.repeat(32), ['f'.repeat(32)], [{ urls: ['turns:198.51.100.1'] }]));
    expect(configs().at(-1)).toEqual([PAGE_STUN]);
    expect(errors).toHaveLength(1);
  });

  /** TURN credentials expiring `inSeconds` from now (the page's clock), as the server issues them. */
  function expiring(inSeconds: number, n: number): RTCIceServer {
    return { urls: ['turn:198.51.100.1:3478?transport=udp'], username: `${Math.floor(Date.now() / 1000) + inSeconds}:peer${n}`, credential: `c${n}=` };
  }

  function asked(socket: ScriptedSocket): number {
    return socket.sent.filter((t) => (JSON.parse(t) as { type: string }).type === 'ice').length;
  }

  it('asks for fresh credentials before the welcome’s expire, and later connections use them', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance', 'Date'] });
    try {
      const { socket, client, connections } = await joined([], [expiring(100, 1)]);
      await vi.advanceTimersByTimeAsync(79_000);
      expect(asked(socket)).toBe(0);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(asked(socket)).toBe(1);
      const fresh = expiring(100, 2);
      socket.deliver(JSON.stringify({ type: 'ice-servers', iceServers: [fresh] }));
      expect(client.iceServers).toEqual([fresh]);
      connections.offer('c'.repeat(32));
      expect(configs().at(-1)).toEqual([fresh]);
      // And again before those expire.
      await vi.advanceTimersByTimeAsync(81_000);
      expect(asked(socket)).toBe(2);
      expect(errors).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a server that does not know `ice` is asked no more, and that is not reported', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance', 'Date'] });
    try {
      const { socket, client } = await joined([], [expiring(10, 1)]);
      await vi.advanceTimersByTimeAsync(9_000);
      expect(asked(socket)).toBe(1);
      socket.deliver(JSON.stringify({ type: 'error', code: 'unknown-type', message: 'unknown message type "ice"', fatal: false }));
      await vi.advanceTimersByTimeAsync(60_000);
      expect(client.requestIceServers()).toBe(false);
      expect(asked(socket)).toBe(1);
      expect(errors).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('credentials without a TURN REST expiry are never refreshed', () => {
    expect(credentialsExpireAt([SERVER_STUN, { urls: 'turn:x.test', username: 'alice', credential: 'c' }])).toBeNull();
    expect(credentialsExpireAt([turn(5), turn(2)])).toBe((1_700_000_000 + 2) * 1000);
  });

  it('a TURN server refusing the welcome’s credentials (401) is an ice-server-error, said once, and fresh ones are asked for', async () => {
    net.iceServerAnswer = (url) => (url.startsWith('turn') ? { errorCode: 401, errorText: 'Unauthorized' } : 'ok');
    const { socket, connections } = await joined([], [SERVER_STUN, turn(1)]);
    await new Promise((r) => setTimeout(r, 20));
    expect(errors.map((e) => e.code)).toEqual(['ice-server-error']);
    expect(errors[0]?.fatal).toBe(false);
    expect(errors[0]?.message).toMatch(/TURN server turn:198\.51\.100\.1:3478\?transport=udp refused the credentials the signaling server issued .*fresh ones were asked for: 401 Unauthorized/);
    expect(asked(socket)).toBe(1);
    // Another connection with the same credentials: not said again, and not asked again so soon.
    connections.offer('c'.repeat(32));
    await new Promise((r) => setTimeout(r, 20));
    expect(errors).toHaveLength(1);
    expect(asked(socket)).toBe(1);
  });

  it('the page’s own TURN credentials refused: said, and the signaling server is not asked', async () => {
    net.iceServerAnswer = (url) => (url.startsWith('turn') ? { errorCode: 401, errorText: 'Unauthorized' } : 'ok');
    const own: RTCIceServer = { urls: 'turn:turn.page.test', username: '1:old', credential: 'x' };
    const { socket } = await joined([own], undefined);
    await new Promise((r) => setTimeout(r, 20));
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/turn:turn\.page\.test refused the credentials of the iceServers option/)]);
    expect(asked(socket)).toBe(0);
  });

  it('no STUN/TURN server answering is said once; one that answers, or none configured, is silence', async () => {
    net.iceServerAnswer = () => ({ errorCode: 701, errorText: 'STUN host lookup received error.' });
    const { connections } = await joined([PAGE_STUN], [SERVER_STUN]);
    connections.offer('c'.repeat(32));
    await new Promise((r) => setTimeout(r, 20));
    expect(errors.map((e) => e.code)).toEqual(['ice-server-error']);
    expect(errors[0]?.message).toMatch(/no STUN\/TURN server answered \(stun:stun\.page\.test:3478, stun:198\.51\.100\.1:3478\)/);

    errors.length = 0;
    net.iceServerAnswer = (url) => (url === PAGE_STUN.urls ? { errorCode: 701, errorText: 'unreachable' } : 'ok');
    await joined([PAGE_STUN], [SERVER_STUN]);
    await new Promise((r) => setTimeout(r, 20));
    net.iceServerAnswer = () => ({ errorCode: 701, errorText: 'unreachable' });
    await joined([], undefined);
    await new Promise((r) => setTimeout(r, 20));
    expect(errors).toEqual([]);
  });
});

describe('Swarm with the real engine and a server that sends iceServers', () => {
  const world = useFakeWorld();
  const swarms = world.closeAfterEach((s: Swarm) => s.close());

  beforeAll(loadEngine);

  beforeEach(() => {
    // The fake server's welcomes gain iceServers: per join, as the real server's do.
    let joins = 0;
    const deliver = FakeWebSocket.prototype.deliver;
    const spy = vi.spyOn(FakeWebSocket.prototype, 'deliver').mockImplementation(function (this: FakeWebSocket, text: string) {
      const msg = JSON.parse(text) as Record<string, unknown>;
      if (msg.type === 'welcome') {
        joins += 1;
        msg.iceServers = [SERVER_STUN, turn(joins)];
        text = JSON.stringify(msg);
      }
      deliver.call(this, text);
    });
    world.undoAfter(() => spy.mockRestore());
  });

  it('every RTCPeerConnection gets the page’s iceServers option and the credentials of its own join', async () => {
    const data = randomBytes(20 * 1024, 3);
    const seedOptions = resolvePeerOptions({ statsIntervalMs: 0 });
    const engine = WasmPeer.seeder(data, 1024, 'sha256', world.server.url, 'ice.bin', engineOptions(seedOptions), performance.now());
    const seed = new Swarm(engine, parseUriLoaded(engine.uri()), { signal: world.server.url, options: seedOptions, seeding: true });
    swarms.push(seed);
    await seed.start();

    const fetchOptions = resolvePeerOptions({ statsIntervalMs: 0, iceServers: [PAGE_STUN] });
    const fetchEngine = WasmPeer.fetcher(seed.uri, engineOptions(fetchOptions), performance.now());
    const fetch = new Swarm(fetchEngine, parseUriLoaded(seed.uri), { signal: world.server.url, options: fetchOptions, seeding: false });
    swarms.push(fetch);
    const complete = nextEvent(fetch, 'complete');
    await fetch.start();
    await complete;

    // The fetcher (second join) offered; the seeder (first join) answered.
    const offerer = world.net.connections.find((pc) => pc.localDescription?.type === 'offer');
    const answerer = world.net.connections.find((pc) => pc.localDescription?.type === 'answer');
    expect(offerer?.config.iceServers).toEqual([PAGE_STUN, SERVER_STUN, turn(2)]);
    expect(answerer?.config.iceServers).toEqual([SERVER_STUN, turn(1)]);
  });
});
