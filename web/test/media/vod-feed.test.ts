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
  constructor(readonly file: Uint8Array) {}
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
    return this.file.length;
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
  setWaitingFor(): void {}
}

function setup(
  media: ReturnType<typeof syntheticMp4>,
  secondsPlayed: () => number = () => 0,
): { file: FakeFile; video: FakeVideoElement; sink: FakeMediaSink; feed: VodFeed } {
  const file = new FakeFile(media.file);
  const video = new FakeVideoElement();
  const sink = new FakeMediaSink();
  const feed = new VodFeed(file, video, sink, {
    content: { length: media.file.length, chunkSize: CHUNK },
    readAheadBytes: 2 << 20,
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

  it('the read-ahead opens by 2 s per second played from 10 s, to readAheadSeconds; after a seek, with the buffer', () => {
    // 60 s at 200 kB/s: each second is 200 kB, above the 1 MiB floor from 6 s on.
    const media = syntheticMp4(60, 200_000);
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
    // 14 s buffered, nothing played: 10 s, not twice the buffer.
    expect(at(0, 14, 0)).toBe(10);
    expect(at(3, 14, 3)).toBe(16);
    expect(at(8, 20, 8)).toBe(26);
    expect(at(20, 25, 20)).toBe(30);
    // A seek far ahead: 2 s buffered there, the window opens again with the buffer.
    video.currentTime = 45;
    video.ranges = [[0, 30], [45, 47]];
    feed.feed();
    expect(seconds()).toBe(10);
    video.ranges = [[0, 30], [45, 52]];
    feed.feed();
    expect(seconds()).toBe(14);
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
