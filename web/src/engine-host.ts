/**
 * The engine's side of a swarm in a dedicated Worker: the `EngineLoop` (engine, loop, HTTP
 * origin, saved chunks) driven by the page's messages (engine-protocol.ts). What the
 * loop's turns produce goes to the page in one message (turns close together share
 * one): the engine's events, the bytes of the chunks verified, and the state the page
 * reads synchronously, when it changed.
 */
import { ChannelSender, type SendCounts } from './channel-sender.js';
import { EngineLoop, type EngineLoopHooks, type EngineLoopStats } from './engine-loop.js';
import type { ChunkBytes, EngineState, FromEngine, Port, ToEngine } from './engine-protocol.js';
import { messageOf } from './errors.js';
import { makeEngine } from './engine-make.js';
import { type ContentInfo, type EngineEvent, type WasmPeer, loadWasm, parseUriLoaded } from './wasm.js';

/** The figures go to the page this often (and when the content completes). */
const STATS_EVERY_MS = 100;

/** A turn's results wait at most this long to go to the page with the next turns'. */
const POST_EVERY_MS = 2;

function sameRanges(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class EngineHost {
  private engine: WasmPeer | null = null;
  private loop: EngineLoop | null = null;
  private content: ContentInfo | null = null;
  private events: { event: EngineEvent; bytes: number }[] = [];
  /** Chunks verified since the last message: their bytes go to the page with the next. */
  private verified: number[] = [];
  private state: EngineState | null = null;
  private statsAt = -Infinity;
  /** When the last turn's message went, and the timer of one that waits. */
  private postedAt = -Infinity;
  private postTimer: ReturnType<typeof setTimeout> | null = null;
  /** Data channels transferred here, by peer, and what was sent and dropped on them. */
  private readonly channels = new Map<number, { channel: RTCDataChannel; sender: ChannelSender }>();
  private readonly counts: SendCounts = { sent: 0, dropped: 0 };
  /** Messages that came while the engine was being made (null: not starting). */
  private starting: ToEngine[] | null = null;

  constructor(private readonly port: Port<ToEngine, FromEngine>) {
    port.onmessage = (ev) => this.handle(ev.data);
  }

  private post(message: FromEngine, transfer: Transferable[] = []): void {
    this.port.postMessage(message, transfer);
  }

  private handle(m: ToEngine): void {
    if (m.t === 'init') {
      void this.init(m);
      return;
    }
    // The page goes on while the engine starts here: what it says meanwhile waits for it.
    if (this.starting) {
      this.starting.push(m);
      return;
    }
    const loop = this.loop;
    if (!loop) return;
    switch (m.t) {
      case 'datagram':
        loop.datagram(m.peer, m.data);
        break;
      case 'channel':
        this.adopt(m.peer, m.channel, loop);
        break;
      case 'kick':
        loop.kick();
        break;
      case 'connect':
        loop.connect(m.peer);
        break;
      case 'peer-lost':
        this.closeChannel(m.peer);
        loop.peerLost(m.peer);
        break;
      case 'set-origin':
        loop.setOrigin(m.peer, m.on);
        break;
      case 'data-batching':
        loop.setDataBatching(m.peer, m.maxLen);
        break;
      case 'peers-coming':
        loop.setPeersComing(m.on);
        loop.kick();
        break;
      case 'uploading':
        loop.setUploading(m.on);
        break;
      case 'read-ahead':
        loop.setReadAhead(m.chunks, m.fromHttp);
        break;
      case 'playhead':
        loop.setPlayhead(m.chunk);
        break;
      case 'waiting-for':
        loop.setWaitingFor(m.start, m.end, m.slackMs);
        break;
      case 'open-saved':
        this.answer(m.id, loop.openSaved(m.quotaBytes));
        break;
      case 'check-live-part':
        this.answer(m.id, loop.checkLivePart(m.record));
        break;
      case 'handle-live-part':
        this.answer(m.id, loop.handleLivePart(m.record, m.data));
        break;
      case 'peers-holding':
        this.answer(m.id, loop.peersHolding(m.chunk));
        break;
      case 'live-init-matches':
        this.answer(m.id, loop.liveInitMatches(m.length, m.hash, m.data));
        break;
      case 'leave':
        loop.leave();
        this.endTurn(true);
        break;
      case 'free':
        if (this.postTimer !== null) clearTimeout(this.postTimer);
        this.postTimer = null;
        for (const peer of [...this.channels.keys()]) this.closeChannel(peer);
        this.loop = null;
        this.engine = null;
        loop.free();
        this.port.close?.();
        break;
      default: {
        const unhandled: never = m;
        void unhandled;
      }
    }
  }

  /** Replies to request `id` with what `answer` resolves with, or refuses it with why it rejects. */
  private answer(id: number, answer: Promise<unknown>): void {
    answer.then(
      (value) => this.post({ t: 'reply', id, value: value ?? null }),
      (err: unknown) => this.post({ t: 'refused', id, message: messageOf(err) }),
    );
  }

  private async init(m: Extract<ToEngine, { t: 'init' }>): Promise<void> {
    this.starting = [];
    const made = await this.make(m);
    const waiting = this.starting;
    this.starting = null;
    if (!made) {
      // Nothing will use the channels the page handed over meanwhile.
      for (const w of waiting) if (w.t === 'channel') w.channel.close();
      return;
    }
    for (const w of waiting) this.handle(w);
  }

  /** Makes the engine and its loop and says so (`ready`), or says why not (`failed`). */
  private async make(m: Extract<ToEngine, { t: 'init' }>): Promise<boolean> {
    try {
      await loadWasm(m.wasm);
    } catch (err) {
      this.post({ t: 'failed', refused: false, message: messageOf(err) });
      return false;
    }
    let engine: WasmPeer;
    try {
      engine = makeEngine(m.role, m.settings);
    } catch (err) {
      this.post({ t: 'failed', refused: true, message: messageOf(err) });
      return false;
    }
    const uri = engine.uri();
    const content = parseUriLoaded(uri);
    let loop: EngineLoop;
    try {
      loop = new EngineLoop(engine, { content, origin: m.origin, originOnly: m.originOnly }, this.hooks());
    } catch (err) {
      engine.free();
      this.post({ t: 'failed', refused: false, message: messageOf(err) });
      return false;
    }
    this.engine = engine;
    this.loop = loop;
    this.content = content;
    const state = this.snapshot();
    this.state = state;
    this.statsAt = performance.now();
    this.post({ t: 'ready', uri, content, state, stats: loop.stats() });
    return true;
  }

  /** What the loop does with its datagrams, events and fallbacks here. */
  private hooks(): EngineLoopHooks {
    return {
      send: (peer, payload) => {
        const own = this.channels.get(peer);
        if (own) own.sender.send(payload);
        else this.post({ t: 'send', peer, data: payload }, [payload.buffer]);
      },
      event: (event, bytes) => this.onEvent(event, bytes),
      storageFallback: (fallback) => this.post({ t: 'storage-fallback', fallback }),
      turnEnded: () => this.endTurn(false),
    };
  }

  /** Sends and receives on `channel` from now on; its opening and end go to the page. */
  private adopt(peer: number, channel: RTCDataChannel, loop: EngineLoop): void {
    channel.binaryType = 'arraybuffer';
    const sender = new ChannelSender(channel, this.counts);
    this.channels.set(peer, { channel, sender });
    channel.onopen = () => this.post({ t: 'channel-opened', peer });
    if (channel.readyState === 'open') this.post({ t: 'channel-opened', peer });
    channel.onmessage = (ev: MessageEvent) => {
      if (ev.data instanceof ArrayBuffer) loop.datagram(peer, new Uint8Array(ev.data));
    };
    channel.onclose = () => {
      if (this.channels.get(peer)?.channel !== channel) return;
      this.channels.delete(peer);
      sender.clear();
      this.post({ t: 'channel-ended', peer });
    };
  }

  /** Closes the channel to `peer` if it is here (the page let the peer go). */
  private closeChannel(peer: number): void {
    const own = this.channels.get(peer);
    if (!own) return;
    this.channels.delete(peer);
    own.sender.clear();
    own.channel.onopen = null;
    own.channel.onmessage = null;
    own.channel.onclose = null;
    own.channel.close();
  }

  private onEvent(event: EngineEvent, bytes: number): void {
    this.events.push({ event, bytes });
    if (event.type === 'chunk-verified' || event.type === 'origin-chunk' || event.type === 'chunk-restored') {
      this.verified.push(event.chunk);
    }
  }

  /**
   * The bytes of the chunks verified since the last message, read out of the engine a
   * run of consecutive chunks at a time: one copy out of Wasm and one buffer transferred
   * per run, not per chunk (BENCHMARKS.md, "What holds browser goodput"). A live
   * stream's chunks, whose lengths differ, go one at a time.
   */
  private takeChunks(): ChunkBytes[] {
    const engine = this.engine;
    const content = this.content;
    const verified = this.verified;
    this.verified = [];
    if (!engine || !content || verified.length === 0) return [];
    const out: ChunkBytes[] = [];
    const one = (chunk: number): void => {
      const data = engine.readChunk(chunk);
      if (data) out.push({ first: chunk, data });
    };
    if (content.live) {
      for (const chunk of verified) one(chunk);
      return out;
    }
    const chunks = Uint32Array.from(verified).sort();
    for (let i = 0; i < chunks.length; ) {
      const first = chunks[i] as number;
      let last = first;
      let j = i + 1;
      for (; j < chunks.length && (chunks[j] as number) <= last + 1; j++) last = chunks[j] as number;
      i = j;
      // A chunk let go of within the turn (a bound on held bytes): those that are left, one by one.
      if (engine.firstMissing(first) <= last) {
        for (let c = first; c <= last; c++) one(c);
        continue;
      }
      const end = Math.min((last + 1) * content.chunkSize, content.length);
      out.push({ first, data: engine.read(first * content.chunkSize, end) });
    }
    return out;
  }

  private snapshot(): EngineState {
    const loop = this.loop as EngineLoop;
    return {
      have: Array.from(loop.haveRanges()),
      wantedEnd: loop.wantedEnd(),
      liveEdge: loop.liveEdge(),
      liveFloor: loop.liveFloor(),
      complete: loop.isComplete(),
      hasHttpOrigin: loop.hasHttpOrigin(),
    };
  }

  /**
   * A turn ended: what it produced goes to the page now, or, within
   * {@link POST_EVERY_MS} of the last message, with the next turns': a fast fetch ends
   * a turn every datagram or two, and each message costs the Worker its own work.
   */
  private endTurn(final: boolean): void {
    const since = performance.now() - this.postedAt;
    if (final || since >= POST_EVERY_MS) this.postTurn(final);
    else this.postTimer ??= setTimeout(() => this.postTurn(false), POST_EVERY_MS - since);
  }

  /** Sends what the turns since the last message produced: events, chunks, the state if it changed, figures now and then. */
  private postTurn(final: boolean): void {
    if (this.postTimer !== null) clearTimeout(this.postTimer);
    this.postTimer = null;
    const loop = this.loop;
    if (!loop) return;
    const now = performance.now();
    const next = this.snapshot();
    const prev = this.state;
    const changed =
      !prev ||
      !sameRanges(prev.have, next.have) ||
      prev.wantedEnd !== next.wantedEnd ||
      prev.liveEdge !== next.liveEdge ||
      prev.liveFloor !== next.liveFloor ||
      prev.complete !== next.complete ||
      prev.hasHttpOrigin !== next.hasHttpOrigin;
    // Figures cost a walk of every channel: every 100 ms, and when the content completes.
    const statsDue = final || now - this.statsAt >= STATS_EVERY_MS || (prev !== null && prev.complete !== next.complete);
    if (!changed && !statsDue && this.events.length === 0 && this.verified.length === 0) return;
    this.state = next;
    const stats: EngineLoopStats | null = statsDue ? loop.stats() : null;
    if (statsDue) this.statsAt = now;
    const events = this.events;
    const chunks = this.takeChunks();
    this.events = [];
    this.postedAt = now;
    this.post(
      { t: 'turn', events, chunks, state: changed ? next : null, stats, dropped: this.counts.dropped },
      chunks.map((c) => c.data.buffer),
    );
  }
}
