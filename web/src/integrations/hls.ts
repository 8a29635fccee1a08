/**
 * hls.js over PPSPP: a fragment loader (`fLoader`) that takes each media segment and
 * initialisation segment of the presentation from its rendition's swarm, verified, and
 * leaves everything else (playlists, keys, segments the manifest does not name) to
 * hls.js's own loader. hls.js keeps choosing renditions as it does (its ABR, its buffer);
 * the load times it reads are at least what the network would take (`reportedMs`), so
 * segments read ahead from peers do not push its ABR beyond what the network delivers.
 * Give the presentation the video element too (`attachMedia`): segments hls.js asks for
 * far ahead of playback may then wait for peers still connecting.
 *
 * The loader takes the presentation or `Presentation.load`'s promise. Given the promise,
 * hls.js reads its playlists while the manifest and the engine load, and a segment it
 * asks for meanwhile waits for them; if the presentation fails to load, its segments fail
 * as network errors (nothing unverified reaches hls.js), as they would had the page
 * awaited it: the page hears why from its promise.
 *
 * ```ts
 * import Hls from 'hls.js';
 * import { Presentation } from 'ppspp-web';
 * import { hlsFragmentLoader } from 'ppspp-web/hls';
 * const loading = Presentation.load('/video/master.ppspp.json', { signal: 'wss://signal.example/' });
 * const hls = new Hls({ fLoader: hlsFragmentLoader(loading) });
 * hls.loadSource('/video/master.m3u8');
 * hls.attachMedia(video);
 * (await loading).attachMedia(video);
 * ```
 */
import type { FragmentLoaderContext, HlsConfig, Loader, LoaderCallbacks, LoaderConfiguration, LoaderContext, LoaderStats } from 'hls.js';
import { messageOf } from '../errors.js';
import { exactBuffer } from './exact-buffer.js';
import { type PresentationSource, PresentationSlot, type SlotState } from './presentation-slot.js';

export type { PresentationSource } from './presentation-slot.js';

function freshStats(): LoaderStats {
  return {
    aborted: false,
    loaded: 0,
    retry: 0,
    total: 0,
    chunkCount: 0,
    bwEstimate: 0,
    loading: { start: 0, first: 0, end: 0 },
    parsing: { start: 0, end: 0 },
    buffering: { start: 0, first: 0, end: 0 },
  };
}

/** How long a load may take: hls.js's load policy, else its older `timeout`. */
function timeoutOf(config: LoaderConfiguration): number {
  const policy = config.loadPolicy?.maxLoadTimeMs;
  if (typeof policy === 'number' && Number.isFinite(policy) && policy > 0) return policy;
  return Number.isFinite(config.timeout) && config.timeout > 0 ? config.timeout : 20_000;
}

/**
 * The `fLoader` class for hls.js's config that loads the presentation's segments over
 * PPSPP; `source` is the presentation or the promise of one.
 */
export function hlsFragmentLoader(source: PresentationSource): new (config: HlsConfig) => Loader<FragmentLoaderContext> {
  return fragmentLoaderFor(new PresentationSlot(source));
}

/** {@link hlsFragmentLoader} for a slot the caller shares (the Video.js handler). */
export function fragmentLoaderFor(slot: PresentationSlot): new (config: HlsConfig) => Loader<FragmentLoaderContext> {
  return class PpsppFragmentLoader implements Loader<FragmentLoaderContext> {
    context: FragmentLoaderContext | null = null;
    stats: LoaderStats = freshStats();
    private readonly hlsConfig: HlsConfig;
    /** hls.js's own loader, for what the manifest does not hold. */
    private fallback: Loader<LoaderContext> | null = null;
    private controller: AbortController | null = null;
    private callbacks: LoaderCallbacks<FragmentLoaderContext> | null = null;
    /** Set while the load waits for the presentation to load. */
    private waiting: object | null = null;

    constructor(config: HlsConfig) {
      this.hlsConfig = config;
    }

    load(context: FragmentLoaderContext, config: LoaderConfiguration, callbacks: LoaderCallbacks<FragmentLoaderContext>): void {
      this.context = context;
      this.callbacks = callbacks;
      const now = slot.now();
      if (now) {
        this.route(now, context, config, callbacks);
        return;
      }
      // hls.js's ABR reads a load's start while it is under way, as its own loaders set it.
      this.stats.loading.start = performance.now();
      const waiting = (this.waiting = {});
      void slot.within(timeoutOf(config)).then((state) => {
        if (this.waiting !== waiting) return;
        this.waiting = null;
        this.route(state, context, config, callbacks);
      });
    }

    /**
     * Loads through the presentation what it holds and the rest through hls.js's own
     * loader; fails the load if the presentation did not load (in time).
     */
    private route(
      state: SlotState,
      context: FragmentLoaderContext,
      config: LoaderConfiguration,
      callbacks: LoaderCallbacks<FragmentLoaderContext>,
    ): void {
      // hls.js holds on to `stats` (it took the reference before calling load): fill it in,
      // never replace it.
      const stats = this.stats;
      if ('late' in state) {
        callbacks.onTimeout(stats, context, null);
        return;
      }
      if ('failed' in state) {
        callbacks.onError({ code: 0, text: `ppspp: the presentation did not load: ${messageOf(state.failed)}` }, context, null, stats);
        return;
      }
      const presentation = state.presentation;
      const ref = presentation.find(context.url, context.rangeStart, context.rangeEnd);
      if (ref === null) {
        const Default = this.hlsConfig.loader;
        this.fallback = new Default(this.hlsConfig);
        this.fallback.stats = stats;
        this.fallback.load(context, config, callbacks as unknown as LoaderCallbacks<LoaderContext>);
        return;
      }
      stats.loading.start = performance.now();
      const controller = (this.controller = new AbortController());
      void presentation
        .load(ref, {
          signal: controller.signal,
          timeoutMs: timeoutOf(config),
          onProgress: (loaded) => {
            if (loaded > 0 && stats.loading.first === 0) stats.loading.first = performance.now();
            stats.loaded = loaded;
          },
        })
        .then((outcome) => {
          if (this.controller !== controller || controller.signal.aborted) return;
          this.controller = null;
          const now = performance.now();
          if ('bytes' in outcome) {
            // hls.js's ABR takes end - start as the download's time: a segment peers had
            // delivered ahead of time is reported at the network's rate, not as instant,
            // and one that waited for peers on purpose without its wait.
            stats.loading.start = now - outcome.reportedMs;
            stats.loading.first = stats.loading.start;
            stats.loading.end = now;
            stats.loaded = stats.total = outcome.bytes.length;
            stats.chunkCount = 1;
            callbacks.onSuccess({ url: context.url, data: exactBuffer(outcome.bytes) }, stats, context, null);
          } else if ('timedOut' in outcome) {
            callbacks.onTimeout(stats, context, null);
          } else if ('error' in outcome) {
            callbacks.onError({ code: 0, text: `ppspp: ${outcome.error.message}` }, context, null, stats);
          }
        });
    }

    abort(): void {
      if (this.waiting) {
        this.waiting = null;
        this.stats.aborted = true;
        if (this.context) this.callbacks?.onAbort?.(this.stats, this.context, null);
        return;
      }
      if (this.fallback) {
        this.fallback.abort();
        return;
      }
      const controller = this.controller;
      if (!controller) return;
      this.controller = null;
      controller.abort();
      this.stats.aborted = true;
      if (this.context) this.callbacks?.onAbort?.(this.stats, this.context, null);
    }

    destroy(): void {
      this.waiting = null;
      this.fallback?.destroy();
      this.fallback = null;
      if (this.controller) {
        this.controller.abort();
        this.controller = null;
      }
      this.callbacks = null;
      this.context = null;
    }
  };
}
