/** What an engine in a Worker is made with (src/engine-start.ts). */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SpareWorker, inWorker, startEngine } from '../src/engine-start.js';
import { resolvePeerOptions } from '../src/options.js';
import { WorkerEngine } from '../src/worker-engine.js';
import { loadEngine } from './fakes/engine.js';
import { randomBytes } from './fakes/webm.js';

beforeAll(loadEngine);

describe('inWorker', () => {
  it('halves the bound on held bytes, the page holding a copy, down to 1 MiB', () => {
    expect(inWorker({ maxHeldBytes: 256 << 20, vodWindow: 64 })).toEqual({ maxHeldBytes: 128 << 20, vodWindow: 64 });
    expect(inWorker({ maxHeldBytes: 3 << 19 }).maxHeldBytes).toBe(1 << 20);
  });

  it('leaves no bound unbounded', () => {
    expect(inWorker({ maxHeldBytes: 0 }).maxHeldBytes).toBe(0);
    expect(inWorker({}).maxHeldBytes).toBeUndefined();
  });
});

describe('SpareWorker', () => {
  afterEach(() => vi.unstubAllGlobals());

  class FakeWorker {
    static made: FakeWorker[] = [];
    terminated = false;
    constructor() {
      FakeWorker.made.push(this);
    }
    terminate(): void {
      this.terminated = true;
    }
  }

  it('keeps one Worker started ahead, handed to the next engine, ended when not wanted or closed', () => {
    FakeWorker.made = [];
    vi.stubGlobal('Worker', FakeWorker);
    const worker = resolvePeerOptions({});
    const spare = new SpareWorker();
    expect(spare.take(worker)).toBeNull();
    spare.prepare(worker);
    spare.prepare(worker);
    expect(FakeWorker.made).toHaveLength(1);
    expect(spare.take(worker)).toBe(FakeWorker.made[0]);
    expect(spare.take(worker)).toBeNull();
    // Not wanted (the engines now run on the main thread): ended.
    spare.prepare(worker);
    expect(spare.take(resolvePeerOptions({ engineThread: 'main' }))).toBeNull();
    expect(FakeWorker.made[1]!.terminated).toBe(true);
    spare.prepare(resolvePeerOptions({ engineThread: 'main' }));
    expect(FakeWorker.made).toHaveLength(2);
    spare.prepare(worker);
    spare.close();
    expect(FakeWorker.made[2]!.terminated).toBe(true);
    spare.prepare(worker);
    expect(FakeWorker.made).toHaveLength(3);
  });
});

describe('startEngine', () => {
  /** A Worker whose script never loads: it takes messages and answers none. */
  class UnloadedWorker extends EventTarget {
    onmessage: unknown = null;
    terminated = false;
    postMessage(): void {}
    terminate(): void {
      this.terminated = true;
    }
  }

  it("runs the engine on the main thread at once when the Worker's script does not load, not at the start's timeout", async () => {
    vi.useFakeTimers();
    try {
      const worker = new UnloadedWorker();
      const started = startEngine(
        resolvePeerOptions({}),
        { kind: 'seeder', data: randomBytes(4096, 3), chunkSize: 1024, hash: 'sha256', signal: null, name: null },
        {},
        null,
        false,
        worker as unknown as Worker,
      );
      // An ErrorEvent, as far as the listener reads it (Node has no ErrorEvent).
      worker.dispatchEvent(Object.assign(new Event('error'), { message: 'blocked by CSP' }));
      const engine = await started;
      expect(engine).not.toBeInstanceOf(WorkerEngine);
      expect(engine.uri()).toMatch(/^ppspp:/);
      expect(worker.terminated).toBe(true);
      // No timer left to fire: the fallback did not wait for the timeout.
      expect(vi.getTimerCount()).toBe(0);
      engine.free();
    } finally {
      vi.useRealTimers();
    }
  });
});
