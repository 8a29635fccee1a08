/** Loading the Wasm module from a URL (src/wasm.ts): a stalled fetch fails it; a slow one does not. */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WASM_STALL_MS, loadWasm, wasmLoaded } from '../src/wasm.js';

const MODULE = readFileSync(new URL('../wasm/ppspp_wasm_bg.wasm', import.meta.url));

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

/**
 * A fetch whose answer comes after `headersAfterMs` (never, null) with `pieces` of the
 * body, each `gapMs` after the last, then the end (or, `stallAfter`, nothing more after
 * that many pieces); it fails as a real one does when its signal aborts.
 */
function stubFetch(o: { headersAfterMs: number | null; pieces: Uint8Array[]; gapMs: number; stallAfter?: number }): void {
  vi.stubGlobal('fetch', (_url: string, init: { signal: AbortSignal }) =>
    new Promise<Response>((resolve, reject) => {
      const signal = init.signal;
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      if (o.headersAfterMs === null) return;
      setTimeout(() => {
        let sent = 0;
        const body = new ReadableStream<Uint8Array>({
          start(c) {
            signal.addEventListener('abort', () => c.error(signal.reason), { once: true });
            const next = (): void => {
              if (signal.aborted) return;
              if (sent === o.pieces.length) return c.close();
              if (sent === o.stallAfter) return;
              c.enqueue(o.pieces[sent++]!);
              setTimeout(next, o.gapMs);
            };
            next();
          },
        });
        resolve(new Response(body, { status: 200, headers: { 'content-type': 'application/octet-stream' } }));
      }, o.headersAfterMs);
    }),
  );
}

async function settledWithin(p: Promise<void>, ms: number): Promise<string> {
  let outcome = 'pending';
  p.then(() => (outcome = 'loaded'), (err: { code?: string; message: string }) => (outcome = `${err.code}: ${err.message}`));
  await vi.advanceTimersByTimeAsync(ms);
  return outcome;
}

describe('loadWasm from a URL', () => {
  it('fails with wasm-load-failed when no answer comes, or its body stops, for the stall bound', async () => {
    vi.useFakeTimers();
    stubFetch({ headersAfterMs: null, pieces: [], gapMs: 0 });
    const noAnswer = loadWasm('https://cdn.example/ppspp.wasm');
    expect(await settledWithin(noAnswer, WASM_STALL_MS - 1)).toBe('pending');
    expect(await settledWithin(noAnswer, 1)).toMatch(/^wasm-load-failed: .*nothing arrived for 15 s/);
    const piece = MODULE.length / 4;
    stubFetch({ headersAfterMs: 100, pieces: [0, 1, 2, 3].map((i) => MODULE.subarray(i * piece, (i + 1) * piece)), gapMs: 1000, stallAfter: 2 });
    const stalled = loadWasm('https://cdn.example/ppspp.wasm');
    // Two pieces by 1.1 s; nothing after them.
    expect(await settledWithin(stalled, 1100 + WASM_STALL_MS - 10)).toBe('pending');
    expect(await settledWithin(stalled, 10)).toMatch(/^wasm-load-failed: .*nothing arrived/);
    expect(wasmLoaded()).toBe(false);
  });

  it('a slow answer whose pieces keep coming loads, however long it takes in all', async () => {
    vi.useFakeTimers();
    const pieces = 8;
    const size = Math.ceil(MODULE.length / pieces);
    stubFetch({ headersAfterMs: WASM_STALL_MS - 1000, pieces: [...Array(pieces).keys()].map((i) => MODULE.subarray(i * size, (i + 1) * size)), gapMs: WASM_STALL_MS - 1000 });
    const slow = loadWasm('https://cdn.example/ppspp.wasm');
    // Every piece in: the rest is compiling, which takes no timers.
    expect(await settledWithin(slow, (pieces + 1) * WASM_STALL_MS)).not.toMatch(/failed/);
    vi.useRealTimers();
    await slow;
    expect(wasmLoaded()).toBe(true);
  });
});
