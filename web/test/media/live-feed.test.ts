import { describe, expect, it } from 'vitest';
import { LiveFeed } from '../../src/media/live-feed.js';
import { FakeLiveStream, cutIntoChunks } from '../fakes/live-stream.js';
import { cluster, concat, info, webm } from './helpers.js';

const file = webm({ unknownSize: true }).file;
const initInfo = info(file);
/** The initialisation segment as an older live URI's `init=` gives it. */
const init = { info: initInfo, bytes: file.slice(0, initInfo.initLength) };
const clusters = Array.from({ length: 12 }, (_, i) => cluster(i * 1000, new Array<number>(90).fill(i)));

describe('LiveFeed', () => {
  it('waits for the rate, joins behind the edge at a Cluster start, and appends whole Clusters', () => {
    const s = new FakeLiveStream(cutIntoChunks(clusters, 40));
    const feed = new LiveFeed(s, init, 3);
    s.edge = s.chunks.length;
    // One munro's time says nothing of the rate yet.
    feed.onEdge(s.edge - 9, 10_000, 0);
    expect(feed.take(100)).toBeNull();
    expect(s.playhead).toBe(-1);
    // Munros a moment apart say nothing of the rate either (sources write in bursts).
    feed.onEdge(s.edge - 6, 10_500, 25);
    expect(feed.take(100)).toBeNull();
    expect(s.playhead).toBe(-1);
    // Three chunks a second (one Cluster a second here): 5 s back is 15 chunks.
    feed.onEdge(s.edge, 13_000, 50);
    expect(feed.take(100)).toBeNull();
    expect(s.playhead).toBe(s.edge - 15);
    // Chunks arrive, the first of them mid-Cluster: it starts at the next Cluster.
    s.deliver(s.edge - 15, s.edge - 4);
    const first = feed.take(200);
    const starts = s.chunks.map((_, i) => i).filter((i) => i % 3 === 0);
    const joinAt = starts.find((i) => i >= s.edge - 15) ?? -1;
    expect(feed.joined).toBe(true);
    expect(feed.lastJoin).toEqual({ chunk: joinAt, edge: s.edge, chunksPerSecond: 3 });
    // Whole Clusters only: the last one held in part waits.
    const wholeChunks = Math.floor((s.edge - 4 - joinAt) / 3) * 3;
    expect(first).toEqual(concat(...s.chunks.slice(joinAt, joinAt + wholeChunks)));
    expect(feed.take(200)).toBeNull();
    s.deliver(s.edge - 4, s.edge);
    const rest = feed.take(300);
    expect(rest).toEqual(concat(...s.chunks.slice(joinAt + wholeChunks)));
  });

  it('finds the initialisation segment in the stream, joins after it, and appends the rest as it comes', () => {
    // As `ppspp live` cuts a stream: each media segment with the initialisation segment in
    // front, a chunk starting where each begins.
    const units = clusters.map((c) => concat(init.bytes, c));
    const s = new FakeLiveStream(cutIntoChunks(units, 40));
    const perUnit = Math.ceil(units[0]!.length / 40);
    const feed = new LiveFeed(s, null, 3);
    s.edge = s.chunks.length;
    feed.onEdge(s.edge - 2 * perUnit, 10_000, 0);
    feed.onEdge(s.edge, 12_000, 50);
    expect(feed.initSegment(100)).toBeNull();
    // One unit a second: 5 s back, where a unit starts.
    const back = 5 * perUnit;
    expect(s.playhead).toBe(s.edge - back);
    // Its first chunks only: the initialisation segment is not whole yet.
    s.deliver(s.edge - back, s.edge - back + 1);
    expect(feed.initSegment(150)).toBeNull();
    s.deliver(s.edge - back + 1, s.edge);
    const found = feed.initSegment(200);
    expect(found?.bytes).toEqual(init.bytes);
    expect(found?.info.mimeType).toBe(initInfo.mimeType);
    const joinUnit = (s.edge - back) / perUnit;
    expect(feed.lastJoin?.chunk).toBe(joinUnit * perUnit);
    // The joined unit's Cluster, then the next ones, the copies of the initialisation
    // segment in front of them left out.
    expect(feed.take(300)).toEqual(concat(...clusters.slice(joinUnit)));
  });

  it('measures the rate between the ends of signing bursts', () => {
    const s = new FakeLiveStream(cutIntoChunks(clusters, 40));
    const feed = new LiveFeed(s, init, 3);
    // Two munros of 16 chunks signed together each second: 32 chunks a second.
    feed.onEdge(32, 10_000, 0);
    feed.onEdge(48, 10_005, 0);
    feed.onEdge(64, 11_000, 0);
    expect(feed.chunksPerSecond()).toBeNull(); // less than a second from the first burst's end
    feed.onEdge(80, 11_005, 0);
    expect(feed.chunksPerSecond()).toBe(32);
  });

  it('joins again when what comes next leaves the window first', () => {
    const s = new FakeLiveStream(cutIntoChunks(clusters, 40));
    const feed = new LiveFeed(s, init, 1);
    s.edge = 9;
    feed.onEdge(6, 0, 0);
    feed.onEdge(9, 1000, 0);
    s.deliver(0, 9);
    expect(feed.take(0)).not.toBeNull();
    s.edge = s.chunks.length;
    s.floor = 27;
    s.deliver(27, s.chunks.length);
    expect(feed.take(0)).toEqual(concat(...s.chunks.slice(27)));
    expect(feed.gaps).toBe(1);
    // The join after the gap, aimed from the edge as it was then.
    expect(feed.lastJoin).toEqual({ chunk: 27, edge: s.chunks.length, chunksPerSecond: 3 });
  });

  it('guesses how far back to join when the rate does not come', () => {
    const s = new FakeLiveStream(cutIntoChunks(clusters, 40));
    const feed = new LiveFeed(s, init, 3);
    s.edge = s.chunks.length;
    feed.onEdge(s.edge, 5000, 0);
    expect(feed.take(2000)).toBeNull();
    expect(s.playhead).toBe(-1);
    feed.take(3000);
    expect(s.playhead).toBe(0);
    s.deliver(0, s.edge);
    expect(feed.take(3100)).not.toBeNull();
    expect(feed.lastJoin).toEqual({ chunk: 0, edge: s.edge, chunksPerSecond: null });
  });
});
