/** The hls.js fragment loader (src/integrations/hls.ts) against a fake presentation. */
import type { FragmentLoaderContext, HlsConfig, LoaderCallbacks, LoaderConfiguration, LoaderStats } from 'hls.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PpsppError } from '../src/errors.js';
import { hlsFragmentLoader } from '../src/integrations/hls.js';
import type { LoadOutcome, Presentation } from '../src/presentation/presentation.js';
import type { SegmentRef } from '../src/presentation/manifest.js';

interface Asked {
  ref: SegmentRef;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  settle: (o: LoadOutcome) => void;
}

function fakePresentation(): { presentation: Presentation; asked: Asked[] } {
  const asked: Asked[] = [];
  const presentation = {
    find: (url: string, rs?: number, re?: number): SegmentRef | null =>
      url.endsWith('.m4s') ? { rendition: 1, start: rs ?? 1000, end: re ?? 1100 } : null,
    load: (ref: SegmentRef, o: { signal?: AbortSignal; timeoutMs: number }): Promise<LoadOutcome> =>
      new Promise((settle) => asked.push({ ref, timeoutMs: o.timeoutMs, signal: o.signal, settle })),
  } as unknown as Presentation;
  return { presentation, asked };
}

const CONFIG = { loadPolicy: { maxTimeToFirstByteMs: 8000, maxLoadTimeMs: 12_000 }, timeout: 0, maxRetry: 0, retryDelay: 0, maxRetryDelay: 0 } as unknown as LoaderConfiguration;

function context(url: string): FragmentLoaderContext {
  return { url, responseType: 'arraybuffer', type: 'fragment' } as unknown as FragmentLoaderContext;
}

function recorder(): { calls: string[]; callbacks: LoaderCallbacks<FragmentLoaderContext>; data: ArrayBuffer[]; stats: LoaderStats[] } {
  const calls: string[] = [];
  const data: ArrayBuffer[] = [];
  const stats: LoaderStats[] = [];
  return {
    calls,
    data,
    stats,
    callbacks: {
      onSuccess: (r, s) => { calls.push('success'); data.push(r.data as ArrayBuffer); stats.push(s); },
      onError: (e) => calls.push(`error ${e.text}`),
      onTimeout: () => calls.push('timeout'),
      onAbort: () => calls.push('abort'),
    },
  };
}

/** hls.js's own loader for `config.loader`, recording the URLs it loads and its aborts. */
function defaultLoader(loaded: string[]): HlsConfig {
  class Default {
    stats = {} as LoaderStats;
    context = null;
    load(ctx: FragmentLoaderContext): void { loaded.push(ctx.url); }
    abort(): void { loaded.push('abort'); }
    destroy(): void {}
  }
  return { loader: Default } as unknown as HlsConfig;
}

/**
 * A loader class given a presentation still loading (`resolve` loads it), with what its
 * loaders ask of the presentation and of hls.js's own loader.
 */
function whileLoading(): { asked: Asked[]; loaded: string[]; resolve: () => void; make: () => InstanceType<ReturnType<typeof hlsFragmentLoader>> } {
  const { presentation, asked } = fakePresentation();
  let resolve = (): void => {};
  const Loader = hlsFragmentLoader(new Promise<Presentation>((r) => (resolve = () => r(presentation))));
  const loaded: string[] = [];
  return { asked, loaded, resolve: () => resolve(), make: () => new Loader(defaultLoader(loaded)) };
}

describe('hlsFragmentLoader', () => {
  it('a segment of the manifest: the presentation\'s verified bytes, with hls.js\'s timeout and load stats', async () => {
    const { presentation, asked } = fakePresentation();
    const Loader = hlsFragmentLoader(presentation);
    const loader = new Loader({} as HlsConfig);
    // hls.js keeps the stats object it finds before load(): that one must be filled in.
    const held = loader.stats;
    const r = recorder();
    loader.load(context('https://cdn.example/v1/seg001.m4s'), CONFIG, r.callbacks);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.timeoutMs).toBe(12_000);
    asked[0]!.settle({ bytes: new Uint8Array([1, 2, 3]), ms: 5, reportedMs: 400 });
    await Promise.resolve();
    await Promise.resolve();
    expect(r.calls).toEqual(['success']);
    expect([...new Uint8Array(r.data[0]!)]).toEqual([1, 2, 3]);
    const s = r.stats[0]!;
    expect(s).toBe(held);
    expect(s.loaded).toBe(3);
    expect(s.total).toBe(3);
    expect(s.loading.end).toBeGreaterThanOrEqual(s.loading.first);
    expect(s.loading.first).toBeGreaterThanOrEqual(s.loading.start);
    // Told as taking what the network would take, not the instant it took.
    expect(s.loading.end - s.loading.start).toBeGreaterThanOrEqual(400);
  });

  it('a timeout, an error and an abort reach hls.js as such, each once', async () => {
    const { presentation, asked } = fakePresentation();
    const Loader = hlsFragmentLoader(presentation);
    const r = recorder();
    const a = new Loader({} as HlsConfig);
    a.load(context('https://cdn.example/v1/a.m4s'), CONFIG, r.callbacks);
    asked[0]!.settle({ timedOut: true });
    const b = new Loader({} as HlsConfig);
    b.load(context('https://cdn.example/v1/b.m4s'), CONFIG, r.callbacks);
    asked[1]!.settle({ error: new PpsppError('closed', 'gone') });
    await new Promise((resolve) => setTimeout(resolve, 0));
    const c = new Loader({} as HlsConfig);
    c.load(context('https://cdn.example/v1/c.m4s'), CONFIG, r.callbacks);
    c.abort();
    expect(asked[2]!.signal?.aborted).toBe(true);
    // The load settles after the abort: nothing more reaches hls.js.
    asked[2]!.settle({ aborted: true });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(r.calls).toEqual(['timeout', 'error ppspp: gone', 'abort']);
    expect(c.stats.aborted).toBe(true);
  });

  it('what the manifest does not hold goes to hls.js\'s own loader', () => {
    const { presentation, asked } = fakePresentation();
    const loaded: string[] = [];
    const Loader = hlsFragmentLoader(presentation);
    const loader = new Loader(defaultLoader(loaded));
    const held = loader.stats;
    loader.load(context('https://cdn.example/key.bin'), CONFIG, recorder().callbacks);
    loader.abort();
    expect(asked).toHaveLength(0);
    expect(loaded).toEqual(['https://cdn.example/key.bin', 'abort']);
    // hls.js's loader fills in the stats hls.js holds.
    expect(loader.stats).toBe(held);
  });
});

describe('hlsFragmentLoader given the presentation\'s promise', () => {
  afterEach(() => vi.useRealTimers());

  it('a segment asked for while it loads waits for it, then comes from it; the next at once', async () => {
    const { asked, loaded, resolve, make } = whileLoading();
    const r = recorder();
    const first = make();
    first.load(context('https://cdn.example/v1/seg001.m4s'), CONFIG, r.callbacks);
    expect(first.stats.loading.start, 'under way for hls.js\'s ABR').toBeGreaterThan(0);
    await new Promise((done) => setTimeout(done, 10));
    expect(asked).toHaveLength(0);
    resolve();
    await new Promise((done) => setTimeout(done, 0));
    expect(asked).toHaveLength(1);
    asked[0]!.settle({ bytes: new Uint8Array([7]), ms: 1, reportedMs: 50 });
    await new Promise((done) => setTimeout(done, 0));
    expect(r.calls).toEqual(['success']);
    make().load(context('https://cdn.example/v1/seg002.m4s'), CONFIG, r.callbacks);
    expect(asked, 'loaded: asked at once').toHaveLength(2);
    expect(loaded, 'nothing from the web server').toEqual([]);
  });

  it('a presentation that fails to load: its segments fail as network errors saying why, none from the web server', async () => {
    const Loader = hlsFragmentLoader(Promise.reject(new PpsppError('manifest-unreachable', 'no manifest')));
    const loaded: string[] = [];
    const r = recorder();
    new Loader(defaultLoader(loaded)).load(context('https://cdn.example/v1/seg001.m4s'), CONFIG, r.callbacks);
    await new Promise((done) => setTimeout(done, 0));
    new Loader(defaultLoader(loaded)).load(context('https://cdn.example/v1/seg002.m4s'), CONFIG, r.callbacks);
    expect(r.calls).toEqual(['error ppspp: the presentation did not load: no manifest', 'error ppspp: the presentation did not load: no manifest']);
    expect(loaded).toEqual([]);
  });

  it('not loaded within the segment\'s timeout: that load times out; the next, once it has loaded, comes from it', async () => {
    vi.useFakeTimers();
    const { asked, loaded, resolve, make } = whileLoading();
    const r = recorder();
    make().load(context('https://cdn.example/v1/seg001.m4s'), CONFIG, r.callbacks);
    await vi.advanceTimersByTimeAsync(11_999);
    expect(r.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.calls).toEqual(['timeout']);
    resolve();
    await vi.advanceTimersByTimeAsync(0);
    make().load(context('https://cdn.example/v1/seg001.m4s'), CONFIG, r.callbacks);
    expect(asked).toHaveLength(1);
    expect(loaded).toEqual([]);
  });

  it('aborted while it waits: hls.js hears the abort once, and nothing is loaded after', async () => {
    const { asked, loaded, resolve, make } = whileLoading();
    const r = recorder();
    const loader = make();
    loader.load(context('https://cdn.example/v1/seg001.m4s'), CONFIG, r.callbacks);
    loader.abort();
    loader.abort();
    resolve();
    await new Promise((done) => setTimeout(done, 0));
    expect(r.calls).toEqual(['abort']);
    expect(loader.stats.aborted).toBe(true);
    expect(asked).toHaveLength(0);
    expect(loaded).toEqual([]);
  });
});
