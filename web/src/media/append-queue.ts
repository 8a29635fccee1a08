/**
 * The MediaSource append queue. A SourceBuffer takes one append (or remove)
 * at a time and throws if called while `updating`, while chunks arrive from
 * the swarm whenever they are verified; this queue serializes them, keeps the
 * buffer from growing without bound, and survives QuotaExceededError.
 *
 * It only needs the few SourceBuffer members in {@link SourceBufferLike}, so
 * it runs (and is tested) without a DOM.
 */

/**
 * The part of `SourceBuffer` the queue uses; a real SourceBuffer fits
 * (`appendBuffer` takes `Uint8Array<ArrayBuffer>` because the DOM's
 * BufferSource excludes views on a SharedArrayBuffer).
 */
export interface SourceBufferLike {
  readonly updating: boolean;
  readonly buffered: { readonly length: number; start(i: number): number; end(i: number): number };
  appendBuffer(data: Uint8Array<ArrayBuffer>): void;
  remove(start: number, end: number): void;
  abort(): void;
  addEventListener(type: 'updateend' | 'error', listener: () => void): void;
  removeEventListener(type: 'updateend' | 'error', listener: () => void): void;
}

export interface AppendQueueOptions {
  /** Seconds of media kept behind the playhead, for short seeks back. Default 30. */
  keepBehindSeconds: number;
  /** Larger pushes are split, so one append never blocks the buffer for long. Default 1 MiB. */
  maxAppendBytes: number;
  /**
   * Media starting more than this many seconds ahead of the playhead is removed: left
   * from before a seek back, it is nothing the Player would append now. Default: kept.
   */
  keepAheadSeconds: number;
  /** Keep-behind used to make room after QuotaExceededError. Default 5. */
  quotaKeepBehindSeconds: number;
  /** Poll interval while waiting for the playhead to free room. Default 250 ms. */
  retryDelayMs: number;
  /**
   * Whether the MediaSource is open. `abort()` throws on an ended one (after
   * `endOfStream()`, whose appends were whole segments: there is no parser state to
   * reset), so a reset then skips it. Default: always open.
   */
  sourceOpen: () => boolean;
  /** Called once when the queue stops on an append or SourceBuffer error. */
  onError?: (err: Error) => void;
  /**
   * Whether appends may go now (a ManagedMediaSource between `endstreaming` and
   * `startstreaming` says no); call {@link AppendQueue.resume} when it says yes again.
   * Default: always.
   */
  mayAppend: () => boolean;
}

const DEFAULTS = {
  keepBehindSeconds: 30,
  keepAheadSeconds: Infinity,
  sourceOpen: () => true,
  mayAppend: () => true,
  maxAppendBytes: 1 << 20,
  quotaKeepBehindSeconds: 5,
  retryDelayMs: 250,
};

/** Never remove media this close to the playhead: the decoder may still need it. */
const PLAYHEAD_MARGIN_SECONDS = 1;

type Phase = 'idle' | 'appending' | 'removing' | 'waiting' | 'failed' | 'closed';

export class AppendQueue {
  private readonly opts: AppendQueueOptions;
  private readonly queue: Array<Uint8Array<ArrayBuffer>> = [];
  private queued = 0;
  private appended = 0;
  private phase: Phase = 'idle';
  /** The append in flight, or the one to retry after QuotaExceededError. */
  private current: Uint8Array<ArrayBuffer> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** reset() during a remove: abort once the remove has finished (abort would throw). */
  private abortAfterRemove = false;
  private error: Error | null = null;
  private waiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  private readonly onUpdateEnd = (): void => this.updateEnd();
  private readonly onErrorEvent = (): void =>
    this.fail(new Error('SourceBuffer error event: the appended media could not be parsed or decoded'));

  constructor(
    private readonly sb: SourceBufferLike,
    private readonly currentTime: () => number,
    options: Partial<AppendQueueOptions> = {},
  ) {
    this.opts = { ...DEFAULTS, ...options };
    const { keepBehindSeconds, maxAppendBytes, quotaKeepBehindSeconds, retryDelayMs } = this.opts;
    if (!(keepBehindSeconds >= 0) || !(quotaKeepBehindSeconds >= 0) || !(retryDelayMs >= 0)) {
      throw new Error('AppendQueue: keepBehindSeconds, quotaKeepBehindSeconds and retryDelayMs must be ≥ 0');
    }
    if (!Number.isInteger(maxAppendBytes) || maxAppendBytes < 1) {
      throw new Error('AppendQueue: maxAppendBytes must be a positive integer');
    }
    sb.addEventListener('updateend', this.onUpdateEnd);
    sb.addEventListener('error', this.onErrorEvent);
  }

  /** Bytes pushed but not yet appended (queued, in flight or awaiting a retry). */
  get pendingBytes(): number {
    return this.queued + (this.current?.length ?? 0);
  }

  /** Bytes whose append has completed. */
  get appendedBytes(): number {
    return this.appended;
  }

  /**
   * Queues bytes in order; ignored after close() or a failure. The queue
   * keeps a view, not a copy: do not overwrite `bytes` afterwards.
   */
  push(bytes: Uint8Array): void {
    if (this.phase === 'failed' || this.phase === 'closed') return;
    const max = this.opts.maxAppendBytes;
    const own = bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes);
    for (let i = 0; i < own.length; i += max) {
      const piece = own.subarray(i, i + max);
      this.queue.push(piece);
      this.queued += piece.length;
    }
    this.pump();
  }

  /** Resolves when nothing is queued or updating; rejects if the queue has failed. */
  idle(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.settle();
    });
  }

  /**
   * For a seek: drops everything queued and aborts the SourceBuffer so its
   * parser forgets a half-appended segment (pushes are split at arbitrary
   * bytes). The next push should start at a segment boundary.
   */
  reset(): void {
    if (this.phase === 'failed' || this.phase === 'closed') return;
    this.dropQueued();
    this.clearTimer();
    if (this.phase === 'removing') {
      this.abortAfterRemove = true;
      return;
    }
    this.phase = 'idle';
    if (this.abort()) this.settle();
  }

  /** Detaches from the SourceBuffer and drops everything; the queue is unusable afterwards. */
  close(): void {
    if (this.phase === 'closed') return;
    this.sb.removeEventListener('updateend', this.onUpdateEnd);
    this.sb.removeEventListener('error', this.onErrorEvent);
    this.dropQueued();
    this.clearTimer();
    this.phase = 'closed';
    this.settle();
  }

  /** Appends may go again (see `mayAppend`): what is queued goes on. */
  resume(): void {
    this.pump();
  }

  private pump(): void {
    if (this.phase !== 'idle' || !this.opts.mayAppend()) return;
    try {
      if (this.sb.updating) return; // someone else's operation; its updateend calls us again
    } catch (err) {
      this.fail(wrap('SourceBuffer is unusable', err));
      return;
    }
    if (!this.current) {
      const next = this.queue.shift();
      if (!next) {
        this.settle();
        return;
      }
      this.queued -= next.length;
      this.current = next;
    }
    try {
      this.sb.appendBuffer(this.current);
      this.phase = 'appending';
    } catch (err) {
      if (errorName(err) === 'QuotaExceededError') this.makeRoom();
      else this.fail(wrap('appendBuffer failed', err));
    }
  }

  private updateEnd(): void {
    // An updateend queued by abort() can arrive after the next append began.
    if (this.sb.updating) return;
    if (this.phase === 'appending') {
      this.appended += this.current?.length ?? 0;
      this.current = null;
      this.phase = 'idle';
      if (this.evict(this.opts.keepBehindSeconds)) return;
    } else if (this.phase === 'removing') {
      this.phase = 'idle';
      if (this.abortAfterRemove && !this.abort()) return;
    }
    this.pump();
  }

  /** After QuotaExceededError: free room behind the playhead, or wait for it to advance. */
  private makeRoom(): void {
    this.phase = 'idle';
    if (this.evict(this.opts.quotaKeepBehindSeconds)) return; // retried on the remove's updateend
    this.phase = 'waiting';
    this.timer = setTimeout(() => {
      this.timer = null;
      this.phase = 'idle';
      this.pump();
    }, this.opts.retryDelayMs);
  }

  /**
   * Removes buffered media more than `keep` seconds behind the playhead, but
   * never within PLAYHEAD_MARGIN_SECONDS of it, then media starting more than
   * `keepAheadSeconds` ahead of it. True if the caller must stop here: a
   * remove started (its updateend continues the queue) or the queue failed.
   */
  private evict(keep: number): boolean {
    try {
      const now = this.currentTime();
      const buffered = this.sb.buffered;
      if (buffered.length === 0) return false;
      const start = buffered.start(0);
      const end = now - Math.max(keep, PLAYHEAD_MARGIN_SECONDS);
      if (end > start) {
        this.sb.remove(start, end);
        this.phase = 'removing';
        return true;
      }
      const ahead = now + Math.max(this.opts.keepAheadSeconds, PLAYHEAD_MARGIN_SECONDS);
      for (let i = 0; i < buffered.length; i++) {
        if (buffered.start(i) > ahead) {
          this.sb.remove(buffered.start(i), buffered.end(buffered.length - 1));
          this.phase = 'removing';
          return true;
        }
      }
      return false;
    } catch (err) {
      this.fail(wrap('SourceBuffer.remove failed', err));
      return true;
    }
  }

  /** Resets the SourceBuffer parser. False if that failed the queue. */
  private abort(): boolean {
    this.abortAfterRemove = false;
    if (!this.opts.sourceOpen()) return true;
    try {
      this.sb.abort();
      return true;
    } catch (err) {
      this.fail(wrap('SourceBuffer.abort failed', err));
      return false;
    }
  }

  private fail(err: Error): void {
    if (this.phase === 'failed' || this.phase === 'closed') return;
    this.phase = 'failed';
    this.error = err;
    this.dropQueued();
    this.clearTimer();
    this.opts.onError?.(err);
    this.settle();
  }

  private dropQueued(): void {
    this.queue.length = 0;
    this.queued = 0;
    this.current = null; // an in-flight append is aborted or no longer ours to count
  }

  private clearTimer(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Resolves or rejects idle() waiters once the queue has come to rest. */
  private settle(): void {
    if (this.waiters.length === 0) return;
    const done =
      this.phase === 'failed' ||
      this.phase === 'closed' ||
      (this.phase === 'idle' && this.queue.length === 0 && this.current === null && !this.sbUpdating());
    if (!done) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) {
      if (this.phase === 'failed') w.reject(this.error ?? new Error('AppendQueue failed'));
      else w.resolve();
    }
  }

  private sbUpdating(): boolean {
    try {
      return this.sb.updating;
    } catch {
      return false;
    }
  }
}

/** Works for DOMException too, whatever its prototype chain in a given runtime. */
function errorName(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'name' in err ? err.name : undefined;
}

function wrap(what: string, err: unknown): Error {
  const message = typeof err === 'object' && err !== null && 'message' in err ? String(err.message) : String(err);
  const name = errorName(err);
  const detail = typeof name === 'string' ? `${name}: ${message}` : message;
  return new Error(`AppendQueue: ${what} (${detail})`, { cause: err });
}
