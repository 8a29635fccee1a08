/**
 * A swarm whose engine is in a "Worker" (an EngineHost at the other end of a
 * MessageChannel, in this process) over fake WebRTC: the fake data channels cannot be
 * transferred, so the page relays their datagrams, as where a browser cannot transfer one.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { EngineHost } from '../src/engine-host.js';
import type { FromEngine, Port, ToEngine } from '../src/engine-protocol.js';
import { engineOptions, engineSettings } from '../src/engine-start.js';
import { resolvePeerOptions } from '../src/options.js';
import { Swarm } from '../src/swarm.js';
import { WasmPeer, parseUriLoaded } from '../src/wasm.js';
import { WorkerEngine } from '../src/worker-engine.js';
import { differsAt } from './fakes/bytes.js';
import { loadEngine } from './fakes/engine.js';
import { nextEvent } from './fakes/tasks.js';
import { randomBytes } from './fakes/webm.js';
import { useFakeWorld } from './fakes/world.js';

const CHUNK = 1024;

const world = useFakeWorld({ beforeClosing: () => vi.useRealTimers() });
const swarms = world.closeAfterEach((s: Swarm) => s.close());
const ports = world.closeAfterEach((c: MessageChannel) => {
  c.port1.close();
  c.port2.close();
});

beforeAll(loadEngine);

describe('Swarm with its engine in a Worker', () => {
  it('fetches from a seeder on the main thread, relaying datagrams; reads, events and figures come from the Worker', async () => {
    const data = randomBytes(150 * CHUNK + 9, 11);
    const r = resolvePeerOptions({ statsIntervalMs: 0 });
    const seedEngine = WasmPeer.seeder(data, CHUNK, 'sha256', world.server.url, 'w.bin', engineOptions(r), performance.now());
    const seeder = new Swarm(seedEngine, parseUriLoaded(seedEngine.uri()), { signal: world.server.url, options: r, seeding: true });
    swarms.push(seeder);
    await seeder.start();

    const channel = new MessageChannel();
    ports.push(channel);
    new EngineHost(channel.port1 as unknown as Port<ToEngine, FromEngine>);
    const engine = await WorkerEngine.start(channel.port2 as unknown as Port<FromEngine, ToEngine>, {
      wasm: undefined,
      role: { kind: 'fetcher', uri: seeder.uri },
      settings: engineSettings(r),
      origin: null,
      originOnly: false,
    });
    const fetcher = new Swarm(engine, engine.content, { signal: world.server.url, options: r, seeding: false });
    swarms.push(fetcher);
    const verified: number[] = [];
    fetcher.on('chunk-verified', (e) => verified.push(e.chunk));
    const complete = nextEvent(fetcher, 'complete');
    await fetcher.start();
    await complete;
    expect(new Set(verified).size).toBe(151);
    expect(differsAt(fetcher.read(0, data.length), data)).toBeNull();
    expect(fetcher.verifiedEnd(0)).toBe(data.length);
    const stats = fetcher.stats();
    expect(stats.engineThread).toBe('worker');
    expect(stats.bytesFromSeeders).toBe(data.length);
    expect(stats.channels.length).toBe(1);
    expect(stats.channels[0]!.transferred).toBe(false);
    expect(seeder.stats().engineThread).toBe('main');
    // Left: the Worker's engine is freed and the page's copy stays readable.
    fetcher.close();
    expect(fetcher.stats().bytesFromSeeders).toBe(data.length);
  });
});
