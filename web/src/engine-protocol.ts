/**
 * The messages between a swarm in the page and its engine's side in a dedicated Worker
 * (worker-engine.ts ↔ engine-host.ts). Every one is plain data (structured clone), with
 * datagram and chunk buffers transferred rather than copied.
 */
import type { EngineLoopStats } from './engine-loop.js';
import type { HttpOriginSettings } from './http-origin.js';
import type { StorageFallback } from './saved-chunks.js';
import type { ContentInfo, EngineEvent } from './wasm.js';

/** The engine's settings as plain data (the Worker builds the Wasm `PeerOptions` from them, on its own clock). */
export interface EngineSettings {
  uploadLimit: number;
  downloadLimit: number;
  maxPeers: number;
  priority: number;
  urgentPriority: number;
  vodWindow: number;
  maxHeldBytes: number;
  seedLo: number;
  seedHi: number;
}

/** What the engine is: a fetcher of a URI, or a seeder of bytes it hashes. */
export type EngineRole =
  | { kind: 'fetcher'; uri: string }
  | { kind: 'seeder'; data: Uint8Array; chunkSize: number; hash: 'sha1' | 'sha256'; signal: string | null; name: string | null };

/** Where the Wasm module comes from (as `loadWasm` takes it): the page's compiled module, cloned, or a URL. */
export type WasmSource = string | WebAssembly.Module | undefined;

/** The page → the Worker. */
export type ToEngine =
  | {
      t: 'init';
      wasm: WasmSource;
      role: EngineRole;
      settings: EngineSettings;
      origin: HttpOriginSettings | null;
      originOnly: boolean;
    }
  | { t: 'datagram'; peer: number; data: Uint8Array }
  /** The data channel to `peer`, transferred before it was used: the engine sends and receives on it from now on. */
  | { t: 'channel'; peer: number; channel: RTCDataChannel }
  | { t: 'kick' }
  | { t: 'connect'; peer: number }
  | { t: 'peer-lost'; peer: number }
  | { t: 'set-origin'; peer: number; on: boolean }
  | { t: 'data-batching'; peer: number; maxLen: number }
  | { t: 'peers-coming'; on: boolean }
  | { t: 'uploading'; on: boolean }
  | { t: 'read-ahead'; chunks: number; fromHttp: number }
  | { t: 'playhead'; chunk: number }
  | { t: 'waiting-for'; start: number; end: number; slackMs: number }
  | { t: 'open-saved'; id: number; quotaBytes: number }
  | { t: 'check-live-part'; id: number; record: Record<string, unknown> }
  | { t: 'handle-live-part'; id: number; record: Record<string, unknown>; data: Uint8Array }
  | { t: 'peers-holding'; id: number; chunk: number }
  | { t: 'live-init-matches'; id: number; length: number; hash: string; data: Uint8Array }
  | { t: 'leave' }
  | { t: 'free' };

/** The engine's state the page mirrors for its synchronous reads. */
export interface EngineState {
  /** Verified chunk ranges, flat: `[start, end, start, end, …]`. */
  have: number[];
  wantedEnd: number;
  liveEdge: number;
  liveFloor: number;
  complete: boolean;
  hasHttpOrigin: boolean;
}

/**
 * Verified chunks from `first` on, one after another: each of the content's chunk size
 * but the last, which may be shorter (the content's last chunk, or a live chunk).
 */
export interface ChunkBytes {
  first: number;
  data: Uint8Array;
}

/** The Worker → the page. */
export type FromEngine =
  | { t: 'ready'; uri: string; content: ContentInfo; state: EngineState; stats: EngineLoopStats }
  /** No engine: `refused`, the engine refused the URI or content (else the Worker could not make it). */
  | { t: 'failed'; refused: boolean; message: string }
  | { t: 'send'; peer: number; data: Uint8Array }
  | {
      t: 'turn';
      /** The engine's events of the turns since the last message, in order, each with the bytes of its chunk. */
      events: { event: EngineEvent; bytes: number }[];
      /** Verified chunks' bytes, for the page's reads. */
      chunks: ChunkBytes[];
      /** The state, when it changed in the turn. */
      state: EngineState | null;
      /** The figures, now and then. */
      stats: EngineLoopStats | null;
      /** Messages dropped on transferred channels so far (their buffers full, or closed). */
      dropped: number;
    }
  | { t: 'storage-fallback'; fallback: StorageFallback }
  /** A transferred data channel opened. */
  | { t: 'channel-opened'; peer: number }
  /** A transferred data channel closed (the remote left, or the connection failed). */
  | { t: 'channel-ended'; peer: number }
  | { t: 'reply'; id: number; value: unknown }
  | { t: 'refused'; id: number; message: string };

/** What carries the messages (a Worker, its scope, or a MessagePort in the tests). */
export interface Port<In, Out> {
  postMessage(message: Out, transfer?: Transferable[]): void;
  onmessage: ((ev: MessageEvent<In>) => void) | null;
  /** Ends the Worker (its scope's `close`), or the port. */
  close?(): void;
}
