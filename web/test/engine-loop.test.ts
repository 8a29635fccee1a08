/**
 * The engine's side of a swarm (src/engine-loop.ts) on its own, with the real engine and
 * an HTTP origin on a fake web server: what the swarm gets from it is datagrams and plain
 * events, each chunk's with its bytes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { EngineLoop, type EngineLoopHooks } from '../src/engine-loop.js';
import { resolvePeerOptions } from '../src/options.js';
import { engineOptions } from '../src/engine-start.js';
import { type EngineEvent, WasmPeer, parseUriLoaded, treeFile } from '../src/wasm.js';
import { differsAt } from './fakes/bytes.js';
import { loadEngine } from './fakes/engine.js';
import { installFetch } from './fakes/http.js';
import { randomBytes } from './fakes/webm.js';
import { useFakeWorld } from './fakes/world.js';

const CHUNK = 1024;
const CONTENT_URL = 'http://origin.test/v.bin';
const TREE_URL = 'http://origin.test/v.tree';

const world = useFakeWorld();
const loops = world.closeAfterEach((l: EngineLoop) => l.free());

beforeAll(loadEngine);

/** A fetcher's loop over an HTTP origin holding `data`; its events are recorded. */
function originLoop(data: Uint8Array, hooks: Partial<EngineLoopHooks> = {}) {
  const seeder = WasmPeer.seeder(data, CHUNK, 'sha256', undefined, undefined, engineOptions(resolvePeerOptions()), 0);
  const uri = seeder.uri();
  seeder.free();
  const [, restore] = installFetch(
    new Map([
      [CONTENT_URL, data],
      [TREE_URL, treeFile(data, CHUNK, 'sha256')],
    ]),
  );
  world.undoAfter(restore);
  const events: { event: EngineEvent; bytes: number }[] = [];
  let done: () => void = () => {};
  const complete = new Promise<void>((resolve) => (done = resolve));
  const engine = WasmPeer.fetcher(uri, engineOptions(resolvePeerOptions()), performance.now());
  const loop = new EngineLoop(
    engine,
    {
      content: parseUriLoaded(uri),
      origin: { url: CONTENT_URL, tree: TREE_URL, maxRequests: 4, timeoutMs: 2_000, headBytes: 64 << 10 },
      originOnly: true,
    },
    {
      send: () => {},
      event: (event, bytes) => {
        events.push({ event, bytes });
        if (event.type === 'complete') done();
      },
      storageFallback: () => {},
      ...hooks,
    },
  );
  loops.push(loop);
  return { loop, events, complete };
}

describe('EngineLoop', () => {
  it('passes each chunk event on with the bytes of its chunk, the last one short', async () => {
    const data = randomBytes(40 * CHUNK + 77, 5);
    const { loop, events, complete } = originLoop(data);
    loop.kick();
    await complete;
    const chunks = events.filter((e) => e.event.type === 'origin-chunk');
    expect(chunks).toHaveLength(41);
    expect(chunks.reduce((sum, e) => sum + e.bytes, 0)).toBe(data.length);
    const last = chunks.find((e) => e.event.type === 'origin-chunk' && e.event.chunk === 40);
    expect(last?.bytes).toBe(77);
    expect(events.filter((e) => e.event.type !== 'origin-chunk').every((e) => e.bytes === 0)).toBe(true);
    expect(loop.isComplete()).toBe(true);
    expect(differsAt(loop.read(0, data.length), data)).toBeNull();
    expect(loop.stats().engine.httpBytesReceived).toBe(data.length);
  });

  it('a hook that frees the loop ends the turn: no event after it, and later commands do nothing', async () => {
    const data = randomBytes(40 * CHUNK, 6);
    let after = 0;
    let freed = false;
    let loop: EngineLoop | null = null;
    const { loop: l, complete } = originLoop(data, {
      event: () => {
        if (freed) after += 1;
        else {
          freed = true;
          loop?.free();
        }
      },
    });
    loop = l;
    loop.kick();
    await Promise.race([complete, new Promise((resolve) => setTimeout(resolve, 300))]);
    expect(freed).toBe(true);
    expect(after).toBe(0);
    // The engine is gone: these must not reach it.
    loop.setPlayhead(3);
    loop.peerLost(1);
    loop.kick();
    loop.free();
  });
});
