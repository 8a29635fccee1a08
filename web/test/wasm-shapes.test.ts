/**
 * The objects the real Wasm build returns (crates/ppspp-wasm/src/convert.rs) against the
 * shapes src/wasm.ts declares by hand: every kind of object, every key, every value's type.
 * A seeder and fetchers exchange datagrams here directly, on a virtual clock, to make the
 * engine produce its events and figures.
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CHANNEL_STATES,
  CHANNEL_STATS_FIELDS,
  CONTENT_INFO_FIELDS,
  LIVE_INFO_FIELDS,
  ENGINE_EVENT_FIELDS,
  ENGINE_STATS_FIELDS,
  type EngineEvent,
  type Fields,
  ORIGIN_ERROR_CODES,
  ORIGIN_REQUEST_FIELDS,
  OriginOptions,
  type OriginRequest,
  PEER_CLOSE_REASONS,
  PeerOptions,
  type TypeTag,
  WasmPeer,
  loadWasm,
  parseUriLoaded,
  treeFile,
  typeTag,
} from '../src/wasm.js';

beforeAll(async () => {
  await loadWasm(readFileSync(new URL('../wasm/ppspp_wasm_bg.wasm', import.meta.url)));
});

const CHUNK = 1024;
const CHUNKS = 40;

/** `value` has exactly the table's keys, each with a type the table allows. */
function expectShape(value: unknown, fields: Record<string, TypeTag | readonly TypeTag[]>, what: string): void {
  expect(typeTag(value), what).toBe('object');
  const obj = value as Record<string, unknown>;
  expect(Object.keys(obj).sort(), `${what}: keys`).toEqual(Object.keys(fields).sort());
  for (const [key, allowed] of Object.entries(fields)) {
    const tags: readonly TypeTag[] = typeof allowed === 'string' ? [allowed] : allowed;
    expect(tags, `${what}.${key} = ${JSON.stringify(obj[key])}`).toContain(typeTag(obj[key]));
  }
}

function content(len: number): Uint8Array {
  const b = new Uint8Array(len);
  for (let i = 0; i < len; i++) b[i] = (i * 2654435761) >>> 24;
  return b;
}

function options(statsIntervalMs = 0): PeerOptions {
  const o = new PeerOptions();
  o.timer_granularity_ms = 1;
  o.stats_interval_ms = statsIntervalMs;
  return o;
}

/**
 * Two engines wired back to back: `a` knows `b` as peer 1, `b` knows `a` as peer 2. Each
 * step moves every datagram ready, or else advances the virtual clock to the next
 * deadline. `tamper` may change a datagram from `b` to `a` on the way.
 */
class Link {
  now = 0;
  readonly events: EngineEvent[] = [];
  readonly channels: unknown[] = [];

  constructor(
    readonly a: WasmPeer,
    readonly b: WasmPeer,
    private readonly tamper: (d: Uint8Array) => Uint8Array = (d) => d,
  ) {
    a.connect(1, this.now);
  }

  run(until: () => boolean, limitMs = 60_000): void {
    while (!until()) {
      if (this.now > limitMs) throw new Error(`not done after ${limitMs} ms of virtual time`);
      let moved = 0;
      for (let d; (d = this.a.pollTransmit(this.now)) !== undefined; moved++) this.b.handleDatagram(2, d, this.now);
      for (let d; (d = this.b.pollTransmit(this.now)) !== undefined; moved++) this.a.handleDatagram(1, this.tamper(d), this.now);
      this.collect();
      if (moved === 0) {
        const waits = [this.a.pollTimeout(this.now), this.b.pollTimeout(this.now)].filter((w) => w >= 0);
        this.now += Math.max(1, Math.min(10, ...waits));
        this.a.handleTimeout(this.now);
        this.b.handleTimeout(this.now);
      }
    }
    this.collect();
  }

  private collect(): void {
    for (const peer of [this.a, this.b]) {
      for (let e; (e = peer.pollEvent()) !== undefined; ) this.events.push(e as EngineEvent);
      this.channels.push(...(peer.channelStats() as unknown[]));
    }
  }
}

describe('Wasm objects match src/wasm.ts', () => {
  it('parseUri and WasmPeer.content(): ContentInfo, with and without the optional fields', () => {
    const bare = parseUriLoaded(`ppspp://${'ab'.repeat(20)}?len=5`);
    expectShape(bare, CONTENT_INFO_FIELDS, 'parseUri (bare)');
    const full = parseUriLoaded(
      `ppspp://${'ab'.repeat(32)}?len=5&cs=8192&hash=sha256&signal=ws%3A%2F%2Fx%2Fws&udp=127.0.0.1:7000&name=a.bin&http=v.bin&tree=v.tree`,
    );
    expectShape(full, CONTENT_INFO_FIELDS, 'parseUri (full)');
    expect(full.udp).toEqual(['127.0.0.1:7000']);
    expect([full.http, full.tree]).toEqual(['v.bin', 'v.tree']);
    const seeder = WasmPeer.seeder(content(3000), CHUNK, 'sha256', 'ws://x/ws', 'a.bin', options(), 0);
    expectShape(seeder.content(), CONTENT_INFO_FIELDS, 'WasmPeer.content()');
    seeder.free();
  });

  it('parseUri and WasmPeer.content() of a live stream: ContentInfo with its live part', () => {
    // An Ed25519 key (DNSSEC 15, the base point), and a WebM header as the init segment.
    const key = `0f58${'66'.repeat(31)}`;
    const uri = `ppspp://live/${key}?cs=2048&hash=sha256&sig=16&window=600&signal=ws%3A%2F%2Fx%2Fws&init=1a45dfa380`;
    const live = parseUriLoaded(uri);
    expectShape(live, CONTENT_INFO_FIELDS, 'parseUri (live)');
    expectShape(live.live, LIVE_INFO_FIELDS, 'parseUri (live).live');
    expect(live.live?.swarmId).toBe(key);
    expect(live.live?.init).toEqual(new Uint8Array([0x1a, 0x45, 0xdf, 0xa3, 0x80]));
    expect(live.root).toMatch(/^[0-9a-f]{64}$/);
    expectShape(parseUriLoaded(`ppspp://live/${key}`).live, LIVE_INFO_FIELDS, 'parseUri (bare live).live');
    const viewer = WasmPeer.fetcher(uri, options(), 0);
    expectShape(viewer.content(), CONTENT_INFO_FIELDS, 'WasmPeer.content() (live)');
    expect([viewer.liveEdge(), viewer.liveFloor(), viewer.readChunk(0)]).toEqual([0, 0, undefined]);
    viewer.free();
  });

  it('a transfer: events, engine stats (and the stats event), channel stats', () => {
    const data = content(CHUNKS * CHUNK - 100);
    const seeder = WasmPeer.seeder(data, CHUNK, 'sha256', undefined, undefined, options(50), 0);
    const fetcher = WasmPeer.fetcher(seeder.uri(), options(50), 0);
    const link = new Link(fetcher, seeder);
    link.run(() => fetcher.isComplete());
    expect(fetcher.read(0, data.length)).toEqual(data);
    // Periodic stats events (every 50 ms here; the Swarm turns them off).
    link.run(() => link.events.some((e) => e.type === 'stats'));
    // The engines close: the seeder's closes reach the fetcher.
    seeder.closeAll();
    link.run(() => link.events.some((e) => e.type === 'peer-closed'));
    for (const peer of [seeder, fetcher]) expectShape(peer.stats(), ENGINE_STATS_FIELDS, 'stats()');
    // The module's memory: whole 64 KiB pages, holding at least the content both engines hold.
    const memory = (fetcher.stats() as { wasmMemoryBytes: number }).wasmMemoryBytes;
    expect(memory % 65_536).toBe(0);
    expect(memory).toBeGreaterThan(2 * data.length);

    const seen = new Set(link.events.map((e) => e.type));
    for (const type of ['peer-connected', 'chunk-verified', 'progress', 'complete', 'stats', 'peer-closed'] as const) {
      expect(seen, `a ${type} event`).toContain(type);
    }
    for (const event of link.events) checkEvent(event);

    expect(link.channels.length).toBeGreaterThan(0);
    const states = new Set<string>();
    for (const c of link.channels) {
      expectShape(c, CHANNEL_STATS_FIELDS, 'channelStats()[i]');
      states.add((c as { state: string }).state);
    }
    for (const s of states) expect(Object.keys(CHANNEL_STATES)).toContain(s);
    expect(link.channels.some((c) => (c as { queuingDelayMs: number | null }).queuingDelayMs !== null)).toBe(true);
    seeder.free();
    fetcher.free();
  });

  it('a chunk corrupted on the way: chunk-rejected and the peer closed as misbehaving', () => {
    const seeder = WasmPeer.seeder(content(CHUNKS * CHUNK), CHUNK, 'sha256', undefined, undefined, options(), 0);
    const fetcher = WasmPeer.fetcher(seeder.uri(), options(), 0);
    let corrupted = false;
    // A datagram longer than a chunk carries DATA, whose chunk bytes run to its end.
    const link = new Link(fetcher, seeder, (d) => {
      if (corrupted || d.length < CHUNK) return d;
      corrupted = true;
      const bad = d.slice();
      bad[bad.length - 1] = (bad[bad.length - 1] ?? 0) ^ 0xff;
      return bad;
    });
    link.run(() => link.events.some((e) => e.type === 'chunk-rejected') && link.events.some((e) => e.type === 'peer-closed'));
    for (const event of link.events) checkEvent(event);
    const closed = link.events.find((e) => e.type === 'peer-closed');
    expect(closed).toMatchObject({ peer: 1, reason: 'misbehaving' });
    seeder.free();
    fetcher.free();
  });

  it('a URI with a wrong len=: wrong-length, and the seeder kept', () => {
    const data = content(CHUNKS * CHUNK - 100);
    const seeder = WasmPeer.seeder(data, CHUNK, 'sha256', undefined, undefined, options(), 0);
    const wrong = seeder.uri().replace(`len=${data.length}`, `len=${data.length - 200}`);
    expect(wrong).not.toBe(seeder.uri());
    const fetcher = WasmPeer.fetcher(wrong, options(), 0);
    const link = new Link(fetcher, seeder);
    link.run(() => link.events.some((e) => e.type === 'wrong-length'));
    for (const event of link.events) checkEvent(event);
    expect(link.events.find((e) => e.type === 'wrong-length')).toMatchObject({
      stated: data.length - 200,
      min: data.length,
      max: data.length,
    });
    expect(link.events.some((e) => e.type === 'chunk-rejected' || e.type === 'peer-closed')).toBe(false);
    seeder.free();
    fetcher.free();
  });
});

describe('Wasm objects of the HTTP origin match src/wasm.ts', () => {
  it('origin requests, origin-chunk, origin-corrupt and origin-failed events', () => {
    const data = content(CHUNKS * CHUNK);
    const seeder = WasmPeer.seeder(data, CHUNK, 'sha256', undefined, undefined, options(), 0);
    const fetcher = WasmPeer.fetcher(seeder.uri(), options(), 0);
    const tree = treeFile(data, CHUNK, 'sha256');
    const served = data.slice();
    served[3 * CHUNK] = (served[3 * CHUNK] ?? 0) ^ 1;
    const origin = new OriginOptions();
    origin.alone_after_ms = 0;
    fetcher.enableHttpOrigin(origin, 0);
    expect(fetcher.hasHttpOrigin()).toBe(true);
    const events: EngineEvent[] = [];
    let failed = false;
    let now = 0;
    for (let round = 0; round < 100 && !fetcher.isComplete(); round++) {
      for (let r; (r = fetcher.pollOriginRequest(now) as OriginRequest | undefined) !== undefined; ) {
        expectShape(r, ORIGIN_REQUEST_FIELDS, 'pollOriginRequest()');
        if (r.file === 'content' && !failed) {
          failed = true;
          fetcher.handleOriginFailure(r.id, 'status', 503, 'HTTP 503', now);
          continue;
        }
        const file = r.file === 'tree' ? tree : served;
        fetcher.handleOriginResponse(r.id, file.subarray(r.start, Math.min(r.end, file.length)), now);
      }
      for (let e; (e = fetcher.pollEvent()) !== undefined; ) events.push(e as EngineEvent);
      now += 100;
      fetcher.handleTimeout(now);
    }
    const seen = new Set(events.map((e) => e.type));
    for (const type of ['origin-chunk', 'origin-corrupt', 'origin-failed'] as const) expect(seen, `a ${type} event`).toContain(type);
    for (const event of events) checkEvent(event);
    expect(events.find((e) => e.type === 'origin-corrupt')).toMatchObject({ chunk: 3 });
    expect(events.find((e) => e.type === 'origin-failed')).toMatchObject({ code: 'origin-status', status: 503, disabled: false });
    expect(() => fetcher.handleOriginFailure(1, 'bogus', 0, '', now)).toThrow(/unknown origin failure kind/);
    expectShape(fetcher.stats(), ENGINE_STATS_FIELDS, 'stats()');
    seeder.free();
    fetcher.free();
  });
});

/**
 * Events convert.rs can produce that no test here makes: `peer-discovered` (PEX; browser
 * peers are data-channel handles with no address), `store-failed` and `store-read-failed`
 * (the in-memory store does not fail) and `live-restarted` (the engine's tests restart a
 * source). Their tables are checked against the interfaces by the compiler only.
 */
const NOT_PRODUCED: EngineEvent['type'][] = [
  'peer-discovered',
  'store-failed',
  'store-read-failed',
  'live-restarted',
];

function checkEvent(event: EngineEvent): void {
  expect(Object.keys(ENGINE_EVENT_FIELDS), 'a known event type').toContain(event.type);
  expect(NOT_PRODUCED).not.toContain(event.type);
  const fields: Record<string, TypeTag | readonly TypeTag[]> = ENGINE_EVENT_FIELDS[event.type];
  expectShape(event, fields, `${event.type} event`);
  if (event.type === 'stats') expectShape(event.stats, ENGINE_STATS_FIELDS, 'stats event .stats');
  if (event.type === 'peer-closed') expect(Object.keys(PEER_CLOSE_REASONS)).toContain(event.reason);
  if (event.type === 'origin-failed') expect(Object.keys(ORIGIN_ERROR_CODES)).toContain(event.code);
}

describe('the field tables check themselves at compile time', () => {
  // Each line must fail to compile (tsc -p test/tsconfig.json): the checks src/wasm.ts relies on.
  it('refuses a key missing, a key too many and a wrong type', () => {
    // @ts-expect-error a key missing
    const missing = { a: 'number' } as const satisfies Fields<{ a: number; b?: string }>;
    // @ts-expect-error a key too many
    const extra = { a: 'number', b: 'string' } as const satisfies Fields<{ a: number }>;
    // @ts-expect-error a type the interface does not allow
    const wrong = { a: ['number', 'string'] } as const satisfies Fields<{ a: number | null }>;
    expect([missing, extra, wrong]).toHaveLength(3);
  });
});
