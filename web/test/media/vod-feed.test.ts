/**
 * VodFeed over fakes: a file whose verified chunks the test chooses (`FakeFile`), a video
 * element whose buffered ranges and playhead the test sets, and a MediaSink that records
 * appends. What is appended and where the engine is pointed, for playing on, seeking and
 * media the browser let go of.
 */
import { describe, expect, it } from 'vitest';
import type { VodChunks } from '../../src/media/vod-feed.js';
import { VodFeed } from '../../src/media/vod-feed.js';
import { FakeVideoElement } from '../fakes/media.js';
import { FakeMediaSink } from '../fakes/media-sink.js';
import { syntheticMp4 } from '../fakes/mp4.js';
import { concat } from './helpers.js';

const CHUNK = 1024;

/** A file as the engine holds it: the chunks the test verified, and where it was pointed. */
class FakeFile implements VodChunks {
  readonly verified = new Set<number>();
  readonly playheads: number[] = [];
  readonly readAheads: [number, number][] = [];
  readonly waits: ({ start: number; end: number } | null)[] = [];
  /** The engine's window in bytes from its playhead (`maxMemoryBytes`); null: the whole file. */
  window: number | null = null;
  /** The window is from the playhead before the last (an engine in a Worker reports a moment late). */
  lagging = false;
  constructor(readonly file: Uint8Array) {}
  /** The engine let go of bytes `from..to` (their chunks). */
  letGo(from: number, to: number): void {
    for (let c = Math.floor(from / CHUNK); c * CHUNK < to; c++) this.verified.delete(c);
  }
  /** Bytes `from..to` (their chunks) came and were verified. */
  verify(from: number, to: number): void {
    for (let c = Math.floor(from / CHUNK); c * CHUNK < Math.min(to, this.file.length); c++) this.verified.add(c);
  }
  verifiedEnd(offset: number): number {
    let c = Math.floor(offset / CHUNK);
    while (this.verified.has(c)) c++;
    return Math.max(offset, Math.min(this.file.length, c * CHUNK));
  }
  wantedEnd(): number {
    const from = (this.playheads.at(this.lagging ? -2 : -1) ?? 0) * CHUNK;
    return this.window === null ? this.file.length : Math.min(this.file.length, from + this.window);
  }
  read(start: number, end: number): Uint8Array {
    if (this.verifiedEnd(start) < end) throw new Error(`bytes ${start}..${end} are not all verified`);
    return this.file.slice(start, end);
  }
  setPlayhead(chunk: number): void {
    this.playheads.push(chunk);
  }
  setReadAhead(chunks: number, fromHttp: number): void {
    this.readAheads.push([chunks, fromHttp]);
  }
  setWaitingFor(chunks: { start: number; end: number } | null): void {
    this.waits.push(chunks);
  }
}

function setup(
  media: ReturnType<typeof syntheticMp4>,
  secondsPlayed: () => number = () => 0,
  readAheadBytes = 2 << 20,
): { file: FakeFile; video: FakeVideoElement; sink: FakeMediaSink; feed: VodFeed } {
  const file = new FakeFile(media.file);
  const video = new FakeVideoElement();
  const sink = new FakeMediaSink();
  const feed = new VodFeed(file, video, sink, {
    content: { length: media.file.length, chunkSize: CHUNK },
    readAheadBytes,
    readAheadSeconds: 30,
    httpReadAheadSeconds: 0,
    secondsPlayed,
  });
  return { file, video, sink, feed };
}

/** Feeds until nothing more is appended. */
function feedAll(feed: VodFeed, sink: FakeMediaSink): void {
  for (let before = -1; before !== sink.appends.length; ) {
    before = sink.appends.length;
    feed.feed();
  }
}

/** Feeds until something is appended (a seek's search takes a feed per probe), at most 50 times. */
function feedUntilAppended(feed: VodFeed, sink: FakeMediaSink): void {
  const before = sink.appends.length;
  for (let i = 0; i < 50 && sink.appends.length === before; i++) feed.feed();
}

describe('VodFeed', () => {
  it('appends the init segment alone, then whole fragments as they are verified, and ends the stream after the last', async () => {
    const media = syntheticMp4(10, 4000);
    const { file, sink, feed } = setup(media);
    // Before the bit rate is known, the read-ahead is bounded in bytes.
    expect(file.readAheads).toEqual([[(2 << 20) / CHUNK, (1 << 20) / CHUNK]]);
    feed.feed();
    expect(sink.started).toEqual([]);
    const third = media.fragments[2]!.offset;
    file.verify(0, third + 100);
    feedAll(feed, sink);
    expect(sink.started.map((i) => i.kind)).toEqual(['mp4']);
    expect(sink.durations).toEqual([10]);
    expect(sink.appends).toEqual([media.file.subarray(0, media.initLength), media.file.subarray(media.initLength, third)]);
    file.verify(third, media.file.length);
    feedAll(feed, sink);
    expect(concat(...sink.appends)).toEqual(media.file);
    expect(sink.endOfStreamCalls).toBe(0);
    // MediaSource refuses while a SourceBuffer updates: the next feed tries again.
    sink.endOfStreamTakes = false;
    await sink.drain();
    expect(sink.endOfStreamCalls).toBe(1);
    sink.endOfStreamTakes = true;
    feed.feed();
    await sink.drain();
    expect(sink.endOfStreamCalls).toBe(2);
    feed.feed();
    await sink.drain();
    expect(sink.endOfStreamCalls).toBe(2);
  });

  it('the read-ahead opens by 2 s per second played from 5 s, to readAheadSeconds; after a seek, with the buffer', () => {
    // 60 s at 300 kB/s: each second is 300 kB, above the 1 MiB floor from 4 s on.
    const media = syntheticMp4(60, 300_000);
    let played = 0;
    const { file, video, sink, feed } = setup(media, () => played);
    file.verify(0, media.fragments[1]!.offset);
    feedAll(feed, sink);
    const rate = (media.file.length - media.initLength) / 60;
    const seconds = (): number => Math.round((file.readAheads.at(-1)![0] * CHUNK) / rate);
    const at = (t: number, buffered: number, p: number): number => {
      played = p;
      video.currentTime = t;
      video.ranges = [[0, t + buffered]];
      feed.feed();
      return seconds();
    };
    // 14 s buffered, nothing played: 5 s, not twice the buffer.
    expect(at(0, 14, 0)).toBe(5);
    expect(at(3, 14, 3)).toBe(11);
    expect(at(8, 20, 8)).toBe(21);
    expect(at(20, 25, 20)).toBe(30);
    // A seek far ahead: 2 s buffered there, the window opens again with the buffer.
    video.currentTime = 45;
    video.ranges = [[0, 30], [45, 47]];
    feed.feed();
    expect(seconds()).toBe(5);
    video.ranges = [[0, 30], [45, 52]];
    feed.feed();
    expect(seconds()).toBe(14);
  });

  it('the window starts where playback is in the file, and where appends stopped while playback starves', () => {
    // A dense opening: 20 s of 300 kB, then 40 s of 100 kB. In proportion to the duration,
    // 15 s would be at 2.5 MB; it is at 4.5 MB.
    const media = syntheticMp4(60, (s) => (s < 20 ? 300_000 : 100_000));
    const { file, video, sink, feed } = setup(media);
    const twentieth = media.fragments[20]!.offset;
    file.verify(0, twentieth + 50_000);
    video.currentTime = 0;
    video.ranges = [[0, 20]];
    feedAll(feed, sink);
    expect(sink.appends.reduce((n, a) => n + a.length, 0)).toBe(twentieth);
    const playhead = (): number => file.playheads.at(-1)! * CHUNK;
    // 5 s buffered: at 15 s, where the fragment of 15 s starts (the appends said where).
    video.currentTime = 15;
    feed.onTimeUpdate();
    expect(playhead()).toBe(Math.floor(media.fragments[15]!.offset / CHUNK) * CHUNK);
    video.currentTime = 15.5;
    feed.onTimeUpdate();
    expect(playhead()).toBe(Math.floor((media.fragments[15]!.offset + 150_000) / CHUNK) * CHUNK);
    expect(file.waits.at(-1)).toBeNull();
    // Half a second left: the window starts at the append end, and waits there.
    video.currentTime = 19.5;
    feed.onTimeUpdate();
    expect(playhead()).toBe(Math.floor(twentieth / CHUNK) * CHUNK);
    expect(file.waits.at(-1)?.start).toBe(Math.ceil((twentieth + 50_000) / CHUNK));
    // Fed again, 3 s ahead: the window does not go back over what was appended (the
    // engine would fetch again what it let go of there).
    video.ranges = [[0, 22.5]];
    feed.onTimeUpdate();
    expect(file.waits.at(-1)).toBeNull();
    expect(playhead()).toBe(Math.floor(twentieth / CHUNK) * CHUNK);
  });

  it('a fragment larger than the engine\'s window: the page keeps its start while the engine fetches the rest', () => {
    // A first fragment of 300 kB in a window of 200 kB (a small maxMemoryBytes).
    const media = syntheticMp4(10, (s) => (s === 0 ? 300_000 : 50_000));
    const { file, sink, feed } = setup(media);
    file.window = 200_000;
    const [first, second] = [media.fragments[0]!.offset, media.fragments[1]!.offset];
    file.verify(0, first);
    feedAll(feed, sink);
    // The engine fetched to its window's end; nothing whole yet.
    const windowEnd = file.wantedEnd();
    expect(windowEnd).toBeLessThan(second);
    file.verify(first, windowEnd);
    feedAll(feed, sink);
    expect(sink.appends).toHaveLength(1);
    // The engine fetches on from there, and lets go of what is now behind its playhead.
    expect(file.playheads.at(-1)! * CHUNK).toBeGreaterThanOrEqual(windowEnd - CHUNK);
    file.letGo(first, file.playheads.at(-1)! * CHUNK);
    file.verify(file.playheads.at(-1)! * CHUNK, second + 1000);
    feedAll(feed, sink);
    expect(sink.appends).toHaveLength(2);
    expect(sink.appends[1]).toEqual(media.file.subarray(first, second));
  });

  it('a fragment larger than half the read-ahead bytes: the engine fetches on from what came, copied once', () => {
    // A first fragment of 300 kB; readAheadBytes 200 kB; no memory bound.
    const media = syntheticMp4(10, (s) => (s === 0 ? 300_000 : 20_000));
    const { file, sink, feed } = setup(media, () => 0, 200_000);
    const [first, second] = [media.fragments[0]!.offset, media.fragments[1]!.offset];
    file.verify(0, first + 120_000);
    feedAll(feed, sink);
    const moved = file.playheads.at(-1)!;
    expect(moved * CHUNK).toBeGreaterThanOrEqual(first + 120_000 - CHUNK);
    // More comes, a little at a time: the window stays where it went (the page's copy too).
    for (let at = first + 120_000; at < second; at += 10_000) {
      file.verify(at, at + 10_000);
      feedAll(feed, sink);
      if (sink.appends.length === 1) expect(file.playheads.at(-1)).toBe(moved);
    }
    file.verify(second, second + 1000);
    feedAll(feed, sink);
    expect(sink.appends[1]).toEqual(media.file.subarray(first, second));
  });

  it('a seek outside the buffer points the engine back from the estimate and appends on from the fragment there', () => {
    const media = syntheticMp4(60, 100_000);
    const { file, video, sink, feed } = setup(media);
    file.verify(0, media.file.length);
    feed.feed();
    feed.feed();
    const appended = sink.appends.length;
    video.ranges = [[0, 10]];
    // Within the buffer: nothing to do.
    video.seekTo(5);
    feed.onSeeking();
    expect(sink.resets).toBe(0);
    const playheads = file.playheads.length;
    video.seekTo(30);
    feed.onSeeking();
    // Half the duration is half the media's bytes; the probe starts 512 KiB before, on a chunk.
    const estimate = media.initLength + Math.floor(0.5 * (media.file.length - media.initLength));
    const probeStart = Math.floor((estimate - (512 << 10)) / CHUNK) * CHUNK;
    expect(file.playheads.slice(playheads)).toEqual([probeStart / CHUNK]);
    feed.feed();
    expect(sink.resets).toBe(1);
    const from = media.fragments.find((f) => f.offset >= probeStart)!;
    expect(from.time).toBeLessThanOrEqual(30);
    const next = sink.appends.slice(appended);
    expect(next).toHaveLength(1);
    expect(next[0]!.subarray(0, 1000)).toEqual(media.file.subarray(from.offset, from.offset + 1000));
  });

  it('a seek where the bit rate departs from the average: probes from the estimate, and appends from the fragment just before the time', () => {
    // A still first minute (40 kB/s) and a busy second one (200 kB/s): the estimate in
    // proportion to the duration lands seconds off in either half.
    const media = syntheticMp4(120, (s) => (s < 60 ? 40_000 : 200_000));
    const { file, video, sink, feed } = setup(media);
    file.verify(0, media.file.length);
    feed.feed();
    feed.feed();
    for (const target of [100.5, 40.5, 3.5]) {
      const appended = sink.appends.length;
      const playheads = file.playheads.length;
      video.ranges = [];
      video.seekTo(target);
      feed.onSeeking();
      feedUntilAppended(feed, sink);
      const next = sink.appends[appended]!;
      const from = media.fragments.find((f) => media.file.subarray(f.offset, f.offset + 1000).every((b, i) => b === next[i]))!;
      expect(from.time, `seek to ${target}`).toBeLessThanOrEqual(target);
      expect(target - from.time, `seek to ${target}`).toBeLessThanOrEqual(8);
      // The engine was pointed at each probe, then at the fragment appended from, then on
      // with the appends.
      const pointed = file.playheads.slice(playheads);
      const at = pointed.lastIndexOf(Math.floor(from.offset / CHUNK));
      expect(at, `seek to ${target}: pointed at chunks ${pointed.join(', ')}`).toBeGreaterThan(0);
      expect(at, `seek to ${target}: pointed at chunks ${pointed.join(', ')}`).toBeLessThanOrEqual(7);
    }
  });

  it('an engine whose window is still the one from before the seek is waited for, not searched past', () => {
    const media = syntheticMp4(60, 100_000);
    const { file, video, sink, feed } = setup(media);
    // Playing the start, under a 1 MiB window.
    file.window = 1 << 20;
    file.verify(0, 1 << 20);
    feedAll(feed, sink);
    const appended = sink.appends.length;
    // A seek far ahead, to chunks the engine holds already; its window as reported is
    // still the one from before.
    file.verify(0, media.file.length);
    file.lagging = true;
    video.ranges = [[0, 10]];
    video.seekTo(45);
    feed.onSeeking();
    expect(file.wantedEnd()).toBeLessThan(file.playheads.at(-1)! * CHUNK);
    const asked = sink.feedsAsked;
    const pointed = file.playheads.length;
    feed.feed();
    feed.feed();
    // Nothing is looked at (the engine is not pointed elsewhere), and the feed asks to be
    // called again.
    expect(file.playheads).toHaveLength(pointed);
    expect(sink.appends).toHaveLength(appended);
    expect(sink.resets).toBe(0);
    expect(sink.feedsAsked).toBeGreaterThan(asked);
    file.lagging = false;
    feedUntilAppended(feed, sink);
    const next = sink.appends[appended]!;
    const from = media.fragments.find((f) => media.file.subarray(f.offset, f.offset + 1000).every((b, i) => b === next[i]))!;
    expect(from.time).toBeLessThanOrEqual(45);
    expect(from.time).toBeGreaterThanOrEqual(37);
  });

  it('media the browser removed ahead of the playhead is appended again from the fragment there; behind it, nothing', () => {
    const media = syntheticMp4(60, 100_000);
    const { file, video, sink, feed } = setup(media);
    file.verify(0, media.file.length);
    feed.feed();
    feed.feed();
    video.currentTime = 5;
    expect(feed.onBrowserEvicted([[0, 4]])).toBe(false);
    expect(sink.resets).toBe(0);
    expect(feed.onBrowserEvicted([[20, 40]])).toBe(true);
    expect(sink.resets).toBe(1);
    const appended = sink.appends.length;
    feed.feed();
    const again = sink.appends[appended]!;
    const from = media.fragments.find((f) => media.file.subarray(f.offset, f.offset + 1000).every((b, i) => b === again[i]));
    expect(from?.time).toBeLessThanOrEqual(20);
    expect(from?.time).toBeGreaterThan(10);
  });
});
