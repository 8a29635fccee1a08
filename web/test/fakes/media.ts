/**
 * Fake MediaSource, SourceBuffer and video element (as hls.js's tests mock them), with
 * the object-URL registry that ties a MediaSource to the element whose `src` names it.
 * The SourceBuffer keeps a copy of every append and takes each one in a later task
 * (`updating` in between), as a browser does; tests may make the next appends throw.
 */
import { later } from './tasks.js';

type Ranges = [number, number][];

function timeRanges(ranges: Ranges): TimeRanges {
  return {
    length: ranges.length,
    start: (i: number) => {
      const r = ranges[i];
      if (!r) throw new DOMException('index out of range', 'IndexSizeError');
      return r[0];
    },
    end: (i: number) => {
      const r = ranges[i];
      if (!r) throw new DOMException('index out of range', 'IndexSizeError');
      return r[1];
    },
  };
}

export type SourceBufferOp =
  | { op: 'append'; bytes: Uint8Array }
  | { op: 'remove'; start: number; end: number }
  | { op: 'abort' };

export class FakeSourceBuffer extends EventTarget {
  updating = false;
  /** What `buffered` reports (the test sets it; appends do not decode anything). */
  ranges: Ranges = [];
  /** Every call, in order. */
  readonly ops: SourceBufferOp[] = [];
  /** What the next `appendBuffer` calls throw, one entry each (undefined: nothing). */
  readonly throwOnAppend: (Error | undefined)[] = [];
  /** Called with each append as it is taken. */
  onAppend: ((bytes: Uint8Array) => void) | null = null;
  /** Appends made to a ManagedMediaSource that was not streaming (a Player's mistake). */
  appendsNotStreaming = 0;

  constructor(
    readonly mediaSource: FakeMediaSource,
    readonly mimeType: string,
  ) {
    super();
  }

  get buffered(): TimeRanges {
    return timeRanges(this.ranges);
  }

  /** The bytes appended, in order. */
  get appends(): Uint8Array[] {
    return this.ops.flatMap((o) => (o.op === 'append' ? [o.bytes] : []));
  }

  appendBuffer(data: BufferSource): void {
    this.check();
    const error = this.throwOnAppend.shift();
    if (error) throw error;
    const view = ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
    const bytes = new Uint8Array(view);
    if ((this.mediaSource as { streaming?: boolean }).streaming === false) this.appendsNotStreaming += 1;
    this.ops.push({ op: 'append', bytes });
    this.onAppend?.(bytes);
    this.update();
  }

  remove(start: number, end: number): void {
    this.check();
    this.ops.push({ op: 'remove', start, end });
    this.ranges = this.ranges
      .flatMap(([a, b]): Ranges => [[a, Math.min(b, start)], [Math.max(a, end), b]])
      .filter(([a, b]) => b > a);
    this.update();
  }

  abort(): void {
    if (this.mediaSource.readyState !== 'open') throw new DOMException('MediaSource not open', 'InvalidStateError');
    this.ops.push({ op: 'abort' });
    if (this.updating) {
      this.updating = false;
      this.dispatchEvent(new Event('abort'));
      this.dispatchEvent(new Event('updateend'));
    }
  }

  private check(): void {
    if (this.updating) throw new DOMException('the SourceBuffer is updating', 'InvalidStateError');
    if (this.mediaSource.readyState === 'closed') throw new DOMException('MediaSource closed', 'InvalidStateError');
    if (this.mediaSource.readyState === 'ended') this.mediaSource.reopen();
  }

  private update(): void {
    this.updating = true;
    const op = this.ops.length;
    later(() => {
      if (!this.updating || this.ops.length !== op) return; // aborted
      this.updating = false;
      this.dispatchEvent(new Event('update'));
      this.dispatchEvent(new Event('updateend'));
    });
  }
}

const defaultSupports = (type: string): boolean => /^video\/(webm|mp4)\b/.test(type);

export class FakeMediaSource extends EventTarget {
  /** What `isTypeSupported` answers; tests replace it. */
  static supports: (type: string) => boolean = defaultSupports;
  static isTypeSupported(type: string): boolean {
    return FakeMediaSource.supports(type);
  }
  /** Every MediaSource made since the fakes were installed. */
  static readonly made: FakeMediaSource[] = [];
  /** Sees each SourceBuffer as it is created (to set up what it will throw). */
  static onSourceBuffer: ((sb: FakeSourceBuffer) => void) | null = null;

  constructor() {
    super();
    FakeMediaSource.made.push(this);
  }

  readyState: ReadyState = 'closed';
  duration = NaN;
  readonly sourceBuffers: FakeSourceBuffer[] = [];
  endOfStreamCalls = 0;

  addSourceBuffer(type: string): FakeSourceBuffer {
    if (!FakeMediaSource.isTypeSupported(type)) throw new DOMException(`${type} is not supported`, 'NotSupportedError');
    if (this.readyState !== 'open') throw new DOMException('MediaSource not open', 'InvalidStateError');
    const sb = new FakeSourceBuffer(this, type);
    this.sourceBuffers.push(sb);
    FakeMediaSource.onSourceBuffer?.(sb);
    return sb;
  }

  endOfStream(): void {
    if (this.readyState !== 'open' || this.sourceBuffers.some((sb) => sb.updating)) {
      throw new DOMException('cannot end the stream now', 'InvalidStateError');
    }
    this.endOfStreamCalls += 1;
    this.readyState = 'ended';
    this.dispatchEvent(new Event('sourceended'));
  }

  /** @internal The element loaded us (its `src` named our object URL). */
  open(): void {
    later(() => {
      this.readyState = 'open';
      this.dispatchEvent(new Event('sourceopen'));
    });
  }

  /** @internal An append after endOfStream opens the source again. */
  reopen(): void {
    this.readyState = 'open';
    this.dispatchEvent(new Event('sourceopen'));
  }

  /** @internal The element let go of us. */
  detach(): void {
    this.readyState = 'closed';
    this.dispatchEvent(new Event('sourceclose'));
  }
}

/** ManagedMediaSource (Safari 17+, iOS 17.1+): appends belong between startstreaming and endstreaming. */
export class FakeManagedMediaSource extends FakeMediaSource {
  streaming = false;

  /** The browser wants media. */
  startStreaming(): void {
    this.streaming = true;
    this.dispatchEvent(new Event('startstreaming'));
  }

  /** The browser has enough (or saves power). */
  endStreaming(): void {
    this.streaming = false;
    this.dispatchEvent(new Event('endstreaming'));
  }
}

/** The browser evicts `[start, end)` from `sb` on its own: a `bufferedchange` names it. */
export function browserEvicts(sb: FakeSourceBuffer, start: number, end: number): void {
  sb.ranges = sb.ranges
    .flatMap(([a, b]): Ranges => [[a, Math.min(b, start)], [Math.max(a, end), b]])
    .filter(([a, b]) => b > a);
  const event = Object.assign(new Event('bufferedchange'), { addedRanges: timeRanges([]), removedRanges: timeRanges([[start, end]]) });
  sb.dispatchEvent(event);
}

/**
 * An iPhone's media: ManagedMediaSource in place, and (unless `keepMediaSource`) no
 * MediaSource; call after {@link installMedia}. Returns the undo.
 */
export function installManagedMediaSource({ keepMediaSource = false }: { keepMediaSource?: boolean } = {}): () => void {
  const g = globalThis as Record<string, unknown>;
  const before = g.MediaSource;
  g.ManagedMediaSource = FakeManagedMediaSource;
  if (!keepMediaSource) delete g.MediaSource;
  return () => {
    delete g.ManagedMediaSource;
    g.MediaSource = before;
  };
}

/** Object URLs made while the fakes are installed. */
const objectUrls = new Map<string, FakeMediaSource>();
let urlCount = 0;

/** The members of HTMLVideoElement the Player and StallWatch use. */
export class FakeVideoElement extends EventTarget {
  currentTime = 0;
  duration = NaN;
  playbackRate = 1;
  paused = true;
  ended = false;
  seeking = false;
  error: { code: number; message: string } | null = null;
  /** What `buffered` reports. */
  ranges: Ranges = [];
  /** The MediaSource loaded through `src`, if any. */
  mediaSource: FakeMediaSource | null = null;
  loads = 0;
  private srcValue = '';

  get buffered(): TimeRanges {
    return timeRanges(this.ranges);
  }

  get src(): string {
    return this.srcValue;
  }

  set src(url: string) {
    this.srcValue = url;
    this.mediaSource?.detach();
    this.mediaSource = objectUrls.get(url) ?? null;
    this.mediaSource?.open();
  }

  removeAttribute(name: string): void {
    if (name === 'src') this.srcValue = '';
  }

  load(): void {
    this.loads += 1;
    if (this.srcValue === '') {
      this.mediaSource?.detach();
      this.mediaSource = null;
    }
  }

  /** A seek by the user: `currentTime` moves and `seeking` fires. */
  seekTo(t: number): void {
    this.currentTime = t;
    this.seeking = true;
    this.dispatchEvent(new Event('seeking'));
  }

  /** The element failed (MEDIA_ERR_DECODE by default). */
  failWith(message: string, code = 3): void {
    this.error = { code, message };
    this.dispatchEvent(new Event('error'));
  }
}

/**
 * Puts the fakes in place of MediaSource, HTMLVideoElement and URL's object URLs;
 * returns the undo.
 */
export function installMedia(): () => void {
  const g = globalThis as Record<string, unknown>;
  const saved = ['MediaSource', 'HTMLVideoElement'].map((name) => [name, Object.prototype.hasOwnProperty.call(g, name), g[name]] as const);
  const { createObjectURL, revokeObjectURL } = URL;
  g.MediaSource = FakeMediaSource;
  g.HTMLVideoElement = FakeVideoElement;
  URL.createObjectURL = (obj: Blob | MediaSource): string => {
    if (!(obj instanceof FakeMediaSource)) throw new TypeError('only fake MediaSources here');
    const url = `blob:fake/${++urlCount}`;
    objectUrls.set(url, obj);
    return url;
  };
  URL.revokeObjectURL = (url: string): void => {
    objectUrls.delete(url);
  };
  return () => {
    for (const [name, had, value] of saved) {
      if (had) g[name] = value;
      else delete g[name];
    }
    URL.createObjectURL = createObjectURL;
    URL.revokeObjectURL = revokeObjectURL;
    objectUrls.clear();
    FakeMediaSource.made.length = 0;
    FakeMediaSource.onSourceBuffer = null;
    FakeMediaSource.supports = defaultSupports;
  };
}

/** Object URLs not revoked yet. */
export function liveObjectUrls(): number {
  return objectUrls.size;
}
