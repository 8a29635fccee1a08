/**
 * Peer.fetch with an AbortSignal, and the errors Peer's calls reject with: two Peers over
 * the fake WebRTC stack and signaling server of test/fakes/, with the real engine.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { PpsppError } from '../src/errors.js';
import { Peer } from '../src/peer.js';
import { loadEngine } from './fakes/engine.js';
import { nextEvent, until } from './fakes/tasks.js';
import { useFakeWorld } from './fakes/world.js';

const CHUNK = 1024;

const world = useFakeWorld();
const peers = world.closeAfterEach((p: Peer) => p.close());

beforeAll(loadEngine);

function bytes(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 2654435761) >>> 24;
  return b;
}

async function peer(options: Parameters<typeof Peer.create>[0] = {}): Promise<Peer> {
  const p = await Peer.create({ statsIntervalMs: 0, ...options });
  peers.push(p);
  return p;
}

/** A seeder of `size` bytes; with `uploadLimit` the transfer takes a while. */
async function seed(size: number, uploadLimit = 0): Promise<{ uri: string; data: Uint8Array }> {
  const data = bytes(size);
  const s = await peer({ uploadLimit });
  const uri = await s.seed(data, { signal: world.server.url, chunkSize: CHUNK });
  return { uri, data };
}

/** What a promise rejected with (fails the test if it resolved). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('resolved, expected a rejection');
}

describe('Peer.fetch', () => {
  it('resolves with the content, with a signal that never aborts too', async () => {
    const { uri, data } = await seed(50 * CHUNK);
    const f = await peer();
    expect(await f.fetch(uri, { signal: new AbortController().signal })).toEqual(data);
    expect(await f.fetch(uri)).toEqual(data); // the swarm completed: read again at once
  });

  it("aborted mid-download: rejects with the signal's reason, and the swarm is left", async () => {
    const { uri } = await seed(300 * CHUNK, 100_000);
    const f = await peer();
    const controller = new AbortController();
    const fetching = f.fetch(uri, { signal: controller.signal });
    await nextEvent(f, 'chunk-verified');
    expect(f.stats(uri)).not.toBeNull();
    controller.abort();
    const err = await rejection(fetching);
    expect(err).toBeInstanceOf(DOMException);
    expect(err).toMatchObject({ name: 'AbortError' });
    expect(f.stats(uri)).toBeNull();
    expect(f.have(uri)).toEqual([]);
    // Its connection went with it.
    await until(() => world.net.openChannels().length === 0, 'the channels closed');
  });

  it('rejects with any reason the signal gives, AbortSignal.timeout() included', async () => {
    const { uri } = await seed(300 * CHUNK, 100_000);
    const f = await peer();
    const why = new Error('user navigated away');
    const controller = new AbortController();
    const fetching = f.fetch(uri, { signal: controller.signal });
    controller.abort(why);
    expect(await rejection(fetching)).toBe(why);
    expect(await rejection(f.fetch(uri, { signal: AbortSignal.timeout(50) }))).toMatchObject({ name: 'TimeoutError' });
  });

  it('with a signal already aborted, rejects before joining anything', async () => {
    const { uri } = await seed(10 * CHUNK);
    const joins = world.server.received.filter((r) => r.msg.type === 'join').length;
    const f = await peer();
    const controller = new AbortController();
    controller.abort();
    expect(await rejection(f.fetch(uri, { signal: controller.signal }))).toMatchObject({ name: 'AbortError' });
    expect(f.stats(uri)).toBeNull();
    expect(world.server.received.filter((r) => r.msg.type === 'join')).toHaveLength(joins);
  });

  it('an abort leaves the swarm to another fetch of the same content', async () => {
    const { uri, data } = await seed(150 * CHUNK, 300_000);
    const f = await peer();
    const controller = new AbortController();
    const aborted = f.fetch(uri, { signal: controller.signal });
    const other = f.fetch(uri);
    await nextEvent(f, 'chunk-verified');
    controller.abort();
    expect(await rejection(aborted)).toMatchObject({ name: 'AbortError' });
    expect(await other).toEqual(data);
  });

  it('aborts learning the content from its peers (fetch by root hash)', async () => {
    const f = await peer({ signal: world.server.url });
    const controller = new AbortController();
    // Nobody in that room: discovery would wait 30 s.
    const fetching = f.fetch('ab'.repeat(32), { signal: controller.signal });
    await until(() => world.server.received.some((r) => r.msg.type === 'join'), 'discovery joined the room');
    controller.abort();
    expect(await rejection(fetching)).toMatchObject({ name: 'AbortError' });
    await until(() => world.server.room('ab'.repeat(32)).length === 0, 'discovery left the room');
  });

  it('rejects with closed, fatal, when the peer is closed first', async () => {
    const { uri } = await seed(300 * CHUNK, 100_000);
    const f = await peer();
    const fetching = f.fetch(uri);
    await nextEvent(f, 'chunk-verified');
    f.close();
    const err = await rejection(fetching);
    expect(err).toBeInstanceOf(PpsppError);
    expect(err).toMatchObject({ code: 'closed', fatal: true });
    expect(await rejection(f.fetch(uri))).toMatchObject({ code: 'closed', fatal: true });
  });

  it('refuses a signal option that is not an AbortSignal (the signaling URL is a Peer.create option)', async () => {
    const f = await peer();
    const err = await rejection(f.fetch('ab'.repeat(20), { signal: 'ws://example.com/ws' } as unknown as { signal: AbortSignal }));
    expect(err).toMatchObject({ code: 'bad-option', fatal: true });
  });

  it('rejects with fatal errors: an unreachable signaling server, no signaling server at all', async () => {
    const f = await peer();
    const nowhere = `ppspp://${'ab'.repeat(20)}?len=5000&signal=${encodeURIComponent('ws://nowhere.test/ws')}`;
    expect(await rejection(f.fetch(nowhere))).toMatchObject({ code: 'signaling-unreachable', fatal: true });
    expect(f.stats(nowhere)).toBeNull();
    expect(await rejection(f.fetch(`ppspp://${'ab'.repeat(20)}?len=5000`))).toMatchObject({ code: 'bad-option', fatal: true });
  });
});
