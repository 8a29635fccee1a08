/**
 * The fake world the tests of Peer, Swarm and Player run in, made afresh for each test:
 * fake WebRTC on one {@link FakeNet}, the fake WebSocket, any other installs, and a
 * {@link FakeSignalServer}. One place for the setup and the teardown's order, which
 * matters: what a test opened is closed while the fakes are still in place (pending
 * work must not outlive them), then the server closes, then every install is undone,
 * last first.
 */
import { afterEach, beforeEach } from 'vitest';
import { FakeSignalServer, installWebSocket } from './signaling.js';
import { FakeNet, installWebRtc } from './webrtc.js';

export interface FakeWorldOptions {
  /** Installs made after WebRTC and WebSocket, before the server; each returns its undo (e.g. `installMedia`). */
  installs?: (() => () => void)[];
  /** Runs after each test before anything is closed (real timers back, spies restored). */
  beforeClosing?: () => void;
}

export interface FakeWorld {
  /** The current test's network, behind the global RTCPeerConnection. */
  readonly net: FakeNet;
  /** The current test's signaling server. */
  readonly server: FakeSignalServer;
  /**
   * A list for what tests open: after each test, before the server closes, each item is
   * closed with `close` (first in, first closed) and the list emptied. Lists are closed
   * in the order they were made.
   */
  closeAfterEach<T>(close: (item: T) => void): T[];
  /**
   * Runs `undo` after the test, once the server closed. Undos run last registered first,
   * so a test's own (a fake `fetch`, a spy) go before the installs'.
   */
  undoAfter(undo: () => void): void;
}

/** Registers the hooks that make the fake world before each test and take it down after. */
export function useFakeWorld({ installs = [], beforeClosing }: FakeWorldOptions = {}): FakeWorld {
  let net: FakeNet;
  let server: FakeSignalServer;
  const undo: (() => void)[] = [];
  const closing: (() => void)[] = [];

  beforeEach(() => {
    net = new FakeNet();
    undo.push(installWebRtc(net), installWebSocket(), ...installs.map((install) => install()));
    server = new FakeSignalServer();
  });

  afterEach(() => {
    beforeClosing?.();
    for (const closeAll of closing) closeAll();
    server.close();
    for (const u of undo.splice(0).reverse()) u();
  });

  return {
    get net() {
      return net;
    },
    get server() {
      return server;
    },
    closeAfterEach<T>(close: (item: T) => void): T[] {
      const items: T[] = [];
      closing.push(() => {
        for (const item of items.splice(0)) close(item);
      });
      return items;
    },
    undoAfter(u: () => void): void {
      undo.push(u);
    },
  };
}
