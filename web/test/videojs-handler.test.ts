/**
 * The Video.js source handler (src/integrations/videojs.ts) against a fake Video.js Html5
 * tech (its source handler list, as Tech.withSourceHandlers keeps it) and a fake hls.js.
 */
import type { HlsConfig } from 'hls.js';
import { describe, expect, it } from 'vitest';
import { type HlsClass, type VideojsNamespace, type VideojsSourceHandler, registerVideojsHls } from '../src/integrations/videojs.js';
import type { Presentation } from '../src/presentation/presentation.js';

function fakeVideojs(): { videojs: VideojsNamespace; handlers: VideojsSourceHandler[] } {
  const vhs: VideojsSourceHandler = {
    canPlayType: () => 'maybe',
    canHandleSource: () => 'maybe',
    handleSource: () => ({ dispose: () => {} }),
  };
  const tech = {
    sourceHandlers: [vhs],
    registerSourceHandler(h: VideojsSourceHandler, index?: number) {
      this.sourceHandlers.splice(index ?? this.sourceHandlers.length, 0, h);
    },
  };
  return { videojs: { getTech: () => tech }, handlers: tech.sourceHandlers };
}

function fakeHls(supported = true): { Hls: HlsClass; made: { config: Partial<HlsConfig>; calls: string[] }[] } {
  const made: { config: Partial<HlsConfig>; calls: string[] }[] = [];
  class FakeHls {
    static isSupported(): boolean {
      return supported;
    }
    private readonly calls: string[] = [];
    constructor(config: Partial<HlsConfig> = {}) {
      made.push({ config, calls: this.calls });
    }
    attachMedia(el: unknown): void {
      this.calls.push(`attach ${(el as { id: string }).id}`);
    }
    loadSource(src: string): void {
      this.calls.push(`load ${src}`);
    }
    destroy(): void {
      this.calls.push('destroy');
    }
  }
  return { Hls: FakeHls as unknown as HlsClass, made };
}

/** The element the presentation was given last (`attachMedia`), null once taken back. */
let attached: unknown = null;
const presentation = {
  find: () => null,
  load: () => Promise.resolve({ aborted: true }),
  attachMedia: (m: unknown) => (attached = m),
  detachMedia: (m: unknown) => {
    if (attached === m) attached = null;
  },
} as unknown as Presentation;
const element = { id: 'video' } as unknown as Element;
const tech = { el: () => element };

describe('registerVideojsHls', () => {
  it('goes first for HLS sources, by type or by extension, and leaves the rest to the handlers behind it', () => {
    const { videojs, handlers } = fakeVideojs();
    const { Hls } = fakeHls();
    registerVideojsHls(videojs, Hls, presentation);
    expect(handlers).toHaveLength(2);
    const ours = handlers[0]!;
    expect(ours.canHandleSource({ src: '/v/master.m3u8', type: 'application/x-mpegURL' })).toBe('probably');
    expect(ours.canHandleSource({ src: '/v/master', type: 'application/vnd.apple.mpegurl' })).toBe('probably');
    expect(ours.canHandleSource({ src: '/v/master.m3u8?token=1' })).toBe('probably');
    expect(ours.canHandleSource({ src: '/v/manifest.mpd', type: 'application/dash+xml' })).toBe('');
    expect(ours.canHandleSource({ src: '/v/film.mp4', type: 'video/mp4' })).toBe('');
    expect(ours.canPlayType('application/x-mpegURL')).toBe('probably');
    expect(ours.canPlayType('video/mp4')).toBe('');
  });

  it('plays through hls.js with the presentation\'s fragment loader and the page\'s settings; dispose destroys it', () => {
    const { videojs, handlers } = fakeVideojs();
    const { Hls, made } = fakeHls();
    const seen: string[] = [];
    registerVideojsHls(videojs, Hls, presentation, { hlsConfig: { maxBufferLength: 8 }, onHls: (_h, s) => seen.push(s.src) });
    const played = handlers[0]!.handleSource({ src: '/v/master.m3u8', type: 'application/x-mpegURL' }, tech);
    expect(made).toHaveLength(1);
    expect(made[0]!.config.maxBufferLength).toBe(8);
    expect(typeof made[0]!.config.fLoader).toBe('function');
    expect(made[0]!.calls).toEqual(['attach video', 'load /v/master.m3u8']);
    expect(seen).toEqual(['/v/master.m3u8']);
    expect(attached, 'the presentation sees the tech\'s video element').toBe(element);
    played.dispose();
    expect(made[0]!.calls.at(-1)).toBe('destroy');
    expect(attached, 'and forgets it on dispose').toBeNull();
  });

  it('given the presentation\'s promise: hls.js starts at once, the element goes to the presentation once it loads, unless disposed', async () => {
    const { videojs, handlers } = fakeVideojs();
    const { Hls, made } = fakeHls();
    let resolve: (p: Presentation) => void = () => {};
    registerVideojsHls(videojs, Hls, new Promise<Presentation>((r) => (resolve = r)));
    attached = null;
    const played = handlers[0]!.handleSource({ src: '/v/master.m3u8', type: 'application/x-mpegURL' }, tech);
    const gone = handlers[0]!.handleSource({ src: '/v/other.m3u8', type: 'application/x-mpegURL' }, { el: () => ({ id: 'gone' }) as unknown as Element });
    gone.dispose();
    expect(made.map((m) => m.calls[1])).toEqual(['load /v/master.m3u8', 'load /v/other.m3u8']);
    expect(attached).toBeNull();
    resolve(presentation);
    await new Promise((done) => setTimeout(done, 0));
    expect(attached, 'the playing tech\'s element, not the disposed one\'s').toBe(element);
    played.dispose();
    expect(attached).toBeNull();
  });

  it('where hls.js cannot play (no MediaSource), HLS is left to the handlers behind it', () => {
    const { videojs, handlers } = fakeVideojs();
    registerVideojsHls(videojs, fakeHls(false).Hls, presentation);
    expect(handlers[0]!.canHandleSource({ src: '/v/master.m3u8', type: 'application/x-mpegURL' })).toBe('');
  });

  it('the function it returns takes the handler away; a videojs without an Html5 tech is refused', () => {
    const { videojs, handlers } = fakeVideojs();
    const unregister = registerVideojsHls(videojs, fakeHls().Hls, presentation);
    unregister();
    expect(handlers).toHaveLength(1);
    unregister();
    expect(handlers).toHaveLength(1);
    expect(() => registerVideojsHls({ getTech: () => undefined }, fakeHls().Hls, presentation)).toThrow(/no Html5 tech/);
  });
});
