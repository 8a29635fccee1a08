/**
 * A swarm's engine side in a dedicated Worker, as the page's swarm sees it: the same
 * commands as an `EngineLoop`, posted; its reads answered from the page's mirror
 * (chunk-mirror.ts) and the state the Worker posts with each turn; the checks of live
 * parts answered asynchronously. Datagrams come from the Worker to send (where the data
 * channel stayed in the page) and go to it as they arrive.
 */
import { ChunkMirror } from './chunk-mirror.js';
import type { EngineLoopHooks, EngineLoopStats } from './engine-loop.js';
import type { EngineRole, EngineSettings, EngineState, FromEngine, Port, ToEngine, WasmSource } from './engine-protocol.js';
import { PpsppError } from './errors.js';
import type { HttpOriginSettings } from './http-origin.js';
import { type ContentInfo, ENGINE_STATS_FIELDS, type EngineStats } from './wasm.js';

/** How long the Worker may take to load the Wasm module and make the engine. */
export const ENGINE_START_TIMEOUT_MS = 20_000;

export interface WorkerEngineSetup {
  wasm: WasmSource;
  role: EngineRole;
  settings: EngineSettings;
  origin: HttpOriginSettings | null;
  originOnly: boolean;
}

/** The figures of an engine not made yet: nothing held, nothing sent. */
function nothingYet(content: ContentInfo): EngineLoopStats {
  const engine = Object.fromEntries(Object.keys(ENGINE_STATS_FIELDS).map((k) => [k, 0])) as unknown as EngineStats;
  engine.chunkCount = content.live ? 0 : Math.ceil(content.length / content.chunkSize);
  return { engine, channels: [], chunksSaved: 0, bytesSaved: 0 };
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

export class WorkerEngine {
  private readonly uriValue: string;
  readonly content: ContentInfo;
  private readonly mirror: ChunkMirror;
  private state: EngineState;
  private lastStats: EngineLoopStats;
  private hooks: EngineLoopHooks | null = null;
  /** Turns that came before {@link attach}: passed on at once when it is called. */
  private early: Extract<FromEngine, { t: 'turn' }>[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private left = false;
  private freed = false;
  private freedHooks: (() => void)[] = [];
  private dropped = 0;

  /** While the Worker makes an engine begun with {@link begin}: what settles its start. */
  private starting: { settle(failure: PpsppError | null): void } | null = null;

  private constructor(
    private readonly port: Port<FromEngine, ToEngine>,
    ready: Extract<FromEngine, { t: 'ready' }>,
  ) {
    this.uriValue = ready.uri;
    this.content = ready.content;
    this.state = ready.state;
    this.lastStats = ready.stats;
    this.mirror = new ChunkMirror(ready.content.chunkSize, ready.content.length);
    this.mirror.setHave(ready.state.have);
    port.onmessage = (ev) => this.handle(ev.data);
  }

  /**
   * Starts a fetcher's engine in the Worker and returns it at once, so that the swarm
   * joins its room and connects while the Worker loads: until the Worker says the engine
   * is made, reads answer as for an engine that holds nothing yet, and what the swarm
   * says waits in the Worker for the engine. `ready` settles as {@link start} does; when
   * it rejects, the engine is freed.
   */
  static begin(
    port: Port<FromEngine, ToEngine>,
    setup: WorkerEngineSetup & { role: { kind: 'fetcher' } },
    content: ContentInfo,
  ): { engine: WorkerEngine; ready: Promise<void> } {
    const live = content.live !== undefined;
    const engine = new WorkerEngine(port, {
      t: 'ready',
      uri: setup.role.uri,
      content,
      state: {
        have: [],
        wantedEnd: 0,
        liveEdge: live ? 0 : -1,
        liveFloor: live ? 0 : -1,
        complete: false,
        hasHttpOrigin: setup.origin !== null,
      },
      stats: nothingYet(content),
    });
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => engine.starting?.settle(new PpsppError('wasm-load-failed', `the engine's Worker did not start within ${ENGINE_START_TIMEOUT_MS / 1000} s`)),
        ENGINE_START_TIMEOUT_MS,
      );
      engine.starting = {
        settle: (failure) => {
          clearTimeout(timer);
          engine.starting = null;
          if (!failure) {
            resolve();
            return;
          }
          engine.free(failure);
          reject(failure);
        },
      };
    });
    port.postMessage({ t: 'init', ...setup });
    return { engine, ready };
  }

  /** The Worker could not start (its script did not load): the start fails now, not at the timeout. */
  workerFailed(message: string): void {
    this.starting?.settle(new PpsppError('wasm-load-failed', message));
  }

  /**
   * Starts the engine in the Worker at the other end of `port`; resolves once it is made,
   * rejects with `bad-uri` or `bad-option` (the engine refused the URI or content, with
   * its reason), or `wasm-load-failed` (the Worker could not make it, or did not answer
   * within {@link ENGINE_START_TIMEOUT_MS}); or with `failed`'s reason once it is aborted
   * (the Worker's script did not load).
   */
  static start(port: Port<FromEngine, ToEngine>, setup: WorkerEngineSetup, failed?: AbortSignal): Promise<WorkerEngine> {
    return new Promise((resolve, reject) => {
      const fail = (err: unknown): void => {
        clearTimeout(timer);
        failed?.removeEventListener('abort', aborted);
        port.onmessage = null;
        reject(err);
      };
      const aborted = (): void => fail(failed?.reason);
      const timer = setTimeout(
        () => fail(new PpsppError('wasm-load-failed', `the engine's Worker did not start within ${ENGINE_START_TIMEOUT_MS / 1000} s`)),
        ENGINE_START_TIMEOUT_MS,
      );
      if (failed?.aborted) {
        aborted();
        return;
      }
      failed?.addEventListener('abort', aborted, { once: true });
      port.onmessage = (ev) => {
        const m = ev.data;
        if (m.t === 'ready') {
          clearTimeout(timer);
          failed?.removeEventListener('abort', aborted);
          resolve(new WorkerEngine(port, m));
        } else if (m.t === 'failed') {
          const refused = setup.role.kind === 'fetcher' ? 'bad-uri' : 'bad-option';
          fail(new PpsppError(m.refused ? refused : 'wasm-load-failed', m.message));
        }
      };
      const transfer = setup.role.kind === 'seeder' ? [setup.role.data.buffer] : [];
      port.postMessage({ t: 'init', ...setup }, transfer);
    });
  }

  /** The swarm's URI (as `WasmPeer.uri`). */
  uri(): string {
    return this.uriValue;
  }

  /** Runs `f` once the engine is freed (the Worker may end then). */
  onFreed(f: () => void): void {
    if (this.freed) f();
    else this.freedHooks.push(f);
  }

  /** Where its datagrams, events and fallbacks go; turns that came before are passed on now. */
  attach(hooks: EngineLoopHooks): void {
    this.hooks = hooks;
    for (const turn of this.early.splice(0)) this.turn(turn);
  }

  private post(m: ToEngine, transfer: Transferable[] = []): void {
    if (!this.freed) this.port.postMessage(m, transfer);
  }

  private handle(m: FromEngine): void {
    if (this.freed) return;
    switch (m.t) {
      case 'send':
        this.hooks?.send(m.peer, m.data);
        break;
      case 'turn':
        if (this.hooks) this.turn(m);
        else this.early.push(m);
        break;
      case 'storage-fallback':
        this.hooks?.storageFallback(m.fallback);
        break;
      case 'channel-opened':
        this.hooks?.channelOpened?.(m.peer);
        break;
      case 'channel-ended':
        this.hooks?.channelEnded?.(m.peer);
        break;
      case 'reply':
        this.settle(m.id, (p) => p.resolve(m.value));
        break;
      case 'refused':
        this.settle(m.id, (p) => p.reject(new Error(m.message)));
        break;
      case 'ready':
        if (!this.starting) break;
        this.state = m.state;
        this.lastStats = m.stats;
        this.mirror.setHave(m.state.have);
        this.starting.settle(null);
        break;
      case 'failed':
        this.starting?.settle(new PpsppError(m.refused ? 'bad-uri' : 'wasm-load-failed', m.message));
        break;
      default: {
        const unhandled: never = m;
        void unhandled;
      }
    }
  }

  private settle(id: number, f: (p: Pending) => void): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    f(p);
  }

  private turn(m: Extract<FromEngine, { t: 'turn' }>): void {
    // Bytes first: a chunk-verified event may be read at once.
    for (const { first, data } of m.chunks) this.mirror.add(first, data);
    if (m.state) {
      this.state = m.state;
      this.mirror.setHave(m.state.have);
    }
    if (m.stats) this.lastStats = m.stats;
    this.dropped = m.dropped;
    for (const { event, bytes } of m.events) {
      if (this.freed) return;
      this.hooks?.event(event, bytes);
    }
  }

  /** Asks the Worker; settles with its answer, or rejects with `closed` once the engine is freed. */
  private request<T>(m: (id: number) => ToEngine, transfer: Transferable[] = []): Promise<T> {
    if (this.freed) return Promise.reject(new PpsppError('closed', 'the swarm was left'));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.post(m(id), transfer);
    });
  }

  /**
   * Transfers the data channel to `peer`, not used yet, to the Worker; false where the
   * browser cannot transfer it (Firefox: one that came from the remote), and the page
   * relays its datagrams instead.
   */
  adopt(peer: number, channel: RTCDataChannel): boolean {
    if (this.freed) return false;
    try {
      this.port.postMessage({ t: 'channel', peer, channel }, [channel as unknown as Transferable]);
      return true;
    } catch {
      return false;
    }
  }

  messagesDropped(): number {
    return this.dropped;
  }

  datagram(peer: number, data: Uint8Array): void {
    this.post({ t: 'datagram', peer, data }, [data.buffer]);
  }

  kick(): void {
    this.post({ t: 'kick' });
  }

  connect(peer: number): void {
    this.post({ t: 'connect', peer });
  }

  peerLost(peer: number): void {
    this.post({ t: 'peer-lost', peer });
  }

  setOrigin(peer: number, on: boolean): void {
    this.post({ t: 'set-origin', peer, on });
  }

  setDataBatching(peer: number, maxLen: number): void {
    this.post({ t: 'data-batching', peer, maxLen });
  }

  /** Connections being set up, or not (see `Engine::set_peers_coming`); the Worker keeps the last. */
  setPeersComing(on: boolean): void {
    this.post({ t: 'peers-coming', on });
  }

  setUploading(on: boolean): void {
    this.post({ t: 'uploading', on });
  }

  setReadAhead(chunks: number, fromHttp: number): void {
    this.post({ t: 'read-ahead', chunks, fromHttp });
  }

  setPlayhead(chunk: number): void {
    this.post({ t: 'playhead', chunk });
  }

  setWaitingFor(start: number, end: number, slackMs: number): void {
    this.post({ t: 'waiting-for', start, end, slackMs });
  }

  openSaved(quotaBytes: number): Promise<void> {
    return this.request((id) => ({ t: 'open-saved', id, quotaBytes }));
  }

  checkLivePart(record: Record<string, unknown>): Promise<void> {
    return this.request((id) => ({ t: 'check-live-part', id, record }));
  }

  handleLivePart(record: Record<string, unknown>, data: Uint8Array): Promise<number> {
    return this.request((id) => ({ t: 'handle-live-part', id, record, data }));
  }

  peersHolding(chunk: number): Promise<number> {
    return this.request((id) => ({ t: 'peers-holding', id, chunk }));
  }

  liveInitMatches(length: number, hash: string, data: Uint8Array): Promise<boolean> {
    return this.request((id) => ({ t: 'live-init-matches', id, length, hash, data }));
  }

  isComplete(): boolean {
    return this.state.complete;
  }

  hasHttpOrigin(): boolean {
    return this.state.hasHttpOrigin;
  }

  /** The figures of the Worker's last report (at most about 100 ms old). */
  stats(): EngineLoopStats {
    return this.lastStats;
  }

  firstMissing(chunk: number): number {
    return this.mirror.firstMissing(chunk);
  }

  wantedEnd(): number {
    return this.state.wantedEnd;
  }

  read(start: number, end: number): Uint8Array {
    return this.mirror.read(start, end);
  }

  readChunk(chunk: number): Uint8Array | undefined {
    return this.mirror.readChunk(chunk);
  }

  haveRanges(): readonly number[] {
    return this.mirror.haveRanges();
  }

  liveEdge(): number {
    return this.state.liveEdge;
  }

  liveFloor(): number {
    return this.state.liveFloor;
  }

  /** The engine says goodbye to its peers; the page's copy stays readable until {@link free}. */
  leave(): void {
    if (this.left) return;
    this.left = true;
    this.post({ t: 'leave' });
  }

  /** Frees the engine in the Worker; pending requests reject with `closed` (or why it could not start). */
  free(failure: PpsppError | null = null): void {
    if (this.freed) return;
    this.leave();
    this.post({ t: 'free' });
    this.freed = true;
    const why = failure ?? new PpsppError('closed', 'the swarm was left');
    for (const p of this.pending.values()) p.reject(why);
    this.pending.clear();
    for (const f of this.freedHooks.splice(0)) f();
  }
}
