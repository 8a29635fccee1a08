/**
 * The Shaka Player scheme plugin (src/integrations/shaka.ts) inside Shaka's own
 * NetworkingEngine: the real compiled library (loaded in Node), a fake presentation,
 * and a local web server for what goes to Shaka's own HTTP plugin.
 */
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type shakaNamespace from 'shaka-player';
import { type MockInstance, afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PpsppError } from '../src/errors.js';
import { type ShakaSchemePlugin, registerShakaScheme } from '../src/integrations/shaka.js';
import type { SegmentRef } from '../src/presentation/manifest.js';
import type { LoadOutcome, Presentation } from '../src/presentation/presentation.js';

type Shaka = typeof shakaNamespace;
type ShakaRequest = shakaNamespace.extern.Request;
type ShakaResponse = shakaNamespace.extern.Response;

let shaka: Shaka;
let server: Server;
let base: string;
const served: { url: string; range: string | undefined }[] = [];
const undo: (() => void)[] = [];
const undoAll: (() => void)[] = [];

beforeAll(async () => {
  // The compiled library reads these browser globals as it loads; Node 20 has neither.
  const g = globalThis as Record<string, unknown>;
  const stand = { self: globalThis, navigator: { userAgent: 'node', vendor: '', platform: '' } };
  for (const [name, value] of Object.entries(stand)) {
    if (g[name] !== undefined) continue;
    g[name] = value;
    undoAll.push(() => delete g[name]);
  }
  shaka = (await import('shaka-player')).default;
  server = createServer((req, res) => {
    served.push({ url: req.url ?? '', range: req.headers.range });
    res.end(`web server: ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  for (const u of undoAll.splice(0)) u();
});

afterEach(() => {
  for (const u of undo.splice(0).reverse()) u();
  served.length = 0;
  vi.restoreAllMocks();
});

interface Asked {
  ref: SegmentRef;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  onProgress: ((loaded: number) => void) | undefined;
  settle: (o: LoadOutcome) => void;
}

/** Holds `.m4s` files (100 bytes from 1000 when asked whole); settles as the test says, or aborted as the real one. */
function fakePresentation(): { presentation: Presentation; asked: Asked[]; found: unknown[][] } {
  const asked: Asked[] = [];
  const found: unknown[][] = [];
  const presentation = {
    find: (url: string, rs?: number, re?: number): SegmentRef | null => {
      found.push([url, rs, re]);
      return new URL(url).pathname.endsWith('.m4s') ? { rendition: 1, start: rs ?? 1000, end: re ?? 1100 } : null;
    },
    load: (ref: SegmentRef, o: { signal?: AbortSignal; timeoutMs: number; onProgress?: (loaded: number) => void }): Promise<LoadOutcome> =>
      new Promise((settle) => {
        asked.push({ ref, timeoutMs: o.timeoutMs, signal: o.signal, onProgress: o.onProgress, settle });
        o.signal?.addEventListener('abort', () => settle({ aborted: true }), { once: true });
      }),
  } as unknown as Presentation;
  return { presentation, asked, found };
}

/** Registers the plugin (unregistered after the test) and hands back the plugin Shaka was given. */
function register(presentation: Presentation | Promise<Presentation>): { plugin: ShakaSchemePlugin; unregister: () => void; registered: MockInstance<Shaka['net']['NetworkingEngine']['registerScheme']> } {
  const registered = vi.spyOn(shaka.net.NetworkingEngine, 'registerScheme');
  const unregister = registerShakaScheme(shaka, presentation);
  undo.push(unregister);
  const plugin = registered.mock.calls[0]![1] as unknown as ShakaSchemePlugin;
  return { plugin, unregister, registered };
}

/** A NetworkingEngine as a Player makes one, recording what it tells the ABR manager. */
function engine(): { net: shakaNamespace.net.NetworkingEngine; abrSamples: [number, number][] } {
  const abrSamples: [number, number][] = [];
  const net = new shaka.net.NetworkingEngine((ms, bytes) => abrSamples.push([ms, bytes]));
  net.configure({ forceHTTP: false, forceHTTPS: false, minBytesForProgressEvents: 16e3, commonAccessTokenHeaderName: 'cta-common-access-token' });
  undo.push(() => void net.destroy());
  return { net, abrSamples };
}

function segmentRequest(url: string, retry: Partial<shakaNamespace.extern.RetryParameters> = {}, range?: string): ShakaRequest {
  const params = { ...shaka.net.NetworkingEngine.defaultRetryParameters(), maxAttempts: 1, timeout: 12_000, ...retry };
  const request = shaka.net.NetworkingEngine.makeRequest([url], params);
  if (range !== undefined) request.headers['Range'] = range;
  return request;
}

const SEGMENT = (): number => shaka.net.NetworkingEngine.RequestType.SEGMENT;

/** The plugin called directly, as the NetworkingEngine does, with the progress events it sends. */
function callPlugin(plugin: ShakaSchemePlugin, request: ShakaRequest): { op: ReturnType<ShakaSchemePlugin>; progress: number[][] } {
  const progress: number[][] = [];
  const op = plugin(request.uris[0]!, request, SEGMENT(), (ms, bytes, remaining) => progress.push([ms, bytes, remaining]), () => {}, {});
  return { op, progress };
}

async function rejection(p: Promise<unknown>): Promise<shakaNamespace.util.Error> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(shaka.util.Error);
    return err as shakaNamespace.util.Error;
  }
  throw new Error('expected a rejection');
}

describe('registerShakaScheme', () => {
  it('registers for http and https above Shaka\'s own plugins, with progress support', () => {
    const { registered } = register(fakePresentation().presentation);
    const { APPLICATION } = shaka.net.NetworkingEngine.PluginPriority;
    expect(registered.mock.calls.map((c) => [c[0], c[2], c[3]])).toEqual([
      ['http', APPLICATION, true],
      ['https', APPLICATION, true],
    ]);
  });

  it('a whole-file segment: the presentation\'s verified bytes, exactly, with Shaka\'s timeout', async () => {
    const { presentation, asked, found } = fakePresentation();
    register(presentation);
    const { net } = engine();
    const url = `${base}/video/v1/seg001.m4s`;
    const pending = net.request(SEGMENT(), segmentRequest(url));
    await vi.waitFor(() => expect(asked).toHaveLength(1));
    expect(found).toEqual([[url, undefined, undefined]]);
    expect(asked[0]!.ref).toEqual({ rendition: 1, start: 1000, end: 1100 });
    expect(asked[0]!.timeoutMs).toBe(12_000);
    // A view into a larger buffer: Shaka must get only its bytes.
    const whole = new Uint8Array([9, 1, 2, 3, 9]);
    asked[0]!.settle({ bytes: whole.subarray(1, 4), ms: 5, reportedMs: 400 });
    const response = (await pending.promise) as ShakaResponse;
    expect(response.data).toBeInstanceOf(ArrayBuffer);
    expect([...new Uint8Array(response.data as ArrayBuffer)]).toEqual([1, 2, 3]);
    expect(response.status).toBe(200);
    expect(response.uri).toBe(url);
    expect(response.originalUri).toBe(url);
    expect(response.fromCache).toBe(false);
    expect(served).toEqual([]);
  });

  it('a byte-range segment: the Range header\'s inclusive end becomes the exclusive end, answered 206', async () => {
    const { presentation, asked, found } = fakePresentation();
    register(presentation);
    const { net } = engine();
    const url = `${base}/video/v1.m4s`;
    const pending = net.request(SEGMENT(), segmentRequest(url, {}, 'bytes=2000-2099'));
    await vi.waitFor(() => expect(asked).toHaveLength(1));
    expect(found).toEqual([[url, 2000, 2100]]);
    expect(asked[0]!.ref).toEqual({ rendition: 1, start: 2000, end: 2100 });
    asked[0]!.settle({ bytes: new Uint8Array(100).fill(7), ms: 30, reportedMs: 30 });
    const response = (await pending.promise) as ShakaResponse;
    expect(response.status).toBe(206);
    expect((response.data as ArrayBuffer).byteLength).toBe(100);
  });

  it('what the presentation does not hold goes to Shaka\'s own HTTP plugin', async () => {
    const { presentation, asked, found } = fakePresentation();
    register(presentation);
    const { net } = engine();
    const mpd = await net.request(shaka.net.NetworkingEngine.RequestType.MANIFEST, segmentRequest(`${base}/video/manifest.mpd`)).promise;
    expect(new TextDecoder().decode(mpd.data as ArrayBuffer)).toBe('web server: /video/manifest.mpd');
    expect(found).toEqual([[`${base}/video/manifest.mpd`, undefined, undefined]]);
    // A range whose end is unknown here is not asked of the presentation.
    await net.request(SEGMENT(), segmentRequest(`${base}/video/v1.m4s`, {}, 'bytes=500-')).promise;
    expect(found).toHaveLength(1);
    expect(asked).toHaveLength(0);
    expect(served).toEqual([
      { url: '/video/manifest.mpd', range: undefined },
      { url: '/video/v1.m4s', range: 'bytes=500-' },
    ]);
  });

  it('Shaka\'s ABR hears the segment over reportedMs, once; progress while waiting carries no bytes', async () => {
    const { presentation, asked } = fakePresentation();
    const { plugin } = register(presentation);
    // The plugin itself: keep-alives for new verified bytes, then the one sample.
    const { op, progress } = callPlugin(plugin, segmentRequest(`${base}/video/v1/seg002.m4s`));
    const load = asked[0]!;
    load.onProgress?.(0);
    load.onProgress?.(60);
    load.onProgress?.(60);
    load.onProgress?.(90);
    load.settle({ bytes: new Uint8Array(100), ms: 5, reportedMs: 400 });
    const response = await op.promise;
    expect(response.timeMs).toBe(400);
    expect(progress).toEqual([
      [0, 0, 40],
      [0, 0, 10],
      [400, 100, 0],
    ]);
    // Through Shaka's NetworkingEngine, what its ABR manager is told.
    const { net, abrSamples } = engine();
    const pending = net.request(SEGMENT(), segmentRequest(`${base}/video/v1/seg003.m4s`));
    await vi.waitFor(() => expect(asked).toHaveLength(2));
    asked[1]!.onProgress?.(80);
    asked[1]!.settle({ bytes: new Uint8Array(100), ms: 2, reportedMs: 650 });
    const viaEngine = (await pending.promise) as ShakaResponse;
    expect(viaEngine.timeMs).toBeGreaterThanOrEqual(650);
    expect(abrSamples.filter(([, bytes]) => bytes > 0)).toEqual([[650, 100]]);
  });

  it('a timed-out load fails as a recoverable network TIMEOUT, which Shaka retries', async () => {
    const { presentation, asked } = fakePresentation();
    const { plugin } = register(presentation);
    const url = `${base}/video/v1/seg004.m4s`;
    const { op } = callPlugin(plugin, segmentRequest(url));
    asked[0]!.settle({ timedOut: true });
    const err = await rejection(op.promise);
    expect([err.severity, err.category, err.code]).toEqual([shaka.util.Error.Severity.RECOVERABLE, shaka.util.Error.Category.NETWORK, shaka.util.Error.Code.TIMEOUT]);
    expect(err.data[0]).toBe(url);
    // Shaka has no timeout (0): the presentation still needs one.
    callPlugin(plugin, segmentRequest(url, { timeout: 0 }));
    expect(asked[1]!.timeoutMs).toBe(20_000);
    // Through the engine: retried, then failed with the timeout.
    const { net } = engine();
    const pending = net.request(SEGMENT(), segmentRequest(url, { maxAttempts: 2, baseDelay: 0, fuzzFactor: 0 }));
    await vi.waitFor(() => expect(asked).toHaveLength(3));
    asked[2]!.settle({ timedOut: true });
    await vi.waitFor(() => expect(asked).toHaveLength(4));
    asked[3]!.settle({ timedOut: true });
    expect((await rejection(pending.promise)).code).toBe(shaka.util.Error.Code.TIMEOUT);
  });

  it('a load that shows no progress within Shaka\'s connection timeout is aborted by Shaka, as a timeout', async () => {
    const { presentation, asked } = fakePresentation();
    register(presentation);
    const { net } = engine();
    const pending = net.request(SEGMENT(), segmentRequest(`${base}/video/v1/seg005.m4s`, { connectionTimeout: 50 }));
    const err = await rejection(pending.promise);
    expect(err.code).toBe(shaka.util.Error.Code.TIMEOUT);
    expect(asked[0]!.signal?.aborted).toBe(true);
  });

  it('an error fails as a network HTTP_ERROR carrying the presentation\'s error', async () => {
    const { presentation, asked } = fakePresentation();
    const { plugin } = register(presentation);
    const { op } = callPlugin(plugin, segmentRequest(`${base}/video/v1/seg006.m4s`));
    asked[0]!.settle({ error: new PpsppError('closed', 'the presentation was closed') });
    const err = await rejection(op.promise);
    expect([err.severity, err.category, err.code]).toEqual([shaka.util.Error.Severity.RECOVERABLE, shaka.util.Error.Category.NETWORK, shaka.util.Error.Code.HTTP_ERROR]);
    expect(err.data[1]).toBeInstanceOf(PpsppError);
    expect((err.data[1] as PpsppError).message).toBe('the presentation was closed');
  });

  it('abort: the load is aborted and Shaka gets OPERATION_ABORTED, not retried', async () => {
    const { presentation, asked } = fakePresentation();
    const { plugin } = register(presentation);
    const { op, progress } = callPlugin(plugin, segmentRequest(`${base}/video/v1/seg007.m4s`));
    await op.abort();
    expect(asked[0]!.signal?.aborted).toBe(true);
    const err = await rejection(op.promise);
    expect([err.category, err.code]).toEqual([shaka.util.Error.Category.NETWORK, shaka.util.Error.Code.OPERATION_ABORTED]);
    expect(progress).toEqual([]);
    // Through the engine (as a Player's unload does).
    const { net } = engine();
    const pending = net.request(SEGMENT(), segmentRequest(`${base}/video/v1/seg008.m4s`, { maxAttempts: 3, baseDelay: 0 }));
    await vi.waitFor(() => expect(asked).toHaveLength(2));
    await pending.abort();
    expect((await rejection(pending.promise)).code).toBe(shaka.util.Error.Code.OPERATION_ABORTED);
    expect(asked).toHaveLength(2);
  });

  it('unregistering puts Shaka\'s own HTTP plugins back, as Shaka registers them', async () => {
    const { presentation, asked } = fakePresentation();
    const { unregister, registered } = register(presentation);
    const unregistered = vi.spyOn(shaka.net.NetworkingEngine, 'unregisterScheme');
    unregister();
    unregister();
    const { FALLBACK, PREFERRED } = shaka.net.NetworkingEngine.PluginPriority;
    const { HttpFetchPlugin, HttpXHRPlugin } = shaka.net;
    expect(unregistered.mock.calls).toEqual([['http'], ['https']]);
    expect(registered.mock.calls.slice(2)).toEqual([
      ['http', HttpXHRPlugin.parse, FALLBACK, true],
      ['http', HttpFetchPlugin.parse, PREFERRED, true],
      ['https', HttpXHRPlugin.parse, FALLBACK, true],
      ['https', HttpFetchPlugin.parse, PREFERRED, true],
    ]);
    const { net } = engine();
    const response = await net.request(SEGMENT(), segmentRequest(`${base}/video/v1/seg009.m4s`)).promise;
    expect(new TextDecoder().decode(response.data as ArrayBuffer)).toBe('web server: /video/v1/seg009.m4s');
    expect(asked).toHaveLength(0);
  });
});

describe('registerShakaScheme given the presentation\'s promise', () => {
  it('a segment asked for while it loads waits for it, then comes from it', async () => {
    const { presentation, asked } = fakePresentation();
    let resolve: (p: Presentation) => void = () => {};
    register(new Promise<Presentation>((r) => (resolve = r)));
    const { net } = engine();
    const pending = net.request(SEGMENT(), segmentRequest(`${base}/video/v1/seg001.m4s`));
    await new Promise((done) => setTimeout(done, 10));
    expect(asked).toHaveLength(0);
    resolve(presentation);
    await vi.waitFor(() => expect(asked).toHaveLength(1));
    asked[0]!.settle({ bytes: new Uint8Array([1, 2]), ms: 1, reportedMs: 30 });
    const response = await pending.promise;
    expect([...new Uint8Array(response.data as ArrayBuffer)]).toEqual([1, 2]);
    expect(served, 'nothing from the web server').toEqual([]);
  });

  it('while it loads the MPD goes to the web server at once; once it fails, segments fail as network errors, none from the web server', async () => {
    let reject: (err: unknown) => void = () => {};
    register(new Promise<Presentation>((_, r) => (reject = r)));
    const { net } = engine();
    const mpd = await net.request(shaka.net.NetworkingEngine.RequestType.MANIFEST, segmentRequest(`${base}/video/manifest.mpd`)).promise;
    expect(new TextDecoder().decode(mpd.data as ArrayBuffer)).toBe('web server: /video/manifest.mpd');
    reject(new PpsppError('manifest-unreachable', 'no manifest'));
    const err = await rejection(net.request(SEGMENT(), segmentRequest(`${base}/video/v1/seg001.m4s`)).promise);
    expect([err.category, err.code]).toEqual([shaka.util.Error.Category.NETWORK, shaka.util.Error.Code.HTTP_ERROR]);
    expect(String(err.data[1])).toMatch(/no manifest/);
    await net.request(shaka.net.NetworkingEngine.RequestType.MANIFEST, segmentRequest(`${base}/video/manifest.mpd`)).promise;
    expect(served.map((s) => s.url)).toEqual(['/video/manifest.mpd', '/video/manifest.mpd']);
  });

  it('aborted while it waits: OPERATION_ABORTED at once, and nothing asked after', async () => {
    const { presentation, asked } = fakePresentation();
    let resolve: (p: Presentation) => void = () => {};
    const { plugin } = register(new Promise<Presentation>((r) => (resolve = r)));
    const { op } = callPlugin(plugin, segmentRequest(`${base}/video/v1/seg001.m4s`));
    await op.abort();
    expect((await rejection(op.promise)).code).toBe(shaka.util.Error.Code.OPERATION_ABORTED);
    resolve(presentation);
    await new Promise((done) => setTimeout(done, 10));
    expect(asked).toHaveLength(0);
    expect(served).toEqual([]);
  });
});
