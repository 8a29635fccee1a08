/**
 * Several signaling URLs (instances of one site sharing rooms through Redis): the client
 * joins at the first that answers, skips one that cannot serve (`unavailable`), and when
 * its server goes away reconnects to the next.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PpsppError } from '../src/errors.js';
import { SignalingClient } from '../src/signaling.js';
import { FakeSignalServer, installWebSocket } from './fakes/signaling.js';

const SWARM = 'c89800bfc82ed01ed6e3bfd5408c51274491f7d4';
const DEAD = 'ws://nobody-listens.test/ws';

let undo: () => void = () => {};
const clients: SignalingClient[] = [];

beforeEach(() => {
  undo = installWebSocket();
});

afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  undo();
});

function client(urls: string | string[]): { c: SignalingClient; errors: PpsppError[]; welcomes: string[] } {
  const errors: PpsppError[] = [];
  const welcomes: string[] = [];
  const c = new SignalingClient(urls, SWARM, {
    welcome: (id) => welcomes.push(id),
    signal: () => {},
    peerLeft: () => {},
    disconnected: () => {},
    error: (e) => errors.push(e),
  });
  clients.push(c);
  return { c, errors, welcomes };
}

async function until(what: string, pred: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('SignalingClient with several URLs', () => {
  it('joins at the first one that answers', async () => {
    const live = new FakeSignalServer();
    const { c, errors } = client([DEAD, live.url]);
    await c.start();
    expect(c.url).toBe(live.url);
    expect(live.room(SWARM)).toStrictEqual([c.peerId]);
    expect(errors).toStrictEqual([]);
    live.close();
  });

  it('passes over an instance that cannot serve, without an error event', async () => {
    const down = new FakeSignalServer();
    down.unavailable = true;
    const live = new FakeSignalServer();
    const { c, errors } = client([down.url, live.url]);
    await c.start();
    expect(c.url).toBe(live.url);
    expect(errors).toStrictEqual([]);
    down.close();
    live.close();
  });

  it('rejects, naming every URL, when none answers', async () => {
    const other = 'ws://nobody-either.test/ws';
    const { c } = client([DEAD, other]);
    const err = (await c.start().then(
      () => null,
      (e: unknown) => e,
    )) as PpsppError;
    expect(err.code).toBe('signaling-unreachable');
    expect(err.message).toContain(DEAD);
    expect(err.message).toContain(other);
  });

  it('one URL still rejects as before', async () => {
    const { c } = client(DEAD);
    await expect(c.start()).rejects.toMatchObject({ code: 'signaling-unreachable', message: expect.stringContaining(`the signaling server at ${DEAD}`) });
  });

  it('moves to the next instance when its own goes away, and joins again there', async () => {
    const a = new FakeSignalServer();
    const b = new FakeSignalServer();
    const { c, welcomes } = client([a.url, b.url]);
    await c.start();
    expect(c.url).toBe(a.url);
    a.close();
    await until('a welcome from the second instance', () => welcomes.length === 2);
    expect(c.url).toBe(b.url);
    expect(b.room(SWARM)).toStrictEqual([c.peerId]);
    b.close();
  });
});
