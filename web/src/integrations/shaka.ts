/**
 * Shaka Player over PPSPP: a networking scheme plugin for `http:` and `https:` that takes
 * each media segment and initialisation segment of the presentation from its rendition's
 * swarm, verified, and leaves everything else (the MPD or playlists, keys, licences,
 * segments the manifest does not name) to Shaka's own HTTP plugin. Shaka keeps choosing
 * renditions as it does (its ABR, its buffer); the download times it reads are at least
 * what the network would take (`reportedMs`), so segments read ahead from peers do not
 * push its ABR beyond what the network delivers. Give the presentation the video element
 * too (`attachMedia`): segments Shaka asks for far ahead of playback may then wait for
 * peers still connecting.
 *
 * Shaka's scheme plugins belong to the page, not to one player: register one presentation
 * at a time, and unregister (which puts Shaka's own HTTP plugin back) once its players
 * are destroyed. The page passes its own `shaka`; this module imports only its types.
 *
 * The plugin takes the presentation or `Presentation.load`'s promise. Given the promise,
 * Shaka reads its MPD or playlists while the manifest and the engine load, and a segment
 * it asks for meanwhile waits for them; if the presentation fails to load, segments fail
 * as network errors (nothing unverified reaches Shaka), as they would had the page
 * awaited it: the page hears why from its promise.
 *
 * ```ts
 * import shaka from 'shaka-player';
 * import { Presentation } from 'ppspp-web';
 * import { registerShakaScheme } from 'ppspp-web/shaka';
 * const loading = Presentation.load('/video/manifest.ppspp.json', { signal: 'wss://signal.example/' });
 * const unregister = registerShakaScheme(shaka, loading);
 * const player = new shaka.Player();
 * await player.attach(video);
 * await player.load('/video/manifest.mpd');
 * const presentation = await loading;
 * presentation.attachMedia(video);
 * // when done: await player.destroy(); unregister(); presentation.close();
 * ```
 */
import type shaka from 'shaka-player';
import type { LiveSegmentRef } from '../presentation/live-delivery.js';
import type { SegmentRef } from '../presentation/manifest.js';
import type { Presentation } from '../presentation/presentation.js';
import { exactBuffer } from './exact-buffer.js';
import { type PresentationSource, PresentationSlot, type SlotState } from './presentation-slot.js';

type ShakaRequest = shaka.extern.Request;
type ShakaResponse = shaka.extern.Response;
type ShakaOperation<T> = shaka.extern.IAbortableOperation<T>;

/** A scheme plugin as Shaka's NetworkingEngine calls it (the request type as a plain number, which every build's enum is). */
export type ShakaSchemePlugin = (
  uri: string,
  request: ShakaRequest,
  requestType: number,
  progressUpdated: shaka.extern.ProgressUpdated,
  headersReceived: shaka.extern.HeadersReceived,
  config: shaka.extern.SchemePluginConfig,
) => ShakaOperation<ShakaResponse>;

/**
 * What this uses of the page's `shaka` namespace. Every build of Shaka (compiled, ui,
 * dash, …) has it; their declarations do not fit one another, so none is named here.
 */
export interface ShakaNamespace {
  net: {
    NetworkingEngine: {
      registerScheme(scheme: string, plugin: ShakaSchemePlugin, priority?: number, progressSupport?: boolean): void;
      unregisterScheme(scheme: string): void;
      RequestType: { SEGMENT: number };
      PluginPriority: { FALLBACK: number; PREFERRED: number; APPLICATION: number };
    };
    HttpFetchPlugin: { parse: ShakaSchemePlugin; isSupported(): boolean };
    HttpXHRPlugin: { parse: ShakaSchemePlugin };
  };
  util: {
    AbortableOperation: {
      new <T>(promise: Promise<T>, onAbort: () => Promise<unknown>): ShakaOperation<T>;
      failed<T>(error: Error): ShakaOperation<T>;
    };
    Error: {
      new (severity: number, category: number, code: number, ...data: unknown[]): Error;
      Severity: { RECOVERABLE: number };
      Category: { NETWORK: number };
      Code: { TIMEOUT: number; HTTP_ERROR: number; OPERATION_ABORTED: number };
    };
  };
}

const SCHEMES = ['http', 'https'] as const;

/** How long a load may take: the request's timeout; the presentation needs one where Shaka has none (0). */
function timeoutOf(retry: ShakaRequest['retryParameters'] | undefined): number {
  const t = retry?.timeout;
  return typeof t === 'number' && Number.isFinite(t) && t > 0 ? t : 20_000;
}

/**
 * The bytes a request's Range header asks for as `[start, end)` (`[undefined, undefined]`:
 * the whole file), or null for a range the presentation cannot be asked for: several
 * ranges, a suffix, or an open end past 0 (the file's length is not known here).
 */
function requestedRange(headers: Record<string, string>): [number | undefined, number | undefined] | null {
  const value = Object.entries(headers).find(([name]) => name.toLowerCase() === 'range')?.[1];
  if (value === undefined) return [undefined, undefined];
  const m = /^\s*bytes\s*=\s*(\d+)\s*-\s*(\d*)\s*$/i.exec(value);
  if (!m) return null;
  const start = Number(m[1]);
  if (m[2] === '') return start === 0 ? [undefined, undefined] : null;
  const last = Number(m[2]);
  return last >= start ? [start, last + 1] : null;
}

function hasRange(headers: Record<string, string>): boolean {
  return Object.keys(headers).some((name) => name.toLowerCase() === 'range');
}

/**
 * Registers a scheme plugin for `http:` and `https:` with Shaka's NetworkingEngine (above
 * Shaka's own and any registered before at a lower priority) that loads the
 * presentation's segments over PPSPP; `source` is the presentation or the promise of one.
 * Returns the function that unregisters it and puts Shaka's own HTTP plugins back, as
 * Shaka registers them when it loads.
 */
export function registerShakaScheme(shaka: ShakaNamespace, source: PresentationSource): () => void {
  const { NetworkingEngine, HttpFetchPlugin, HttpXHRPlugin } = shaka.net;
  const { AbortableOperation, Error: ShakaError } = shaka.util;
  const fetchSupported = HttpFetchPlugin.isSupported();
  const httpPlugin = fetchSupported ? HttpFetchPlugin.parse : HttpXHRPlugin.parse;
  const slot = new PresentationSlot(source);
  // As Shaka's HTTP plugins fail: recoverable network errors, so that Shaka retries.
  const failure = (uri: string, code: number, ...data: unknown[]): Error =>
    new ShakaError(ShakaError.Severity.RECOVERABLE, ShakaError.Category.NETWORK, code, uri, ...data);

  const loadSegment = (
    presentation: Presentation,
    uri: string,
    request: ShakaRequest,
    requestType: number,
    ref: SegmentRef | LiveSegmentRef,
    progressUpdated: shaka.extern.ProgressUpdated,
  ): ShakaOperation<ShakaResponse> => {
    const controller = new AbortController();
    // A live segment's size is known once it is found in the live manifest.
    const size = 'live' in ref ? null : ref.end - ref.start;
    let verified = 0;
    const promise = presentation
      .load(ref, {
        signal: controller.signal,
        timeoutMs: timeoutOf(request.retryParameters),
        // Shaka's ABR samples every progress event (its ms, its bytes) and, once a plugin
        // has sent one, not the response's timeMs (NetworkingEngine, SimpleAbrManager).
        // Bytes already verified when the segment is asked for (read ahead from peers)
        // would make a sample at a rate the network never delivered. So while the load
        // waits, events carry neither bytes nor time (too small for Shaka to sample):
        // they keep Shaka's connection and stall timers and its bytes-remaining figure
        // going, and the one sample is the whole segment over reportedMs.
        onProgress: (loaded) => {
          if (loaded <= verified) return;
          verified = loaded;
          progressUpdated(0, 0, size === null ? 0 : size - loaded);
        },
      })
      .then((outcome): ShakaResponse => {
        if ('bytes' in outcome) {
          progressUpdated(outcome.reportedMs, outcome.bytes.length, 0);
          // request.streamDataCallback (low-latency streaming) is left uncalled: Shaka
          // then appends the whole segment, as for plugins that do not stream.
          return {
            uri,
            originalUri: uri,
            data: exactBuffer(outcome.bytes),
            headers: {},
            status: hasRange(request.headers) ? 206 : 200,
            timeMs: outcome.reportedMs,
            fromCache: false,
            originalRequest: request,
          };
        }
        if ('timedOut' in outcome) throw failure(uri, ShakaError.Code.TIMEOUT, requestType);
        if ('aborted' in outcome) throw failure(uri, ShakaError.Code.OPERATION_ABORTED, requestType);
        throw failure(uri, ShakaError.Code.HTTP_ERROR, outcome.error, requestType);
      });
    return new AbortableOperation(promise, () => {
      controller.abort();
      return promise.then(
        () => undefined,
        () => undefined,
      );
    });
  };

  const plugin: ShakaSchemePlugin = (uri, request, requestType, progressUpdated, headersReceived, config) => {
    const range = (request.method || 'GET').toUpperCase() === 'GET' ? requestedRange(request.headers) : null;
    const http = (): ShakaOperation<ShakaResponse> => httpPlugin(uri, request, requestType, progressUpdated, headersReceived, config);
    if (range === null) return http();
    // Through the presentation what it holds, the rest through Shaka's own plugin; a
    // segment fails if the presentation did not load (in time).
    const route = (state: SlotState): ShakaOperation<ShakaResponse> => {
      if ('late' in state) return AbortableOperation.failed(failure(uri, ShakaError.Code.TIMEOUT, requestType));
      if ('failed' in state) return AbortableOperation.failed(failure(uri, ShakaError.Code.HTTP_ERROR, state.failed, requestType));
      const ref = state.presentation.find(uri, range[0], range[1]);
      return ref === null ? http() : loadSegment(state.presentation, uri, request, requestType, ref, progressUpdated);
    };
    const now = slot.now();
    if (now && 'presentation' in now) return route(now);
    // Until the presentation has loaded, what is not a segment (the MPD, playlists, keys)
    // goes to Shaka's own plugin at once.
    if (requestType !== NetworkingEngine.RequestType.SEGMENT) return http();
    if (now) return route(now);
    // The presentation still loads: the segment waits for it, at most its own timeout.
    let inner: ShakaOperation<ShakaResponse> | null = null;
    let aborted = false;
    let fail: (err: Error) => void = () => {};
    const promise = new Promise<ShakaResponse>((resolve, reject) => {
      fail = reject;
      void slot.within(timeoutOf(request.retryParameters)).then((state) => {
        if (aborted) return;
        inner = route(state);
        inner.promise.then(resolve, reject);
      });
    });
    return new AbortableOperation(promise, () => {
      if (inner) return inner.abort();
      aborted = true;
      fail(failure(uri, ShakaError.Code.OPERATION_ABORTED, requestType));
      return Promise.resolve();
    });
  };

  const { APPLICATION, PREFERRED, FALLBACK } = NetworkingEngine.PluginPriority;
  for (const scheme of SCHEMES) NetworkingEngine.registerScheme(scheme, plugin, APPLICATION, /* progressSupport */ true);
  let registered = true;
  return () => {
    if (!registered) return;
    registered = false;
    for (const scheme of SCHEMES) {
      NetworkingEngine.unregisterScheme(scheme);
      NetworkingEngine.registerScheme(scheme, HttpXHRPlugin.parse, FALLBACK, true);
      if (fetchSupported) NetworkingEngine.registerScheme(scheme, HttpFetchPlugin.parse, PREFERRED, true);
    }
  };
}
