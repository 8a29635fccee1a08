/**
 * Fetching by root hash alone. Before a swarm can start, its chunk size and length are
 * learnt from its peers (the core's `Discovery`: the peak hashes and the last chunk,
 * verified against the root). This joins the room with its own signaling client and
 * connections and closes them when done; the swarm then connects afresh.
 */
import { Connections } from './connections.js';
import { Driver } from './driver.js';
import { PpsppError, abortReason, fatal, messageOf } from './errors.js';
import type { ResolvedPeerOptions } from './options.js';
import { SignalingClient } from './signaling.js';
import { WasmDiscovery } from './wasm.js';

/** A root hash in hex (SHA-1: 40 digits … SHA-512: 128). */
const ROOT_HEX = /^[0-9a-fA-F]{40,128}$/;

/** How long discovery may take before `no-peers`. */
const DISCOVERY_TIMEOUT_MS = 30_000;

export function isRootHex(text: string): boolean {
  return ROOT_HEX.test(text.trim());
}

/**
 * A swarm URI for what the caller passed: the URI itself, or for a bare root hash the URI
 * discovered from the peers met through the `signal` option (`abort` stops that).
 */
export async function uriFor(uriOrRoot: string, options: ResolvedPeerOptions, abort?: AbortSignal): Promise<string> {
  if (!isRootHex(uriOrRoot)) return uriOrRoot;
  if (options.signal === undefined || options.signal === false) {
    throw new PpsppError('bad-option', 'fetching by root hash needs the signal option (where to meet the peers that can describe the content)');
  }
  return discoverUri(uriOrRoot, options.signal, options, abort);
}

/**
 * Resolves with the swarm URI of `root` (naming the signaling server that answered), or rejects: `bad-uri`
 * for a malformed root, `signaling-unreachable` (or `signaling-error`: the server refused
 * to join), `no-peers` when no peer could say within {@link DISCOVERY_TIMEOUT_MS} (the
 * message gives each peer's reason), or `abort`'s reason once it aborts.
 */
export async function discoverUri(root: string, signalUrls: readonly string[], options: ResolvedPeerOptions, abort?: AbortSignal): Promise<string> {
  if (abort?.aborted) throw abortReason(abort);
  const seed = new Uint32Array(2);
  crypto.getRandomValues(seed);
  let discovery: WasmDiscovery;
  try {
    discovery = new WasmDiscovery(root.trim(), 0, seed[0] ?? 0, seed[1] ?? 0);
  } catch (err) {
    throw new PpsppError('bad-uri', messageOf(err), { cause: err });
  }
  const asked = new Set<number>();
  type Result = { uri: string; error?: undefined } | { uri?: undefined; error: unknown };
  let finish: (result: Result) => void = () => {};
  const done = new Promise<Result>((resolve) => (finish = resolve));

  const signaling = new SignalingClient(signalUrls, root.trim().toLowerCase(), {
    welcome: (_id, peers) => {
      for (const remote of peers) connections.offer(remote);
    },
    signal: (from, data) => connections.onSignal(from, data),
    peerLeft: (remote) => connections.remoteLeft(remote),
    disconnected: () => {},
    error: () => {},
  }, options.signalingTimeoutMs);
  const connections = new Connections(
    signaling,
    {
      iceServers: options.iceServers,
      maxConnections: options.maxConnections,
      iceTransportPolicy: options.iceTransportPolicy,
      connectTimeoutMs: options.connectTimeoutMs,
      seeder: () => false,
      dataBatchBytes: options.dataBatchBytes,
    },
    {
      open: (handle, _remote, initiator) => {
        if (driver.closed || !initiator) return;
        asked.add(handle);
        discovery.connect(handle, performance.now());
        driver.kick();
      },
      message: (handle, data) => driver.datagram(handle, data),
      closed: (handle) => {
        if (driver.closed) return;
        discovery.peerLost(handle);
        asked.delete(handle);
        driver.kick();
      },
      error: () => {},
    },
  );
  const driver = new Driver(discovery, {
    send: (peer, payload) => connections.send(peer, payload),
    afterSend: check,
  });

  /** After each turn of the loop: done once a peer has described the content, or every one asked has failed. */
  function check(): void {
    // The URI names the server that answered.
    const uri = discovery.uri(signaling.url);
    if (uri !== undefined) {
      finish({ uri });
      return;
    }
    const failure = discovery.failure();
    // Every connection made so far has been asked and has failed: nothing left to wait for.
    if (failure !== undefined && connections.size <= asked.size) {
      finish({ error: new PpsppError('no-peers', `cannot fetch ${root} by its root: ${failure}`, { fatal: true }) });
    }
  }

  const deadline = setTimeout(
    () =>
      finish({
        error: new PpsppError('no-peers', `no peer of swarm ${root} described its content within ${DISCOVERY_TIMEOUT_MS / 1000} s`, {
          fatal: true,
        }),
      }),
    DISCOVERY_TIMEOUT_MS,
  );
  const onAbort = (): void => finish({ error: abortReason(abort as AbortSignal) });
  abort?.addEventListener('abort', onAbort);
  try {
    // The deadline and an abort count while signaling connects too.
    const started = signaling.start().then(
      () => done,
      (err: unknown): Result => ({ error: fatal(err) }),
    );
    const result = await Promise.race([started, done]);
    if (result.uri === undefined) throw result.error;
    return result.uri;
  } finally {
    abort?.removeEventListener('abort', onAbort);
    clearTimeout(deadline);
    // Send the probe channels' closes before the connections go.
    driver.flush();
    driver.close();
    connections.closeAll();
    signaling.close();
    discovery.free();
  }
}
