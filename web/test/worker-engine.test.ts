/**
 * The engine's side in a Worker (src/engine-host.ts) and the page's view of it
 * (src/worker-engine.ts), over a MessageChannel in one process: the messages are the
 * Worker's, with the real engine; datagrams relayed by the test as the page would.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EngineHost } from '../src/engine-host.js';
import type { EngineLoopHooks } from '../src/engine-loop.js';
import type { EngineSettings, FromEngine, Port, ToEngine } from '../src/engine-protocol.js';
import { PpsppError } from '../src/errors.js';
import type { EngineEvent } from '../src/wasm.js';
import { WorkerEngine, type WorkerEngineSetup } from '../src/worker-engine.js';
import { parseUriLoaded, treeFile } from '../src/wasm.js';
import { differsAt } from './fakes/bytes.js';
import { loadEngine } from './fakes/engine.js';
import { installFetch } from './fakes/http.js';
import { randomBytes } from './fakes/webm.js';

const CHUNK = 1024;

beforeAll(loadEngine);

const channels: MessageChannel[] = [];
const engines: WorkerEngine[] = [];
const undo: (() => void)[] = [];
afterEach(() => {
  for (const u of undo.splice(0)) u();
  for (const e of engines.splice(0)) e.free();
  for (const c of channels.splice(0)) {
    c.port1.close();
    c.port2.close();
  }
});

function settings(seed: number): EngineSettings {
  return { uploadLimit: 0, downloadLimit: 0, maxPeers: 8, priority: 0, urgentPriority: 0, vodWindow: 0, maxHeldBytes: 0, seedLo: seed, seedHi: 0 };
}

/** A host on one end of a fresh channel, and the page's engine started on the other. */
async function start(
  setup: Omit<WorkerEngineSetup, 'wasm' | 'origin' | 'originOnly'> & Partial<Pick<WorkerEngineSetup, 'origin' | 'originOnly'>>,
): Promise<WorkerEngine> {
  const channel = new MessageChannel();
  channels.push(channel);
  new EngineHost(channel.port1 as unknown as Port<ToEngine, FromEngine>);
  const engine = await WorkerEngine.start(channel.port2 as unknown as Port<FromEngine, ToEngine>, {
    wasm: undefined,
    origin: null,
    originOnly: false,
    ...setup,
  });
  engines.push(engine);
  return engine;
}

function hooks(o: Partial<EngineLoopHooks>): EngineLoopHooks {
  return { send: () => {}, event: () => {}, storageFallback: () => {}, ...o };
}

describe('WorkerEngine over an EngineHost', () => {
  it('a fetcher fetches from a seeder, datagrams relayed by the page; its chunks are read from the page\'s copy', async () => {
    const data = randomBytes(300 * CHUNK + 5, 9);
    const seeder = await start({
      role: { kind: 'seeder', data: data.slice(), chunkSize: CHUNK, hash: 'sha256', signal: null, name: null },
      settings: settings(1),
    });
    expect(seeder.isComplete()).toBe(true);
    const fetcher = await start({ role: { kind: 'fetcher', uri: seeder.uri() }, settings: settings(2) });
    expect(fetcher.content.length).toBe(data.length);
    const events: { event: EngineEvent; bytes: number }[] = [];
    let readAtEvent = true;
    const complete = new Promise<void>((resolve) => {
      fetcher.attach(
        hooks({
          send: (_peer, payload) => seeder.datagram(1, payload),
          event: (event, bytes) => {
            events.push({ event, bytes });
            // A verified chunk is readable in the page when its event comes.
            if (event.type === 'chunk-verified' && fetcher.readChunk(event.chunk) === undefined) readAtEvent = false;
            if (event.type === 'complete') resolve();
          },
        }),
      );
    });
    seeder.attach(hooks({ send: (_peer, payload) => fetcher.datagram(1, payload) }));
    fetcher.connect(1);
    await complete;
    expect(readAtEvent).toBe(true);
    const verified = events.filter((e) => e.event.type === 'chunk-verified');
    expect(verified).toHaveLength(301);
    expect(verified.reduce((n, e) => n + e.bytes, 0)).toBe(data.length);
    expect(fetcher.isComplete()).toBe(true);
    expect(fetcher.firstMissing(0)).toBe(301);
    expect(Array.from(fetcher.haveRanges())).toEqual([0, 301]);
    expect(differsAt(fetcher.read(0, data.length), data)).toBeNull();
    expect(differsAt(fetcher.read(1000, 5000), data.subarray(1000, 5000))).toBeNull();
    // The figures come with the turns (at least every 100 ms, and with every change).
    expect(fetcher.stats().engine.bytesDownloaded).toBeGreaterThanOrEqual(data.length);
  });

  it('answers the checks of live parts asynchronously; a refused one rejects with the engine\'s reason', async () => {
    const data = randomBytes(10 * CHUNK, 3);
    const seeder = await start({
      role: { kind: 'seeder', data, chunkSize: CHUNK, hash: 'sha256', signal: null, name: null },
      settings: settings(3),
    });
    seeder.attach(hooks({}));
    expect(await seeder.peersHolding(0)).toBe(0);
    await expect(seeder.checkLivePart({ part: 'not a live stream' })).rejects.toThrow(/./);
    expect(await seeder.liveInitMatches(3, '00', new Uint8Array(3))).toBe(false);
  });

  it('a URI the engine refuses rejects the start with bad-uri; after free, requests reject with closed', async () => {
    await expect(start({ role: { kind: 'fetcher', uri: 'ppspp://nonsense' }, settings: settings(4) })).rejects.toMatchObject({
      code: 'bad-uri',
    });
    const data = randomBytes(4 * CHUNK, 4);
    const seeder = await start({
      role: { kind: 'seeder', data, chunkSize: CHUNK, hash: 'sha256', signal: null, name: null },
      settings: settings(5),
    });
    seeder.attach(hooks({}));
    const pending = seeder.peersHolding(0);
    seeder.free();
    await expect(pending).rejects.toBeInstanceOf(PpsppError);
    await expect(seeder.peersHolding(0)).rejects.toMatchObject({ code: 'closed' });
    // Commands after free go nowhere.
    seeder.setPlayhead(2);
    seeder.kick();
  });

  it('begun, a fetcher is usable at once: what the page says before the Worker made the engine waits for it', async () => {
    const data = randomBytes(40 * CHUNK + 3, 12);
    const seeder = await start({
      role: { kind: 'seeder', data: data.slice(), chunkSize: CHUNK, hash: 'sha256', signal: null, name: null },
      settings: settings(12),
    });
    const channel = new MessageChannel();
    channels.push(channel);
    const content = parseUriLoaded(seeder.uri());
    const { engine: fetcher, ready } = WorkerEngine.begin(
      channel.port2 as unknown as Port<FromEngine, ToEngine>,
      { wasm: undefined, role: { kind: 'fetcher', uri: seeder.uri() }, settings: settings(13), origin: null, originOnly: false },
      content,
    );
    engines.push(fetcher);
    // Before the engine is made: nothing held, the content's figures.
    expect(fetcher.uri()).toBe(seeder.uri());
    expect(fetcher.isComplete()).toBe(false);
    expect(Array.from(fetcher.haveRanges())).toEqual([]);
    expect(fetcher.stats().engine.chunkCount).toBe(41);
    expect(fetcher.stats().engine.bytesDownloaded).toBe(0);
    const complete = new Promise<void>((resolve) => {
      fetcher.attach(
        hooks({
          send: (_peer, payload) => seeder.datagram(1, payload),
          event: (event) => event.type === 'complete' && resolve(),
        }),
      );
    });
    seeder.attach(hooks({ send: (_peer, payload) => fetcher.datagram(1, payload) }));
    fetcher.connect(1);
    fetcher.setPlayhead(0);
    const holding = fetcher.peersHolding(0);
    // The "Worker" loads only now: what was posted waited in its port.
    await new Promise((r) => setTimeout(r, 50));
    new EngineHost(channel.port1 as unknown as Port<ToEngine, FromEngine>);
    await ready;
    expect(await holding).toBe(0);
    await complete;
    expect(differsAt(fetcher.read(0, data.length), data)).toBeNull();
  });

  it('the Worker keeps what comes while it makes the engine, and uses it once the engine is made', async () => {
    const data = randomBytes(8 * CHUNK, 14);
    const seeder = await start({
      role: { kind: 'seeder', data, chunkSize: CHUNK, hash: 'sha256', signal: null, name: null },
      settings: settings(14),
    });
    const posted: FromEngine[] = [];
    const port: Port<ToEngine, FromEngine> = { onmessage: null, postMessage: (m) => posted.push(m) };
    new EngineHost(port);
    const send = (m: ToEngine): void => port.onmessage?.({ data: m } as MessageEvent<ToEngine>);
    const opened = { readyState: 'open', close: () => {} } as unknown as RTCDataChannel;
    // The init and, before the engine is made (it awaits the Wasm module), a channel.
    send({ t: 'init', wasm: undefined, role: { kind: 'fetcher', uri: seeder.uri() }, settings: settings(15), origin: null, originOnly: false });
    send({ t: 'channel', peer: 3, channel: opened });
    await vi.waitFor(() => expect(posted.map((m) => m.t)).toEqual(['ready', 'channel-opened']));
    send({ t: 'free' });
  });

  it('a begun engine whose Worker fails rejects ready with wasm-load-failed, and is freed', async () => {
    const posted: ToEngine[] = [];
    const port: Port<FromEngine, ToEngine> = { onmessage: null, postMessage: (m) => posted.push(m) };
    const uri = (await start({ role: { kind: 'seeder', data: randomBytes(CHUNK, 16), chunkSize: CHUNK, hash: 'sha256', signal: null, name: null }, settings: settings(16) })).uri();
    const setup = { wasm: undefined, role: { kind: 'fetcher' as const, uri }, settings: settings(17), origin: null, originOnly: false };
    const failed = WorkerEngine.begin(port, setup, parseUriLoaded(uri));
    const request = failed.engine.peersHolding(0);
    port.onmessage?.({ data: { t: 'failed', refused: false, message: 'no Wasm here' } } as MessageEvent<FromEngine>);
    await expect(failed.ready).rejects.toMatchObject({ code: 'wasm-load-failed', message: 'no Wasm here' });
    await expect(request).rejects.toMatchObject({ code: 'wasm-load-failed' });
    expect(posted.at(-1)?.t).toBe('free');
    // A Worker whose script did not load fails the start at once.
    const unloaded = WorkerEngine.begin({ onmessage: null, postMessage: () => {} }, setup, parseUriLoaded(uri));
    unloaded.engine.workerFailed('blocked by CSP');
    await expect(unloaded.ready).rejects.toMatchObject({ code: 'wasm-load-failed', message: 'blocked by CSP' });
  });

  it('the HTTP origin runs in the Worker: a fetcher with no peers gets every chunk from it', async () => {
    const data = randomBytes(60 * CHUNK + 1, 12);
    const seeder = await start({
      role: { kind: 'seeder', data: data.slice(), chunkSize: CHUNK, hash: 'sha256', signal: null, name: null },
      settings: settings(6),
    });
    const [, restore] = installFetch(
      new Map([
        ['http://origin.test/v.bin', data],
        ['http://origin.test/v.tree', treeFile(data, CHUNK, 'sha256')],
      ]),
    );
    undo.push(restore);
    const fetcher = await start({
      role: { kind: 'fetcher', uri: seeder.uri() },
      settings: settings(7),
      origin: { url: 'http://origin.test/v.bin', tree: 'http://origin.test/v.tree', maxRequests: 4, timeoutMs: 2_000, headBytes: 0 },
      originOnly: true,
    });
    const fromHttp: number[] = [];
    const complete = new Promise<void>((resolve) => {
      fetcher.attach(
        hooks({
          event: (event, bytes) => {
            if (event.type === 'origin-chunk') fromHttp.push(bytes);
            if (event.type === 'complete') resolve();
          },
        }),
      );
    });
    fetcher.kick();
    await complete;
    expect(fromHttp.reduce((a, b) => a + b, 0)).toBe(data.length);
    expect(fetcher.hasHttpOrigin()).toBe(true);
    expect(differsAt(fetcher.read(0, data.length), data)).toBeNull();
  });
});
