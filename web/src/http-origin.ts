/**
 * The HTTP origin's transport. The engine (Wasm) decides every Range request — which file,
 * which bytes, how many at once, when to retry — and verifies every byte against the root
 * before anything is kept, played or served to peers. This class only carries the
 * requests with `fetch()` and says how each ended: the body, or why there is none.
 */
import { messageOf } from './errors.js';
import { concat } from './media/bytes.js';
import { OriginOptions, type OriginRequest, PartMap, type WasmPeer } from './wasm.js';

/**
 * One piece of content made of parts (an HLS or DASH rendition, docs/FORMATS.md): a whole
 * file (`offset` null), or `length` bytes of it from `offset`.
 */
export interface OriginPart {
  url: string;
  offset: number | null;
  length: number;
}

/** Where the origin is and how it is used (resolved options). */
export interface HttpOriginSettings {
  /** The content's URL (absolute, or relative to the page); with `parts`, only named in messages. */
  url: string;
  /** The content is these parts concatenated (URLs absolute, or relative to the page). */
  parts?: readonly OriginPart[];
  /** The tree file's URL (`ppspp root FILE --tree OUT`). */
  tree: string;
  /** Range requests in flight at most. */
  maxRequests: number;
  /** A request not answered whole in this long fails as `origin-timeout` (and is retried). */
  timeoutMs: number;
  /** The first bytes of the content fetched from the origin at once, for a fast first frame. */
  headBytes: number;
}

/** How one request ended, in the engine's terms. */
type Outcome =
  | { bytes: Uint8Array }
  | { kind: 'no-range' | 'status' | 'unreachable' | 'timeout'; status: number; message: string };

export class HttpOrigin {
  readonly contentUrl: string;
  readonly treeUrl: string;
  private readonly inFlight = new Map<number, AbortController>();
  private closed = false;
  /** With parts: where each lies in the content, and its absolute URL. */
  private readonly partMap: PartMap | null = null;
  private readonly partUrls: string[] = [];

  constructor(
    private readonly engine: WasmPeer,
    private readonly settings: HttpOriginSettings,
    /** An answer was handed to the engine: its loop should run. */
    private readonly kick: () => void,
    /** True if nothing but the origin can deliver (no signaling server). */
    readonly only: boolean,
  ) {
    const base = typeof document !== 'undefined' ? document.baseURI : undefined;
    this.contentUrl = new URL(settings.url, base).href;
    this.treeUrl = new URL(settings.tree, base).href;
    if (settings.parts) {
      this.partMap = new PartMap(new Float64Array(settings.parts.map((p) => p.length)));
      this.partUrls = settings.parts.map((p) => new URL(p.url, base).href);
    }
    const o = new OriginOptions();
    o.max_requests = settings.maxRequests;
    o.head_bytes = settings.headBytes;
    // Alone (no peer), the origin serves the whole read-ahead window: at once if nothing
    // else could ever deliver, else after the swarm had a few seconds to connect.
    if (only) o.alone_after_ms = 0;
    engine.enableHttpOrigin(o, performance.now());
  }

  /** Requests in flight. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Starts every request the engine has ready (after each turn of its loop). */
  pump(): void {
    if (this.closed) return;
    const now = performance.now();
    for (;;) {
      const request = this.engine.pollOriginRequest(now) as OriginRequest | undefined;
      if (request === undefined) break;
      this.start(request);
    }
  }

  private start(request: OriginRequest): void {
    const controller = new AbortController();
    this.inFlight.set(request.id, controller);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.settings.timeoutMs);
    void this.get(request, controller, () => timedOut).then((outcome) => {
      clearTimeout(timer);
      this.inFlight.delete(request.id);
      if (this.closed) return;
      const now = performance.now();
      if ('bytes' in outcome) {
        this.engine.handleOriginResponse(request.id, outcome.bytes, now);
      } else {
        this.engine.handleOriginFailure(request.id, outcome.kind, outcome.status, outcome.message, now);
      }
      this.kick();
    });
  }

  private get(request: OriginRequest, controller: AbortController, timedOut: () => boolean): Promise<Outcome> {
    if (request.file === 'tree') return this.getRange(this.treeUrl, request.start, request.end, controller, timedOut);
    if (!this.partMap) return this.getRange(this.contentUrl, request.start, request.end, controller, timedOut);
    return this.getParts(request.start, request.end, controller, timedOut);
  }

  /** Content bytes `start..end` of a content made of parts: each file asked for its own. */
  private async getParts(start: number, end: number, controller: AbortController, timedOut: () => boolean): Promise<Outcome> {
    const parts = this.settings.parts ?? [];
    const flat = this.partMap!.locate(start, end);
    // File byte ranges, adjacent ones of one file merged (byte-range parts of one file).
    const ranges: { url: string; start: number; end: number }[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const part = flat[i]!;
      const base = parts[part]?.offset ?? 0;
      const url = this.partUrls[part]!;
      const from = base + flat[i + 1]!;
      const to = base + flat[i + 2]!;
      const last = ranges[ranges.length - 1];
      if (last && last.url === url && last.end === from) last.end = to;
      else ranges.push({ url, start: from, end: to });
    }
    const outcomes = await Promise.all(ranges.map((r) => this.getRange(r.url, r.start, r.end, controller, timedOut)));
    const bodies: Uint8Array[] = [];
    for (const o of outcomes) {
      if (!('bytes' in o)) return o;
      bodies.push(o.bytes);
    }
    return { bytes: concat(bodies, bodies.reduce((a, b) => a + b.length, 0)) };
  }

  private async getRange(url: string, start: number, end: number, controller: AbortController, timedOut: () => boolean): Promise<Outcome> {
    const failed = (err: unknown): Outcome =>
      timedOut()
        ? { kind: 'timeout', status: 0, message: `${url}: no complete answer in ${this.settings.timeoutMs} ms` }
        : {
            kind: 'unreachable',
            status: 0,
            // A browser tells a CORS refusal and a network failure apart to nobody.
            message: `${url}: ${messageOf(err)} (the network failed, or the server does not allow this page by CORS)`,
          };
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { Range: `bytes=${start}-${end - 1}` },
        signal: controller.signal,
      });
    } catch (err) {
      return failed(err);
    }
    if (response.status === 200) {
      // The whole file is on its way: it cannot serve ranges. Stop reading it.
      controller.abort();
      return { kind: 'no-range', status: 200, message: `${url}: the server ignores Range requests (it answered 200)` };
    }
    if (response.status !== 206) {
      void response.body?.cancel().catch(() => {});
      return { kind: 'status', status: response.status, message: `${url}: HTTP ${response.status}` };
    }
    try {
      return { bytes: new Uint8Array(await response.arrayBuffer()) };
    } catch (err) {
      return failed(err);
    }
  }

  /** Stops: requests in flight are aborted and their answers ignored. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.partMap?.free();
    for (const controller of this.inFlight.values()) controller.abort();
    this.inFlight.clear();
  }
}
