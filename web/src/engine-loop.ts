/**
 * The engine's side of a swarm: the engine (Wasm), the loop that drives it (driver.ts), its
 * HTTP origin and its saved chunks. The swarm (swarm.ts) keeps the page's side: signaling,
 * the WebRTC connections, and the events users see. What passes between the two is a
 * command, a datagram, or an engine event (plain data), so that this side can run apart
 * from the page's main thread.
 */
import { Driver } from './driver.js';
import { HttpOrigin, type HttpOriginSettings } from './http-origin.js';
import { SavedChunks, type StorageFallback } from './saved-chunks.js';
import type { ChannelStats, ContentInfo, EngineEvent, EngineStats, WasmPeer } from './wasm.js';

export interface EngineLoopHooks {
  /** Hands one datagram to `peer`'s data channel. */
  send(peer: number, payload: Uint8Array): void;
  /**
   * One engine event, with the bytes of the chunk it names (0 for events that name none).
   * It may close the loop; the turn then ends there.
   */
  event(event: EngineEvent, chunkBytes: number): void;
  /** Saving chunks stopped (`storage: 'opfs'`); the swarm goes on in memory. */
  storageFallback(f: StorageFallback): void;
  /** A turn of the loop ended (its datagrams sent, its events passed on). */
  turnEnded?(): void;
  /** A data channel the engine took over opened (see `SwarmEngine.adopt`). */
  channelOpened?(peer: number): void;
  /** A data channel the engine took over ended. */
  channelEnded?(peer: number): void;
}

export interface EngineLoopSetup {
  content: ContentInfo;
  /** The HTTP origin, if any. */
  origin: HttpOriginSettings | null;
  /** Nothing but the HTTP origin can deliver (no signaling server, or P2P for later). */
  originOnly: boolean;
}

/** The engine's figures, its channels', and those of the saved chunks. */
export interface EngineLoopStats {
  engine: EngineStats;
  channels: ChannelStats[];
  chunksSaved: number;
  bytesSaved: number;
}

export class EngineLoop {
  private readonly driver: Driver;
  private readonly origin: HttpOrigin | null;
  private saved: SavedChunks | null = null;
  /** Set by {@link free}: the engine is gone, and nothing may call it. */
  private freed = false;
  /** Connections to peers are being set up (see `Engine::set_peers_coming`). */
  private peersComing = false;

  constructor(
    private readonly engine: WasmPeer,
    private readonly setup: EngineLoopSetup,
    private readonly hooks: EngineLoopHooks,
  ) {
    this.driver = new Driver(engine, {
      send: (peer, payload) => this.hooks.send(peer, payload),
      afterSend: () => this.afterSend(),
    });
    this.origin = setup.origin && new HttpOrigin(engine, setup.origin, () => this.driver.kick(), setup.originOnly);
  }

  /** Opens the saved chunks (`storage: 'opfs'`), named to the engine before anyone is asked. */
  async openSaved(quotaBytes: number): Promise<void> {
    const saved = await SavedChunks.open(
      this.setup.content.root,
      this.engine,
      this.setup.content,
      quotaBytes,
      () => this.driver.kick(),
      (f) => this.hooks.storageFallback(f),
      () => !this.freed,
    );
    if (this.freed) saved?.close();
    else this.saved = saved;
  }

  /** The engine's events since the last turn, then the saved chunks' and the origin's work. */
  private afterSend(): void {
    for (;;) {
      const event = this.engine.pollEvent() as EngineEvent | undefined;
      if (event === undefined) break;
      let bytes = 0;
      if (event.type === 'chunk-verified' || event.type === 'origin-chunk' || event.type === 'chunk-restored') {
        bytes = this.chunkBytes(event.chunk);
        // Saved as it comes, from peers or the origin (read-back chunks are saved already).
        if (event.type !== 'chunk-restored') this.saved?.save(event.chunk);
      }
      this.hooks.event(event, bytes);
      if (this.driver.closed) return;
    }
    this.saved?.pump();
    if (this.origin) {
      this.engine.setPeersComing(this.peersComing);
      this.origin.pump();
    }
    this.hooks.turnEnded?.();
  }

  /** Bytes in `chunk` (the last one may be short, and a live chunk where a segment ends). */
  private chunkBytes(chunk: number): number {
    const { chunkSize, length, live } = this.setup.content;
    if (live) return this.engine.chunkLength(chunk) || chunkSize;
    return Math.min(chunkSize, length - chunk * chunkSize);
  }

  /** On the main thread the page's connections keep their channels. */
  adopt(): boolean {
    return false;
  }

  messagesDropped(): number {
    return 0;
  }

  /** One datagram from `peer`. */
  datagram(peer: number, data: Uint8Array): void {
    this.driver.datagram(peer, data);
  }

  /** Runs the loop soon (after any input that is not a datagram). */
  kick(): void {
    this.driver.kick();
  }

  /** A data channel we opened is up: the engine says hello over it. */
  connect(peer: number): void {
    if (this.driver.closed) return;
    this.engine.connect(peer, performance.now());
    this.driver.kick();
  }

  peerLost(peer: number): void {
    if (this.driver.closed) return;
    this.engine.peerLost(peer);
    this.driver.kick();
  }

  /** Marks `peer` an origin (a seeder asked only for what is due); see `Engine::set_origin`. */
  setOrigin(peer: number, origin: boolean): void {
    if (!this.driver.closed) this.engine.setOrigin(peer, origin);
  }

  /** Chunks to `peer` may share messages of up to `maxLen` bytes (0: one each); see `Engine::set_data_batching`. */
  setDataBatching(peer: number, maxLen: number): void {
    if (!this.driver.closed) this.engine.setDataBatching(peer, maxLen);
  }

  /** Whether connections to peers are being set up now; given to the engine each turn. */
  setPeersComing(on: boolean): void {
    this.peersComing = on;
  }

  setUploading(on: boolean): void {
    if (this.driver.closed) return;
    this.engine.setUploading(on);
    this.driver.kick();
  }

  setReadAhead(chunks: number, fromHttp: number): void {
    if (this.driver.closed) return;
    this.engine.setReadAhead(chunks, fromHttp);
    this.driver.kick();
  }

  setPlayhead(chunk: number): void {
    if (this.driver.closed) return;
    this.engine.setPlayhead(chunk);
    this.driver.kick();
  }

  /** Playback waits for chunks `start..end` (`start` -1: it does not), and may wait for peers for `slackMs` (-1 or 0: may not). */
  setWaitingFor(start: number, end: number, slackMs: number): void {
    if (this.driver.closed) return;
    this.engine.setWaitingFor(start, end, slackMs, performance.now());
    this.driver.kick();
  }

  /**
   * A live part (its manifest record), checked against the stream's rendition key; throws
   * the engine's reason if it is not signed, recently.
   */
  async checkLivePart(record: Record<string, unknown>): Promise<void> {
    this.engine.checkLivePart(record, performance.now());
  }

  /** The segment of a live part: checked and kept; resolves with the chunks that were new. */
  async handleLivePart(record: Record<string, unknown>, data: Uint8Array): Promise<number> {
    const kept = this.engine.handleLivePart(record, data, performance.now());
    this.driver.kick();
    return kept;
  }

  isComplete(): boolean {
    return this.engine.isComplete();
  }

  hasHttpOrigin(): boolean {
    return this.engine.hasHttpOrigin();
  }

  stats(): EngineLoopStats {
    return {
      engine: this.engine.stats() as EngineStats,
      channels: this.engine.channelStats() as ChannelStats[],
      chunksSaved: this.saved?.count ?? 0,
      bytesSaved: this.saved?.bytes ?? 0,
    };
  }

  firstMissing(chunk: number): number {
    return this.engine.firstMissing(chunk);
  }

  wantedEnd(): number {
    return this.engine.wantedEnd();
  }

  read(start: number, end: number): Uint8Array {
    return this.engine.read(start, end);
  }

  readChunk(chunk: number): Uint8Array | undefined {
    return this.engine.readChunk(chunk);
  }

  /** Verified chunk ranges, flat: `[start, end, start, end, …]`. */
  haveRanges(): ArrayLike<number> {
    return this.engine.haveRanges();
  }

  liveEdge(): number {
    return this.engine.liveEdge();
  }

  liveFloor(): number {
    return this.engine.liveFloor();
  }

  async peersHolding(chunk: number): Promise<number> {
    return this.engine.peersHolding(chunk);
  }

  async liveInitMatches(length: number, hash: string, data: Uint8Array): Promise<boolean> {
    return this.engine.liveInitMatches(length, hash, data);
  }

  /**
   * Says goodbye to every peer (explicit closes, sent now while the channels stand) and
   * stops the loop. Figures and chunks can still be read until {@link free}.
   */
  leave(): void {
    if (this.driver.closed) return;
    this.engine.closeAll();
    this.driver.flush(1024);
    this.driver.close();
  }

  /** Stops the origin's requests and the saved chunks' writes, and frees the engine. */
  free(): void {
    if (this.freed) return;
    this.leave();
    this.freed = true;
    this.origin?.close();
    this.saved?.close();
    this.engine.free();
  }
}
