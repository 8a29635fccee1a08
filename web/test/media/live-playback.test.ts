/**
 * LivePlayback over fakes: a live stream's chunks (`FakeLiveStream`), a video element
 * whose buffered ranges and playhead the test sets, a MediaSink that records appends, and
 * clocks the test moves. The join, the latency control and the stream's end, as the Player
 * drives them.
 */
import { describe, expect, it } from 'vitest';
import { PpsppError } from '../../src/errors.js';
import { CATCH_UP_RATE } from '../../src/media/live-latency.js';
import { type LiveClock, LivePlayback, type LivePlaybackEvents, type LivePlaybackOptions } from '../../src/media/live-playback.js';
import { FakeLiveStream, cutIntoChunks } from '../fakes/live-stream.js';
import { FakeVideoElement } from '../fakes/media.js';
import { FakeMediaSink } from '../fakes/media-sink.js';
import { cluster, concat, info, webm } from './helpers.js';

const file = webm({ unknownSize: true }).file;
const initInfo = info(file);
const initBytes = file.slice(0, initInfo.initLength);
/** Twelve Clusters, a second each; cut into 40-byte chunks, three chunks each. */
const clusters = Array.from({ length: 12 }, (_, i) => cluster(i * 1000, new Array<number>(90).fill(i)));
const CHUNKS_PER_CLUSTER = 3;

class FakeClock implements LiveClock {
  ms = 0;
  unixMs = 1_700_000_000_000;
  now(): number {
    return this.ms;
  }
  unixNow(): number {
    return this.unixMs;
  }
}

interface Setup {
  stream: FakeLiveStream;
  video: FakeVideoElement;
  sink: FakeMediaSink;
  clock: FakeClock;
  playback: LivePlayback;
  events: { [K in keyof LivePlaybackEvents]: LivePlaybackEvents[K][] };
}

function setup(options: Partial<LivePlaybackOptions> = {}, segments = clusters): Setup {
  const stream = new FakeLiveStream(cutIntoChunks(segments, 40));
  const video = new FakeVideoElement();
  const sink = new FakeMediaSink();
  const clock = new FakeClock();
  const playback = new LivePlayback(stream, video, sink, {
    uriInit: initBytes,
    latencySeconds: 3,
    jumpSeconds: 4,
    endAfterMs: 10_000,
    clock,
    ...options,
  });
  const events = { 'live-edge': [], behind: [], 'caught-up': [], 'live-joined': [], 'live-ended': [] } as Setup['events'];
  for (const type of Object.keys(events) as (keyof LivePlaybackEvents)[]) {
    playback.on(type, (payload) => (events[type] as unknown[]).push(payload));
  }
  return { stream, video, sink, clock, playback, events };
}

/** The edge at the stream's end, its last two signing times two seconds apart: 3 chunks a second. */
function edgesAtThreeChunksASecond({ stream, playback, clock }: Setup): void {
  stream.edge = stream.chunks.length;
  playback.onEdge({ end: stream.edge - 6, signedAtMs: clock.unixMs - 2000 });
  playback.onEdge({ end: stream.edge, signedAtMs: clock.unixMs });
}

/** Joined 15 chunks (3 s + a segment's margin, at 3 chunks a second) behind the edge, everything from there appended. */
function joined(options: Partial<LivePlaybackOptions> = {}): Setup {
  const s = setup(options);
  edgesAtThreeChunksASecond(s);
  s.stream.deliver(s.stream.edge - 15, s.stream.edge);
  s.playback.feed();
  expect(s.sink.appends).toHaveLength(2);
  return s;
}

/** Where playback was placed once media came: 3 s behind a buffered end at 10 s. */
function started(options: Partial<LivePlaybackOptions> = {}): Setup {
  const s = joined(options);
  s.video.ranges = [[0, 10]];
  s.playback.onTick();
  expect(s.video.currentTime).toBe(7);
  return s;
}

describe('LivePlayback joins the stream', () => {
  it("waits for the stream's rate and the chunks, joins at a Cluster start behind the edge, the init segment first", () => {
    const s = setup();
    s.stream.edge = s.stream.chunks.length;
    s.playback.onEdge({ end: s.stream.edge - 6, signedAtMs: s.clock.unixMs - 2000 });
    s.playback.feed();
    // One signing time gives no rate: nothing is asked for yet.
    expect(s.stream.playhead).toBe(-1);
    s.playback.onEdge({ end: s.stream.edge, signedAtMs: s.clock.unixMs });
    s.playback.feed();
    // 3 s + a segment's margin back at 3 chunks a second, not held yet.
    const from = s.stream.edge - 15;
    expect(s.stream.playhead).toBe(from);
    expect(s.sink.started).toEqual([]);
    expect(s.sink.appends).toEqual([]);
    expect(s.events['live-joined']).toEqual([]);

    s.stream.deliver(from, s.stream.edge);
    const asked = s.sink.feedsAsked;
    s.playback.feed();
    const joinAt = Math.ceil(from / CHUNKS_PER_CLUSTER) * CHUNKS_PER_CLUSTER;
    expect(s.sink.started.map((i) => i.mimeType)).toEqual([initInfo.mimeType]);
    expect(s.sink.appends).toEqual([initBytes, concat(...clusters.slice(joinAt / CHUNKS_PER_CLUSTER))]);
    expect(s.events['live-joined']).toEqual([{ chunk: joinAt, edge: s.stream.edge, chunksPerSecond: 3 }]);
    expect(s.sink.feedsAsked).toBe(asked + 1);
    // Nothing new: nothing appended, the join not said again.
    s.playback.feed();
    expect(s.sink.appends).toHaveLength(2);
    expect(s.events['live-joined']).toHaveLength(1);
  });

  it('with no init= in the URI, sets MediaSource up with the initialisation segment found in the stream', () => {
    const withInit = clusters.map((c) => concat(initBytes, c));
    const s = setup({ uriInit: null }, withInit);
    const perUnit = Math.ceil(withInit[0]!.length / 40);
    s.stream.edge = s.stream.chunks.length;
    s.playback.onEdge({ end: s.stream.edge - 2 * perUnit, signedAtMs: 10_000 });
    s.playback.onEdge({ end: s.stream.edge, signedAtMs: 12_000 });
    s.stream.deliver(0, s.stream.edge);
    s.playback.feed();
    const joinUnit = (s.stream.edge - 5 * perUnit) / perUnit;
    expect(s.sink.started.map((i) => i.initLength)).toEqual([initInfo.initLength]);
    expect(s.sink.appends).toEqual([initBytes, concat(...clusters.slice(joinUnit))]);
  });

  it("a URI's init= that is not an initialisation segment is a bad-uri", () => {
    let thrown: unknown = null;
    try {
      setup({ uriInit: clusters[0]! });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(PpsppError);
    expect((thrown as PpsppError).code).toBe('bad-uri');
  });

  it('while MediaSource has enough queued, appends only the init segment, and the segments and the join once it takes more', () => {
    const s = setup();
    s.sink.isFull = true;
    edgesAtThreeChunksASecond(s);
    s.stream.deliver(s.stream.edge - 15, s.stream.edge);
    s.playback.feed();
    expect(s.sink.appends).toEqual([initBytes]);
    expect(s.events['live-joined']).toEqual([]);
    s.sink.isFull = false;
    s.playback.feed();
    expect(s.sink.appends).toHaveLength(2);
    expect(s.events['live-joined']).toHaveLength(1);
  });

  it('joins again after a gap, and says where', () => {
    const s = setup({ latencySeconds: 1 });
    s.stream.edge = 9;
    s.playback.onEdge({ end: 6, signedAtMs: 0 });
    s.playback.onEdge({ end: 9, signedAtMs: 1000 });
    s.stream.deliver(0, 9);
    s.playback.feed();
    expect(s.events['live-joined']).toEqual([{ chunk: 0, edge: 9, chunksPerSecond: 3 }]);
    // What was to come next left the window before it came.
    s.stream.edge = s.stream.chunks.length;
    s.stream.floor = 27;
    s.stream.deliver(27, s.stream.edge);
    s.playback.feed();
    expect(s.events['live-joined']).toEqual([
      { chunk: 0, edge: 9, chunksPerSecond: 3 },
      { chunk: 27, edge: s.stream.edge, chunksPerSecond: 3 },
    ]);
    expect(s.sink.appends.at(-1)).toEqual(concat(...clusters.slice(9)));
  });
});

describe('LivePlayback holds the latency target', () => {
  it('places playback the target behind the buffered end once media is buffered, and no sooner', () => {
    const s = joined();
    s.playback.onTick();
    expect(s.video.currentTime).toBe(0);
    s.video.ranges = [[0, 10]];
    s.playback.onTick();
    expect(s.video.currentTime).toBe(7);
    expect(s.events.behind).toEqual([]);
  });

  it('with less than the target buffered, places playback at the buffered start', () => {
    const s = joined();
    s.video.ranges = [[4, 5]];
    s.playback.onTimeUpdate();
    expect(s.video.currentTime).toBe(4);
  });

  it('behind the target by more than the jump threshold: jumps back to the target at 1x, then says caught up', () => {
    const s = started();
    s.video.ranges = [[0, 14]]; // 7 s behind: the 3 s target and the 4 s threshold, not beyond
    s.playback.onTick();
    expect(s.video.currentTime).toBe(7);
    expect(s.video.playbackRate).toBe(CATCH_UP_RATE);
    s.video.ranges = [[0, 14.5]];
    s.playback.onTick();
    expect(s.video.currentTime).toBe(11.5);
    expect(s.video.playbackRate).toBe(1);
    expect(s.events.behind.map((e) => e.catchUp)).toEqual(['rate', 'jump']);
    s.playback.onTick();
    expect(s.events['caught-up']).toHaveLength(1);
    expect(s.video.currentTime).toBe(11.5);
  });

  it('a smaller lag plays faster without a jump, and 1x again once back at the target', () => {
    const s = started();
    s.video.ranges = [[0, 11]]; // 4 s behind
    s.playback.onTimeUpdate();
    expect(s.video.currentTime).toBe(7);
    expect(s.video.playbackRate).toBe(CATCH_UP_RATE);
    expect(s.events.behind.map((e) => e.catchUp)).toEqual(['rate']);
    s.video.currentTime = 7.6;
    s.playback.onTimeUpdate();
    expect(s.video.playbackRate).toBe(CATCH_UP_RATE);
    expect(s.events.behind).toHaveLength(1);
    expect(s.events['caught-up']).toEqual([]);
    s.video.currentTime = 7.95;
    s.playback.onTimeUpdate();
    expect(s.video.playbackRate).toBe(1);
    expect(s.events['caught-up']).toHaveLength(1);
  });

  it('reports latency as the buffered media ahead plus the time since the newest appended chunk was signed', () => {
    const s = joined();
    // Playback has not started: no estimate.
    s.playback.onEdge({ end: s.stream.edge + 3, signedAtMs: s.clock.unixMs + 1000 });
    expect(s.events['live-edge'].at(-1)?.latencySeconds).toBeNull();
    s.video.ranges = [[0, 10]];
    s.playback.onTick();
    // The newest appended media was signed at the join; 1.5 s passed since.
    s.clock.unixMs += 1500;
    s.playback.onEdge({ end: s.stream.edge + 6, signedAtMs: s.clock.unixMs });
    expect(s.events['live-edge'].at(-1)).toEqual({ end: s.stream.edge + 6, signedAtMs: s.clock.unixMs, latencySeconds: 3 + 1.5 });
    s.video.ranges = [[0, 11]];
    s.playback.onTick();
    expect(s.events.behind).toEqual([{ latencySeconds: 4 + 1.5, catchUp: 'rate' }]);
  });
});

describe('LivePlayback ends the stream', () => {
  it('after liveEndAfterMs without a new signed chunk: 1x, MediaSource ended once its appends are done, live-ended once', async () => {
    const s = started();
    s.video.ranges = [[0, 11]];
    s.playback.onTick();
    expect(s.video.playbackRate).toBe(CATCH_UP_RATE);
    s.clock.ms += 9_000;
    s.playback.onEdge({ end: s.stream.edge, signedAtMs: s.clock.unixMs });
    // Counted from the last edge, not from the start.
    s.clock.ms += 9_999;
    s.playback.onTick();
    expect(s.video.playbackRate).toBe(CATCH_UP_RATE);
    await s.sink.drain();
    expect(s.sink.endOfStreamCalls).toBe(0);
    s.clock.ms += 1;
    s.playback.onTick();
    expect(s.video.playbackRate).toBe(1);
    expect(s.events['live-ended']).toEqual([]);
    await s.sink.drain();
    expect(s.sink.endOfStreamCalls).toBe(1);
    expect(s.events['live-ended']).toEqual([{}]);
    // Ended: playback is not moved, nothing more is appended, the end is said once.
    s.video.ranges = [[0, 30]];
    s.playback.onTick();
    s.stream.edge += 3;
    s.stream.chunks.push(...cutIntoChunks([cluster(12_000)], 40));
    s.stream.deliver(s.stream.edge - 3, s.stream.edge);
    s.playback.feed();
    await s.sink.drain();
    expect(s.video.currentTime).toBe(7);
    expect(s.sink.appends).toHaveLength(2);
    expect(s.events['live-ended']).toHaveLength(1);
  });

  it('before its initialisation segment came: live-ended, and MediaSource not ended (that fails the element)', async () => {
    const s = setup({ endAfterMs: 3000 });
    s.clock.ms += 3000;
    s.playback.onTick();
    await s.sink.drain();
    expect(s.sink.appends).toEqual([]);
    expect(s.sink.endOfStreamCalls).toBe(0);
    expect(s.events['live-ended']).toEqual([{}]);
  });

  it('closed before its appends are done: the stream is neither ended nor said to be', async () => {
    const s = started({ endAfterMs: 1000 });
    s.clock.ms += 1000;
    s.playback.onTick();
    s.playback.close();
    await s.sink.drain();
    expect(s.sink.endOfStreamCalls).toBe(0);
    expect(s.events['live-ended']).toEqual([]);
  });
});
