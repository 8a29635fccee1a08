/**
 * `storage: 'opfs'`: the batch format, and a Player over a fake OPFS, a fake web server
 * (the HTTP origin, HTTP-only) and fake MediaSource with the real engine: a second visit
 * reads back what the first saved, a damaged copy is refused and fetched again, and a full
 * or missing OPFS falls back to memory with an event.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PlayerOptions } from '../src/options.js';
import { Player, type PlayerEvents } from '../src/player.js';
import { batchCount, clearSavedChunks, encodeBatch, parseBatchIndex } from '../src/saved-chunks.js';
import { SavedIndex } from '../src/saved-index.js';
import { differsAt } from './fakes/bytes.js';
import { loadEngine } from './fakes/engine.js';
import type { FakeHttp } from './fakes/http.js';
import { FakeMediaSource, FakeVideoElement, installMedia } from './fakes/media.js';
import { FakeOpfs, installOpfs } from './fakes/opfs.js';
import { FAKE_ORIGIN, publishOnFakeOrigin } from './fakes/origin.js';
import { until } from './fakes/tasks.js';
import { syntheticWebm } from './fakes/webm.js';

const CHUNK = 8192;
const undo: (() => void)[] = [];
const players: Player[] = [];

beforeAll(loadEngine);

afterEach(() => {
  for (const p of players.splice(0)) p.destroy();
  for (const u of undo.splice(0).reverse()) u();
});

describe('the batch format', () => {
  const entries = [
    { chunk: 7, proof: new Uint8Array([1, 2, 3]), data: new Uint8Array([9, 9]) },
    { chunk: 8, proof: new Uint8Array(0), data: new Uint8Array([5]) },
  ];

  it('round-trips its entries', () => {
    const bytes = encodeBatch(entries);
    expect(batchCount(bytes)).toBe(2);
    const locs = parseBatchIndex(bytes, bytes.length);
    expect(locs.map((l) => [l.chunk, l.proofLength, l.dataLength])).toEqual([
      [7, 3, 2],
      [8, 0, 1],
    ]);
    const first = locs[0]!;
    expect([...bytes.subarray(first.offset, first.offset + 5)]).toEqual([1, 2, 3, 9, 9]);
  });

  it('refuses what is not a batch, another version, a cut table and entries outside the file', () => {
    const bytes = encodeBatch(entries);
    const other = bytes.slice();
    other[0] = 0;
    expect(() => batchCount(other)).toThrow(/not a batch/);
    const later = bytes.slice();
    later[4] = 2;
    expect(() => batchCount(later)).toThrow(/version 2/);
    expect(() => parseBatchIndex(bytes.subarray(0, 20), bytes.length)).toThrow(/cut short/);
    expect(() => parseBatchIndex(bytes, bytes.length - 1)).toThrow(/outside the file/);
  });

  it('the index finds each chunk in its batch, skips what is unusable, and gives runs of saved chunks', () => {
    const index = new SavedIndex(10);
    const file = new File([encodeBatch(entries)], 'k-a-0');
    const at = (chunk: number, i: number) => ({ chunk, offset: 100 + i, proofLength: 1, dataLength: 2 });
    expect(index.addBatch(file, [at(0, 0), at(1, 1), at(2, 2), at(12, 3)], (l) => l.chunk !== 1)).toBe(true);
    expect(index.addBatch(file, [at(5, 0), at(6, 1), at(2, 2)], () => true)).toBe(true);
    expect(index.size).toBe(4);
    expect(index.runs()).toEqual([
      [0, 1],
      [2, 3],
      [5, 7],
    ]);
    expect(index.get(6)).toEqual({ chunk: 6, offset: 101, proofLength: 1, dataLength: 2, file });
    expect(index.get(1)).toBeUndefined();
    index.delete(5);
    index.delete(5);
    expect(index.size).toBe(3);
    expect(index.runs()).toEqual([
      [0, 1],
      [2, 3],
      [6, 7],
    ]);
  });
});

describe('Player with storage: opfs (fake OPFS, HTTP-only)', () => {
  const httpOrigin = FAKE_ORIGIN;

  function publish(file: Uint8Array): [string, FakeHttp] {
    const { uri, http, restore } = publishOnFakeOrigin(file, CHUNK);
    undo.push(restore);
    return [uri, http];
  }


  interface Visit {
    player: Player;
    appended: () => Uint8Array;
    fallbacks: PlayerEvents['storage-fallback'][];
    errors: PlayerEvents['error'][];
  }

  /** Plays the URI to its end, as one visit of the page. */
  async function visit(uri: string, options: PlayerOptions = {}): Promise<Visit> {
    const undoMedia = installMedia();
    undo.push(undoMedia);
    const video = new FakeVideoElement();
    const player = await Player.attach(video as unknown as HTMLVideoElement, uri, {
      statsIntervalMs: 0,
      httpOrigin,
      storage: 'opfs',
      // The fake video never plays: the whole file, not a read-ahead from its start.
      readAheadSeconds: 0,
      ...options,
    });
    players.push(player);
    const fallbacks: Visit['fallbacks'] = [];
    const errors: Visit['errors'] = [];
    player.on('storage-fallback', (f) => fallbacks.push(f));
    player.on('error', (e) => errors.push(e));
    const ms = FakeMediaSource.made.at(-1)!;
    await until(() => ms.endOfStreamCalls > 0, 'endOfStream');
    const sb = ms.sourceBuffers[0]!;
    const appended = (): Uint8Array => {
      const out = new Uint8Array(sb.appends.reduce((n, a) => n + a.length, 0));
      let at = 0;
      for (const a of sb.appends) {
        out.set(a, at);
        at += a.length;
      }
      return out;
    };
    return { player, appended, fallbacks, errors };
  }

  /** Ends a visit once every chunk it verified is saved. */
  async function leave(v: Visit, chunks: number): Promise<void> {
    await until(() => v.player.stats().chunksSaved >= chunks && v.player.stats().bytesSaved > 0, 'every chunk saved');
    // The last batch is written when its timer fires; the file is whole once closed.
    await new Promise((r) => setTimeout(r, 700));
    v.player.destroy();
  }

  const contentServed = (http: FakeHttp): number => http.served.get(httpOrigin.url) ?? 0;

  it('a second visit reads back every chunk the first saved: nothing fetched, the same bytes appended', async () => {
    const fs = new FakeOpfs();
    undo.push(installOpfs(fs));
    const media = syntheticWebm(10, 30_000);
    const [uri, http] = publish(media.file);
    const chunks = Math.ceil(media.file.length / CHUNK);
    const first = await visit(uri);
    expect(first.fallbacks).toEqual([]);
    await leave(first, chunks);
    expect(contentServed(http)).toBe(media.file.length);
    expect([...fs.root.files().keys()].every((p) => p.startsWith('ppspp-web/'))).toBe(true);

    const second = await visit(uri);
    expect(differsAt(second.appended(), media.file), 'the appends differ from the file at').toBeNull();
    expect(second.player.stats()).toMatchObject({
      bytesFromStorage: media.file.length,
      bytesFromHttp: 0,
      chunksRestored: chunks,
      chunksSavedCorrupt: 0,
    });
    expect(contentServed(http), 'no content fetched again').toBe(media.file.length);
    expect(second.errors).toEqual([]);
  });

  it('a damaged saved chunk is refused and fetched again; nothing of it is appended', async () => {
    const fs = new FakeOpfs();
    undo.push(installOpfs(fs));
    const media = syntheticWebm(6, 30_000);
    const [uri, http] = publish(media.file);
    const chunks = Math.ceil(media.file.length / CHUNK);
    await leave(await visit(uri), chunks);
    // One byte of one chunk's data in the first batch.
    const [, batch] = [...fs.root.files()][0]!;
    const loc = parseBatchIndex(batch.bytes, batch.bytes.length)[3]!;
    batch.bytes[loc.offset + loc.proofLength + 10]! ^= 0xff;

    const second = await visit(uri);
    expect(differsAt(second.appended(), media.file), 'the appends differ from the file at').toBeNull();
    const stats = second.player.stats();
    expect(stats.chunksSavedCorrupt).toBe(1);
    expect(stats.chunksRestored).toBe(chunks - 1);
    expect(contentServed(http) - media.file.length, 'one chunk fetched again').toBe(CHUNK);
  });

  it('within maxMemoryBytes, chunks let go of are read back from OPFS after a seek back past the end, not fetched again', async () => {
    const fs = new FakeOpfs();
    undo.push(installOpfs(fs));
    // 2.4 MB of video against a bound of 1 MiB.
    const media = syntheticWebm(40, 60_000);
    const [uri, http] = publish(media.file);
    undo.push(installMedia());
    const video = new FakeVideoElement();
    const player = await Player.attach(video as unknown as HTMLVideoElement, uri, {
      statsIntervalMs: 0,
      httpOrigin,
      storage: 'opfs',
      maxMemoryBytes: 1 << 20,
      // So that the seek back is outside MediaSource's buffer.
      keepBehindSeconds: 2,
    });
    players.push(player);
    const errors: string[] = [];
    player.on('error', (e) => errors.push(`${e.code}: ${e.message}`));
    const ms = FakeMediaSource.made.at(-1)!;
    await until(() => ms.sourceBuffers.length > 0, 'a SourceBuffer');
    const sb = ms.sourceBuffers[0]!;
    const appended = (): number => sb.appends.reduce((n, a) => n + a.length, 0);
    // Playback: a second of media every 20 ms, as far as what was appended.
    // To the end: the stream ends, and a seek back reopens it.
    for (let i = 0; i < 2000 && ms.endOfStreamCalls === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      video.currentTime = Math.min(video.currentTime + 1, Math.max(0, (appended() / media.file.length) * 40 - 2));
      video.dispatchEvent(new Event('timeupdate'));
    }
    expect(player.stats().chunksEvicted).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 700));
    const served = contentServed(http);
    expect(served, 'each chunk fetched once').toBe(media.file.length);

    const before = sb.appends.length;
    video.seekTo(1);
    await until(() => sb.appends.length > before, 'appends after the seek back', 15_000);
    expect(errors).toEqual([]);
    const stats = player.stats();
    expect(stats.chunksRestored, 'read back').toBeGreaterThan(0);
    expect(contentServed(http), 'nothing fetched again').toBe(served);
  }, 60_000);

  it("clearSavedChunks deletes one video's saved chunks, or all of them", async () => {
    const fs = new FakeOpfs();
    undo.push(installOpfs(fs));
    const media = syntheticWebm(4, 10_000);
    const [uri] = publish(media.file);
    await leave(await visit(uri), Math.ceil(media.file.length / CHUNK));
    const root = /^ppspp:\/\/([0-9a-f]+)/.exec(uri)![1]!;
    const other = await (await fs.root.getDirectoryHandle('ppspp-web')).getDirectoryHandle('f00d', { create: true });
    await other.getFileHandle('k-x-0', { create: true });
    expect([...fs.root.files().keys()].some((p) => p.startsWith(`ppspp-web/${root}/`))).toBe(true);
    await clearSavedChunks(root);
    expect([...fs.root.files().keys()]).toEqual(['ppspp-web/f00d/k-x-0']);
    await clearSavedChunks(root);
    await clearSavedChunks();
    expect(fs.root.children.size).toBe(0);
    await clearSavedChunks();
  });

  it('past the quota: a storage-fallback event, and playback goes on from memory', async () => {
    const fs = new FakeOpfs();
    undo.push(installOpfs(fs));
    const media = syntheticWebm(12, 200_000);
    expect(media.file.length).toBeGreaterThan(2 << 20);
    const [uri] = publish(media.file);
    const v = await visit(uri, { storageQuotaBytes: 1 << 20 });
    expect(differsAt(v.appended(), media.file)).toBeNull();
    await until(() => v.fallbacks.length > 0, 'storage-fallback');
    expect(v.fallbacks).toEqual([{ reason: 'quota', message: expect.stringMatching(/quota of 1048576 bytes.*memory only/) }]);
    expect(fs.used()).toBeLessThanOrEqual(1 << 20);
  });

  it("the browser's own QuotaExceededError is a quota fallback too", async () => {
    const fs = new FakeOpfs();
    fs.quota = 100_000;
    undo.push(installOpfs(fs));
    const media = syntheticWebm(12, 200_000);
    const [uri] = publish(media.file);
    const v = await visit(uri);
    await until(() => v.fallbacks.length > 0, 'storage-fallback');
    expect(v.fallbacks[0]).toMatchObject({ reason: 'quota', message: expect.stringMatching(/QuotaExceeded|quota exceeded/) });
    expect(differsAt(v.appended(), media.file)).toBeNull();
  });

  it('without OPFS: a storage-fallback event at attach, and playback from memory', async () => {
    undo.push(installOpfs(null));
    const media = syntheticWebm(4, 10_000);
    const [uri] = publish(media.file);
    const v = await visit(uri);
    expect(v.fallbacks).toEqual([{ reason: 'unavailable', message: expect.stringMatching(/no Origin Private File System/) }]);
    expect(differsAt(v.appended(), media.file)).toBeNull();
  });

  it("a bad storage option is a bad-option error", async () => {
    await expect(
      Player.attach(new FakeVideoElement() as unknown as HTMLVideoElement, 'x', { storage: 'disk' as 'opfs' }),
    ).rejects.toMatchObject({ code: 'bad-option', message: expect.stringMatching(/storage must be 'memory' or 'opfs'/) });
    await expect(
      Player.attach(new FakeVideoElement() as unknown as HTMLVideoElement, 'x', { storageQuotaBytes: 1000 }),
    ).rejects.toMatchObject({ code: 'bad-option', message: expect.stringMatching(/storageQuotaBytes must be at least 1048576/) });
  });
});
