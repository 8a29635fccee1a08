/**
 * Video.js over PPSPP, through hls.js: a source handler for Video.js's Html5 tech that
 * plays HLS sources with hls.js and the presentation's fragment loader (`ppspp-web/hls`),
 * so every segment comes from its rendition's swarm, verified, and hls.js keeps choosing
 * renditions with its own ABR. Video.js keeps its player, skin and plugins; only the HLS
 * engine underneath changes.
 *
 * Why hls.js and not Video.js's own VHS: VHS's request hooks (`xhr.onRequest`,
 * `beforeRequest`) can change a request's URL and headers but not answer it, so segments
 * could not come from peers without replacing Video.js's XHR for every request of the
 * page; hls.js's fragment loader is a supported extension point, the one the hls.js
 * integration already uses (PeerTube plays HLS in Video.js through hls.js for the same
 * reason). DASH in Video.js goes through VHS and stays plain HTTP: play DASH with Shaka
 * Player (`ppspp-web/shaka`).
 *
 * ```ts
 * import videojs from 'video.js';
 * import Hls from 'hls.js';
 * import { Presentation } from 'ppspp-web';
 * import { registerVideojsHls } from 'ppspp-web/videojs';
 * const loading = Presentation.load('/video/master.ppspp.json', { signal: 'wss://signal.example/' });
 * registerVideojsHls(videojs, Hls, loading);
 * const player = videojs('video');
 * player.src({ src: '/video/master.m3u8', type: 'application/x-mpegURL' });
 * ```
 *
 * It takes the presentation or, as here, `Presentation.load`'s promise: hls.js starts at
 * once and reads its playlists while the presentation loads (see `ppspp-web/hls`).
 */
import type Hls from 'hls.js';
import type { HlsConfig } from 'hls.js';
import { fragmentLoaderFor } from './hls.js';
import { type PresentationSource, PresentationSlot } from './presentation-slot.js';

/** A source as Video.js hands it to source handlers. */
export interface VideojsSource {
  src: string;
  type?: string;
}

/** The tech a source handler plays into: its media element. */
export interface VideojsTech {
  el(): Element;
}

/** A source handler of Video.js's Html5 tech. */
export interface VideojsSourceHandler {
  canPlayType(type: string): '' | 'maybe' | 'probably';
  canHandleSource(source: VideojsSource, options?: unknown): '' | 'maybe' | 'probably';
  handleSource(source: VideojsSource, tech: VideojsTech, options?: unknown): { dispose(): void };
}

/** What this uses of the page's `videojs`: its Html5 tech's source handlers. */
export interface VideojsNamespace {
  getTech(name: 'Html5'): unknown;
}

interface HandlerList {
  registerSourceHandler(handler: VideojsSourceHandler, index?: number): void;
  sourceHandlers?: VideojsSourceHandler[];
}

/** What this uses of the page's hls.js class. */
export interface HlsClass {
  new (config?: Partial<HlsConfig>): Hls;
  isSupported(): boolean;
}

export interface VideojsHlsOptions {
  /** hls.js settings for every player (the fragment loader is this package's). */
  hlsConfig?: Partial<HlsConfig>;
  /** Called with each hls.js instance made, before it loads: to listen to its events. */
  onHls?: (hls: Hls, source: VideojsSource) => void;
}

const HLS_TYPES = new Set(['application/x-mpegurl', 'application/vnd.apple.mpegurl', 'audio/mpegurl', 'audio/x-mpegurl']);

function isHls(source: VideojsSource): boolean {
  if (source.type) return HLS_TYPES.has(source.type.toLowerCase());
  return /\.m3u8(?:[?#]|$)/i.test(source.src);
}

/**
 * Puts a source handler first on Video.js's Html5 tech that plays HLS sources through
 * hls.js (the page's `HlsClass`) with the presentation's segments over PPSPP
 * (`presentation`: the presentation or the promise of one). Other sources (and HLS where
 * hls.js cannot play, e.g. no MediaSource) go to the handlers behind it (VHS, native
 * playback). Returns the function that takes the handler away again (for players made
 * afterwards).
 */
export function registerVideojsHls(
  videojs: VideojsNamespace,
  HlsClass: HlsClass,
  presentation: PresentationSource,
  options: VideojsHlsOptions = {},
): () => void {
  const tech = videojs.getTech('Html5') as HandlerList | undefined;
  if (!tech || typeof tech.registerSourceHandler !== 'function') {
    throw new TypeError('registerVideojsHls: this videojs has no Html5 tech with source handlers');
  }
  const slot = new PresentationSlot(presentation);
  const fLoader = fragmentLoaderFor(slot);
  const handler: VideojsSourceHandler = {
    canPlayType: (type) => (HLS_TYPES.has(type.toLowerCase()) && HlsClass.isSupported() ? 'probably' : ''),
    canHandleSource: (source) => (isHls(source) && HlsClass.isSupported() ? 'probably' : ''),
    handleSource: (source, t) => {
      const hls = new HlsClass({ ...options.hlsConfig, fLoader });
      options.onHls?.(hls, source);
      const media = t.el() as HTMLMediaElement;
      hls.attachMedia(media);
      // Segments asked for far ahead of playback may wait for peers still connecting.
      let disposed = false;
      slot.whenLoaded((p) => disposed || p.attachMedia(media));
      hls.loadSource(source.src);
      return {
        dispose: () => {
          disposed = true;
          hls.destroy();
          slot.loaded()?.detachMedia(media);
        },
      };
    },
  };
  tech.registerSourceHandler(handler, 0);
  return () => {
    const list = tech.sourceHandlers;
    const i = list ? list.indexOf(handler) : -1;
    if (i >= 0) list!.splice(i, 1);
  };
}
