/**
 * The browser's signaling client against the protocol's shared JSON fixtures
 * (`signaling/protocol/fixtures/`, the same files the Rust crate's tests read): every
 * server → client message is read as the client expects, and every client → server message
 * is what the client sends, byte for byte.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PpsppError } from '../src/errors.js';
import {
  PROTOCOL_VERSION,
  SignalingClient,
  type SignalingHandlers,
  decodeServerMessage,
  encodeIce,
  encodeJoin,
  encodeLeave,
  encodeReport,
  encodeSignal,
  isRoutineError,
} from '../src/signaling.js';

const FIXTURES = new URL('../../signaling/protocol/fixtures/', import.meta.url);

interface Fixture {
  name: string;
  /** The file's one line, as it goes on the wire. */
  text: string;
  json: Record<string, unknown>;
}

function fixtures(direction: 'client-to-server' | 'server-to-client'): Fixture[] {
  const dir = fileURLToPath(new URL(`${direction}/`, FIXTURES));
  const names = readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort();
  expect(names.length).toBeGreaterThan(0);
  return names.map((name) => {
    const text = readFileSync(`${dir}${name}`, 'utf8').replace(/\n$/, '');
    return { name, text, json: JSON.parse(text) as Record<string, unknown> };
  });
}

const toServer = fixtures('client-to-server');
const toClient = fixtures('server-to-client');

function only(type: string, dir: Fixture[]): Fixture {
  const f = dir.find((x) => x.json.type === type);
  if (!f) throw new Error(`no ${type} fixture`);
  return f;
}

describe('client → server fixtures', () => {
  it.each(toServer.map((f) => [f.name, f] as const))('%s is what the client sends', (_, f) => {
    const m = f.json;
    switch (m.type) {
      case 'join':
        expect(m.v).toBe(PROTOCOL_VERSION);
        expect(encodeJoin(String(m.swarm))).toBe(f.text);
        break;
      case 'signal':
        expect(encodeSignal(String(m.to), m.data)).toBe(f.text);
        break;
      case 'leave':
        expect(encodeLeave()).toBe(f.text);
        break;
      case 'ice':
        expect(encodeIce()).toBe(f.text);
        break;
      case 'report': {
        const bytes = m.bytes as Record<string, number>;
        const totals = { peers: bytes.peers!, http: bytes.http!, seeders: bytes.seeders!, stalls: Number(m.stalls), stallMs: Number(m.stallMs) };
        expect(encodeReport(totals)).toBe(f.text);
        break;
      }
      default:
        throw new Error(`the client does not send ${String(m.type)} messages`);
    }
  });
});

describe('server → client fixtures', () => {
  it.each(toClient.map((f) => [f.name, f] as const))('%s is read as the client expects', (_, f) => {
    const m = f.json;
    const decoded = decodeServerMessage(f.text);
    switch (m.type) {
      case 'welcome':
        // `iceServers` and `reportEvery` as sent, and no such key when absent.
        expect(decoded).toStrictEqual({
          type: 'welcome',
          peerId: m.peer_id,
          peers: m.peers,
          ...(m.iceServers === undefined ? {} : { iceServers: m.iceServers }),
          ...(m.reportEvery === undefined ? {} : { reportEvery: m.reportEvery }),
          ...(m.p2pFrom === undefined ? {} : { p2pFrom: m.p2pFrom }),
        });
        break;
      case 'signal':
        expect(decoded).toEqual({ type: 'signal', from: m.from, data: m.data });
        break;
      case 'peer-left':
        expect(decoded).toEqual({ type: 'peer-left', peerId: m.peer_id });
        break;
      case 'ice-servers':
        expect(decoded).toStrictEqual({ type: 'ice-servers', iceServers: m.iceServers });
        break;
      case 'error':
        expect(typeof m.fatal).toBe('boolean');
        expect(decoded).toEqual({ type: 'error', code: m.code, message: m.message, fatal: m.fatal });
        break;
      default:
        throw new Error(`the client does not read ${String(m.type)} messages`);
    }
  });

  it('has the routine errors among them, and only those are routine', () => {
    const routine = toClient
      .filter((f) => f.json.type === 'error' && isRoutineError(String(f.json.code)))
      .map((f) => f.json.code)
      .sort();
    expect(routine).toEqual(['bad-report', 'peer-busy', 'unavailable', 'unknown-peer']);
  });

  it('has welcomes with and without iceServers', () => {
    const welcomes = toClient.filter((f) => f.json.type === 'welcome');
    expect(welcomes.some((f) => f.json.iceServers === undefined)).toBe(true);
    expect(welcomes.some((f) => Array.isArray(f.json.iceServers))).toBe(true);
  });

  it('ignores what is not a message it knows', () => {
    expect(decodeServerMessage('{')).toBeNull();
    expect(decodeServerMessage('null')).toBeNull();
    expect(decodeServerMessage('[1]')).toBeNull();
    expect(decodeServerMessage('{"type":"hello","peer_id":"x"}')).toBeNull();
    // Unknown extra fields are ignored.
    expect(decodeServerMessage('{"type":"peer-left","peer_id":"x","why":"gone"}')).toEqual({
      type: 'peer-left',
      peerId: 'x',
    });
  });
});

/** A WebSocket that records what is sent and lets the test deliver frames. */
class FakeSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  static last: FakeSocket | null = null;

  readyState = FakeSocket.CONNECTING;
  readonly sent: string[] = [];
  closedWith: number | null = null;
  onopen: (() => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: (() => void) | null = null;

  constructor(readonly url: string) {
    FakeSocket.last = this;
  }

  open(): void {
    this.readyState = FakeSocket.OPEN;
    this.onopen?.();
  }

  deliver(text: string): void {
    this.onmessage?.({ data: text });
  }

  send(data: string): void {
    this.sent.push(data);
  }

  close(code: number): void {
    this.closedWith = code;
    this.readyState = FakeSocket.CLOSED;
  }
}

function recorder(): { handlers: SignalingHandlers; calls: unknown[][] } {
  const calls: unknown[][] = [];
  return {
    calls,
    handlers: {
      welcome: (peerId, peers) => calls.push(['welcome', peerId, peers]),
      signal: (from, data) => calls.push(['signal', from, data]),
      peerLeft: (peerId) => calls.push(['peer-left', peerId]),
      disconnected: (reason) => calls.push(['disconnected', reason]),
      error: (err) => calls.push(['error', err.code, err.message]),
    },
  };
}

describe('SignalingClient on the fixtures', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    FakeSocket.last = null;
  });

  it('sends the fixtures and hands every server fixture to the right handler', async () => {
    vi.stubGlobal('WebSocket', FakeSocket);
    const join = only('join', toServer);
    const welcome = only('welcome', toClient);
    const { handlers, calls } = recorder();
    const client = new SignalingClient('ws://signal.test/ws', String(join.json.swarm), handlers);
    const started = client.start();
    const socket = FakeSocket.last;
    if (!socket) throw new Error('no socket opened');
    socket.open();
    expect(socket.sent).toEqual([join.text]);

    socket.deliver(welcome.text);
    await started;
    expect(client.peerId).toBe(welcome.json.peer_id);
    expect(client.iceServers).toEqual(welcome.json.iceServers ?? []);
    expect(calls).toEqual([['welcome', welcome.json.peer_id, welcome.json.peers]]);

    for (const f of toClient) {
      calls.length = 0;
      socket.deliver(f.text);
      const m = f.json;
      switch (m.type) {
        case 'welcome':
          expect(calls, f.name).toEqual([['welcome', m.peer_id, m.peers]]);
          // Each welcome's iceServers replace the last ones ([] when it has none), and so
          // do its reportEvery and p2pFrom.
          expect(client.iceServers, f.name).toEqual(m.iceServers ?? []);
          expect(client.reportEverySeconds, f.name).toBe(m.reportEvery ?? null);
          expect(client.p2pFrom, f.name).toBe(m.p2pFrom ?? null);
          break;
        case 'signal':
          expect(calls, f.name).toEqual([['signal', m.from, m.data]]);
          break;
        case 'peer-left':
          expect(calls, f.name).toEqual([['peer-left', m.peer_id]]);
          break;
        case 'ice-servers':
          // Fresh servers replace the welcome's, silently.
          expect(calls, f.name).toEqual([]);
          expect(client.iceServers, f.name).toEqual(m.iceServers);
          break;
        case 'error':
          // Once joined, even a fatal error is reported (the close that follows reconnects).
          expect(calls, f.name).toEqual(
            isRoutineError(String(m.code))
              ? []
              : [['error', 'signaling-error', `signaling server: ${String(m.code)}: ${String(m.message)}`]],
          );
          break;
        default:
          throw new Error(`${f.name}: unexpected type`);
      }
    }

    for (const f of toServer.filter((x) => x.json.type === 'signal')) {
      socket.sent.length = 0;
      client.send(String(f.json.to), f.json.data);
      expect(socket.sent, f.name).toEqual([f.text]);
    }

    // Reports go only to a server whose latest welcome asked for them.
    const report = only('report', toServer);
    const bytes = report.json.bytes as Record<string, number>;
    const totals = { peers: bytes.peers!, http: bytes.http!, seeders: bytes.seeders!, stalls: Number(report.json.stalls), stallMs: Number(report.json.stallMs) };
    const asking = toClient.find((f) => f.json.type === 'welcome' && f.json.reportEvery !== undefined);
    if (!asking) throw new Error('no welcome with reportEvery');
    socket.deliver(asking.text);
    expect(client.reportEverySeconds).toBe(asking.json.reportEvery);
    socket.sent.length = 0;
    expect(client.report(totals)).toBe(true);
    expect(socket.sent).toEqual([report.text]);
    socket.deliver(welcome.text);
    expect(welcome.json.reportEvery).toBeUndefined();
    expect(client.reportEverySeconds).toBeNull();
    socket.sent.length = 0;
    expect(client.report(totals)).toBe(false);
    expect(socket.sent).toEqual([]);

    socket.sent.length = 0;
    expect(client.requestIceServers()).toBe(true);
    expect(socket.sent).toEqual([only('ice', toServer).text]);

    socket.sent.length = 0;
    client.rejoin();
    expect(socket.sent).toEqual([only('leave', toServer).text, join.text]);
    socket.deliver(welcome.text);

    socket.sent.length = 0;
    client.close();
    expect(socket.sent).toEqual([only('leave', toServer).text]);
    expect(socket.closedWith).toBe(1000);
  });

  it('fails to start on a fatal error before the welcome', async () => {
    vi.stubGlobal('WebSocket', FakeSocket);
    const { handlers, calls } = recorder();
    const client = new SignalingClient('ws://signal.test/ws', 'NOT-HEX', handlers);
    const started = client.start();
    const socket = FakeSocket.last;
    if (!socket) throw new Error('no socket opened');
    socket.open();
    const fatal = toClient.find((f) => f.json.type === 'error' && f.json.fatal === true);
    if (!fatal) throw new Error('no fatal error fixture');
    socket.deliver(fatal.text);
    const err: unknown = await started.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PpsppError);
    expect((err as PpsppError).code).toBe('signaling-error');
    expect(calls).toEqual([]);
  });
});
