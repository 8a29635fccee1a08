/**
 * The Wasm engine from plain settings and its role, on the thread that calls: the page's
 * main thread (engine-start.ts) or the engine's Worker (engine-host.ts) make it the same way.
 */
import type { EngineRole, EngineSettings } from './engine-protocol.js';
import { PeerOptions, WasmPeer } from './wasm.js';

/** The Wasm engine's options from plain settings, on this thread's clock. */
export function wasmOptions(s: EngineSettings): PeerOptions {
  const o = new PeerOptions();
  o.upload_limit = s.uploadLimit;
  o.download_limit = s.downloadLimit;
  o.max_peers = s.maxPeers;
  o.priority = s.priority;
  o.urgent_priority = s.urgentPriority;
  o.vod_window = s.vodWindow;
  o.max_held_bytes = s.maxHeldBytes;
  o.stats_interval_ms = 0;
  o.timer_granularity_ms = 4;
  o.seed_lo = s.seedLo;
  o.seed_hi = s.seedHi;
  // DATA timestamps on the Unix epoch, as libswift peers expect; this thread's clock.
  o.time_origin_ms = performance.timeOrigin;
  return o;
}

/** A fetcher of the role's URI, or a seeder of its bytes; throws what the engine refuses. */
export function makeEngine(role: EngineRole, settings: EngineSettings): WasmPeer {
  const o = wasmOptions(settings);
  return role.kind === 'fetcher'
    ? WasmPeer.fetcher(role.uri, o, performance.now())
    : WasmPeer.seeder(role.data, role.chunkSize, role.hash, role.signal, role.name, o, performance.now());
}
