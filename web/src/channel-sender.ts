/**
 * Sending on one data channel: handed to the channel while its buffer is below the
 * high-water mark, queued beyond it, dropped when the queue is full too (a loss PPSPP
 * recovers from). The same rule wherever the channel lives (the page's main thread, or the
 * engine's Worker it was transferred to).
 */

/**
 * At most this much is handed to the data channel (`bufferedAmount`): an unordered
 * channel loses most of a large queue on a fresh connection, little of a small one
 * (BENCHMARKS.md, "Measurements behind design choices"). The native peer follows the same
 * rule, and this queue's (both are checked against tests/policy/adapters.json).
 */
export const HIGH_WATER_BYTES = 64 * 1024;
/**
 * Beyond the high-water mark, messages wait in our own queue up to this many bytes, and
 * are dropped after (a loss PPSPP recovers from). The wait shows up to LEDBAT as queuing
 * delay, so it slows down instead of losing datagrams. A queue too small for slow start's
 * overshoot loses hundreds of chunks at once and leaves the window at its minimum while
 * they are resent; at this size the overshoot becomes delay and LEDBAT settles near its
 * target (BENCHMARKS.md, "Measurements behind design choices").
 */
export const MAX_QUEUED_BYTES = 2 * 1024 * 1024;

/** Messages sent and dropped, counted across the channels that share it. */
export interface SendCounts {
  sent: number;
  dropped: number;
}

export class ChannelSender {
  /** Messages waiting for the channel's buffer to drain, and their bytes. */
  private queue: Uint8Array[] = [];
  private queued = 0;

  constructor(
    private readonly channel: RTCDataChannel,
    private readonly counts: SendCounts,
  ) {
    channel.bufferedAmountLowThreshold = HIGH_WATER_BYTES / 2;
    channel.onbufferedamountlow = () => this.flush();
  }

  /**
   * Sends one datagram, or queues it while the channel's buffer is full. Returns false
   * when it was dropped: the channel is not open, or the queue is full too.
   */
  send(data: Uint8Array): boolean {
    if (this.channel.readyState !== 'open') {
      this.counts.dropped += 1;
      return false;
    }
    if (this.queue.length === 0 && this.channel.bufferedAmount <= HIGH_WATER_BYTES) {
      return this.transmit(data);
    }
    if (this.queued + data.length > MAX_QUEUED_BYTES) {
      this.counts.dropped += 1;
      return false;
    }
    this.queue.push(data);
    this.queued += data.length;
    return true;
  }

  /** Hands queued messages to the channel while its buffer is below the high-water mark. */
  private flush(): void {
    if (this.channel.readyState !== 'open') return;
    while (this.queue.length > 0 && this.channel.bufferedAmount <= HIGH_WATER_BYTES) {
      const msg = this.queue.shift()!;
      this.queued -= msg.length;
      if (!this.transmit(msg)) break;
    }
  }

  private transmit(data: Uint8Array): boolean {
    try {
      this.channel.send(data as Uint8Array<ArrayBuffer>);
      this.counts.sent += 1;
      return true;
    } catch {
      this.counts.dropped += 1;
      return false;
    }
  }

  /** Forgets what waits, and stops listening to the channel's buffer. */
  clear(): void {
    this.channel.onbufferedamountlow = null;
    this.queue = [];
    this.queued = 0;
  }
}
