/**
 * Making a swarm's engine: on the page's main thread (a `WasmPeer`, driven by an
 * `EngineLoop` in the swarm), or in a dedicated Worker (`engineThread: 'worker'`), where
 * its timers, verification and sends do not wait behind the page's own work. Where the
 * browser cannot start the Worker (no module Workers, a Content-Security-Policy that
 * forbids it), the engine runs on the main thread.
 */
import type { EngineRole, EngineSettings, FromEngine, Port, ToEngine } from './engine-protocol.js';
import { PpsppError, messageOf } from './errors.js';
import type { HttpOriginSettings } from './http-origin.js';
import type { ResolvedPeerOptions } from './options.js';
import { makeEngine, wasmOptions } from './engine-make.js';
import { type ContentInfo, type PeerOptions, type WasmPeer, wasmModule } from './wasm.js';
import { WorkerEngine, type WorkerEngineSetup } from './worker-engine.js';

/** What the engine is for, beyond the peer's options. */
export interface EngineExtra {
  vodWindow?: number;
  urgentPriority?: number;
  maxHeldBytes?: number;
}

/** The engine's settings as plain data, for the Worker. */
export function engineSettings(options: ResolvedPeerOptions, extra: EngineExtra = {}): EngineSettings {
  const seed = new Uint32Array(2);
  crypto.getRandomValues(seed);
  return {
    uploadLimit: options.uploadLimit,
    downloadLimit: options.downloadLimit,
    maxPeers: options.maxConnections,
    priority: options.priority,
    urgentPriority: extra.urgentPriority ?? 0,
    vodWindow: extra.vodWindow ?? 0,
    maxHeldBytes: extra.maxHeldBytes ?? 0,
    seedLo: seed[0] ?? 0,
    seedHi: seed[1] ?? 0,
  };
}

/** Wasm engine options from resolved options, for an engine on this thread. */
export function engineOptions(options: ResolvedPeerOptions, extra: EngineExtra = {}): PeerOptions {
  return wasmOptions(engineSettings(options, extra));
}

/** The engine on the main thread; a URI or content the engine refuses throws `code`. */
function mainThreadEngine(options: ResolvedPeerOptions, role: EngineRole, extra: EngineExtra): WasmPeer {
  try {
    return makeEngine(role, engineSettings(options, extra));
  } catch (err) {
    throw new PpsppError(role.kind === 'fetcher' ? 'bad-uri' : 'bad-option', messageOf(err), { cause: err });
  }
}

/** The least bound on held bytes the engine works well with (a full store of requests). */
const LEAST_HELD_BYTES = 1 << 20;

/**
 * An engine in a Worker holds half the bound on held bytes (`maxMemoryBytes`), at least
 * 1 MiB: the page keeps a copy of what it holds (chunk-mirror.ts), and the two together
 * stay within the bound.
 */
export function inWorker(extra: EngineExtra): EngineExtra {
  const bound = extra.maxHeldBytes ?? 0;
  return bound > 0 ? { ...extra, maxHeldBytes: Math.max(LEAST_HELD_BYTES, Math.floor(bound / 2)) } : extra;
}

/** The page's base URL, against which the options' relative URLs are meant. */
function pageBase(): string | undefined {
  return typeof document !== 'undefined' ? document.baseURI : undefined;
}

/** The Wasm module's URL for the Worker: absolute (its base is not the page's), or its default. */
function wasmUrl(wasm: string | URL | undefined): string | undefined {
  return wasm === undefined ? undefined : new URL(wasm, pageBase()).href;
}

/** The HTTP origin with every URL absolute, as the page means them, for the Worker. */
function absoluteOrigin(origin: HttpOriginSettings | null): HttpOriginSettings | null {
  if (!origin) return null;
  const abs = (url: string): string => new URL(url, pageBase()).href;
  const out: HttpOriginSettings = { ...origin, url: abs(origin.url), tree: abs(origin.tree) };
  if (origin.parts) out.parts = origin.parts.map((p) => ({ ...p, url: abs(p.url) }));
  return out;
}

/** What the Worker makes the engine from, every URL absolute. */
function workerSetup<R extends EngineRole>(
  options: ResolvedPeerOptions,
  role: R,
  extra: EngineExtra,
  origin: HttpOriginSettings | null,
  originOnly: boolean,
): WorkerEngineSetup & { role: R } {
  return {
    // The page's compiled module: the Worker instantiates it without fetching or compiling.
    wasm: wasmModule() ?? wasmUrl(options.wasm),
    role,
    settings: engineSettings(options, inWorker(extra)),
    origin: absoluteOrigin(origin),
    originOnly,
  };
}

/**
 * A dedicated Worker for an engine, if the options ask for one and the browser starts it
 * (null: the engine runs on the main thread). Started early, it loads its scripts while
 * the page does the rest of its start; {@link startEngine} takes it over.
 */
export function engineWorker(options: ResolvedPeerOptions): Worker | null {
  if (options.engineThread !== 'worker' || typeof Worker === 'undefined') return null;
  try {
    return new Worker(new URL('./engine-worker.js', import.meta.url), { type: 'module', name: 'ppspp-engine' });
  } catch {
    return null;
  }
}

/**
 * A Worker started ahead for the next engine of a presentation (its next rendition), so
 * that an ABR switch does not wait for a Worker to load its scripts; one at most.
 */
export class SpareWorker {
  private spare: Worker | null = null;
  private closed = false;

  /** The spare, if there is one and `options` want a Worker (else it ends). */
  take(options: ResolvedPeerOptions): Worker | null {
    const w = this.spare;
    this.spare = null;
    if (w && options.engineThread === 'worker') return w;
    w?.terminate();
    return null;
  }

  /** Starts a spare if there is none (and `options` want Workers). */
  prepare(options: ResolvedPeerOptions): void {
    if (!this.closed && !this.spare) this.spare = engineWorker(options);
  }

  close(): void {
    this.closed = true;
    this.spare?.terminate();
    this.spare = null;
  }
}

/**
 * Why a Worker's `error` event fails its engine's start: a script that does not load (a
 * Content-Security-Policy, a bundler that left it out) fails it now, not at its timeout.
 */
function notStarted(ev: ErrorEvent): string {
  return `the engine's Worker did not start: ${ev.message || 'its script did not load'}`;
}

/** A fetcher's engine being started, with what settles when it is made. */
export interface BegunEngine {
  engine: WasmPeer | WorkerEngine;
  /**
   * Resolves once the engine is made (at once on the main thread); rejects with `bad-uri`
   * (the engine refused the URI) or `wasm-load-failed` (the Worker could not make it: the
   * caller may begin again on the main thread, `engineThread: 'main'`). The engine is
   * freed then.
   */
  ready: Promise<void>;
}

/**
 * A fetcher's engine for a new swarm, to use at once: on the main thread it is made now
 * (a URI it refuses throws `bad-uri`); in a Worker (`engineThread: 'worker'` and the
 * browser starts one) it is made while the swarm joins its room and connects, and what
 * the swarm says meanwhile waits for it. `content` is the URI's, read on the page.
 */
export function beginEngine(
  options: ResolvedPeerOptions,
  uri: string,
  content: ContentInfo,
  extra: EngineExtra,
  origin: HttpOriginSettings | null,
  originOnly: boolean,
  started: Worker | null = null,
): BegunEngine {
  const worker = started ?? engineWorker(options);
  if (!worker) return { engine: mainThreadEngine(options, { kind: 'fetcher', uri }, extra), ready: Promise.resolve() };
  const { engine, ready } = WorkerEngine.begin(
    worker as unknown as Port<FromEngine, ToEngine>,
    workerSetup(options, { kind: 'fetcher', uri }, extra, origin, originOnly),
    content,
  );
  worker.addEventListener('error', (ev) => engine.workerFailed(notStarted(ev)), { once: true });
  engine.onFreed(() => worker.terminate());
  return { engine, ready };
}

/**
 * The engine of a new swarm: in a dedicated Worker if the options ask for one and the
 * browser can start it, else here. Rejects with `bad-uri` (a fetcher's URI the engine
 * refuses) or `bad-option` (a seeder's content), as the main thread's engine throws.
 */
export async function startEngine(
  options: ResolvedPeerOptions,
  role: EngineRole,
  extra: EngineExtra,
  origin: HttpOriginSettings | null,
  originOnly: boolean,
  started: Worker | null = null,
): Promise<WasmPeer | WorkerEngine> {
  const worker = started ?? engineWorker(options);
  if (!worker) return mainThreadEngine(options, role, extra);
  // The seeder's bytes go to the Worker; the caller keeps its own.
  const sent: EngineRole = role.kind === 'seeder' ? { ...role, data: role.data.slice() } : role;
  const failed = new AbortController();
  worker.addEventListener('error', (ev) => failed.abort(new PpsppError('wasm-load-failed', notStarted(ev))), { once: true });
  try {
    const engine = await WorkerEngine.start(worker as unknown as Port<FromEngine, ToEngine>, workerSetup(options, sent, extra, origin, originOnly), failed.signal);
    engine.onFreed(() => worker.terminate());
    return engine;
  } catch (err) {
    worker.terminate();
    // What the engine refused, it refuses here too; a Worker that did not start is not
    // the page's problem: the engine runs here instead.
    if (err instanceof PpsppError && (err.code === 'bad-uri' || err.code === 'bad-option')) throw err;
    return mainThreadEngine(options, role, extra);
  }
}
