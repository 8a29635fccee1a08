/**
 * What a swarm asks of its engine's side, wherever that runs: `EngineLoop` on the page's
 * main thread, or `WorkerEngine` for one in a dedicated Worker. Commands return nothing;
 * reads answer from the engine's state as the page last learnt it; the checks of live
 * parts answer asynchronously.
 */
import type { EngineLoopStats } from './engine-loop.js';

export interface SwarmEngine {
  datagram(peer: number, data: Uint8Array): void;
  /**
   * Takes the data channel to `peer` over, unused, if this side can (a Worker the browser
   * transfers it to): true if it did; it then says when the channel opens and ends, and
   * sends and receives on it.
   */
  adopt(peer: number, channel: RTCDataChannel): boolean;
  /** Messages this side dropped on channels it took over. */
  messagesDropped(): number;
  kick(): void;
  connect(peer: number): void;
  peerLost(peer: number): void;
  setOrigin(peer: number, origin: boolean): void;
  /** Chunks to `peer` may share messages of up to `maxLen` bytes; see `Engine::set_data_batching`. */
  setDataBatching(peer: number, maxLen: number): void;
  setPeersComing(on: boolean): void;
  setUploading(on: boolean): void;
  setReadAhead(chunks: number, fromHttp: number): void;
  setPlayhead(chunk: number): void;
  setWaitingFor(start: number, end: number, slackMs: number): void;
  openSaved(quotaBytes: number): Promise<void>;
  checkLivePart(record: Record<string, unknown>): Promise<void>;
  handleLivePart(record: Record<string, unknown>, data: Uint8Array): Promise<number>;
  peersHolding(chunk: number): Promise<number>;
  liveInitMatches(length: number, hash: string, data: Uint8Array): Promise<boolean>;
  isComplete(): boolean;
  hasHttpOrigin(): boolean;
  stats(): EngineLoopStats;
  firstMissing(chunk: number): number;
  wantedEnd(): number;
  read(start: number, end: number): Uint8Array;
  readChunk(chunk: number): Uint8Array | undefined;
  /** Verified chunk ranges, flat: `[start, end, start, end, …]`. */
  haveRanges(): ArrayLike<number>;
  liveEdge(): number;
  liveFloor(): number;
  leave(): void;
  free(): void;
}
