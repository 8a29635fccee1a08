/** One data channel's sends (src/channel-sender.ts) over a channel whose buffer the test drains. */
import { describe, expect, it } from 'vitest';
import { ChannelSender, HIGH_WATER_BYTES, MAX_QUEUED_BYTES, type SendCounts } from '../src/channel-sender.js';

/** What ChannelSender uses of an RTCDataChannel; the buffer drains only when told. */
class FakeChannel {
  readyState: RTCDataChannelState = 'open';
  bufferedAmount = 0;
  bufferedAmountLowThreshold = 0;
  onbufferedamountlow: (() => void) | null = null;
  readonly sent: number[] = [];

  send(data: Uint8Array): void {
    this.sent.push(data.length);
    this.bufferedAmount += data.length;
  }

  /** The transport takes everything; the browser fires `bufferedamountlow`. */
  drain(): void {
    this.bufferedAmount = 0;
    this.onbufferedamountlow?.();
  }
}

function setup() {
  const channel = new FakeChannel();
  const counts: SendCounts = { sent: 0, dropped: 0 };
  const sender = new ChannelSender(channel as unknown as RTCDataChannel, counts);
  return { channel, counts, sender };
}

const KIB8 = new Uint8Array(8192);

describe('ChannelSender', () => {
  it('hands datagrams over up to the high-water mark, queues beyond it, and sends the queue as the buffer drains, in order', () => {
    const { channel, counts, sender } = setup();
    expect(channel.bufferedAmountLowThreshold).toBe(HIGH_WATER_BYTES / 2);
    const n = HIGH_WATER_BYTES / KIB8.length;
    for (let i = 0; i < n + 1; i++) expect(sender.send(KIB8)).toBe(true);
    // Up to the mark, and one past it (the check is before each send).
    expect(channel.sent).toHaveLength(n + 1);
    const marked = new Uint8Array(100);
    expect(sender.send(marked)).toBe(true);
    expect(sender.send(KIB8)).toBe(true);
    expect(channel.sent).toHaveLength(n + 1);
    channel.drain();
    expect(channel.sent.slice(n + 1)).toEqual([100, 8192]);
    expect(counts).toEqual({ sent: n + 3, dropped: 0 });
  });

  it('drops what does not fit in the queue, and everything while the channel is not open', () => {
    const { channel, counts, sender } = setup();
    channel.bufferedAmount = HIGH_WATER_BYTES + 1;
    const fits = MAX_QUEUED_BYTES / KIB8.length;
    for (let i = 0; i < fits; i++) expect(sender.send(KIB8)).toBe(true);
    expect(sender.send(KIB8)).toBe(false);
    expect(counts).toEqual({ sent: 0, dropped: 1 });
    channel.readyState = 'closing';
    expect(sender.send(new Uint8Array(1))).toBe(false);
    expect(counts.dropped).toBe(2);
    // Closed: the buffer draining sends nothing of the queue.
    channel.drain();
    expect(channel.sent).toHaveLength(0);
  });

  it('forgets its queue when cleared', () => {
    const { channel, counts, sender } = setup();
    channel.bufferedAmount = HIGH_WATER_BYTES + 1;
    sender.send(KIB8);
    sender.clear();
    expect(channel.onbufferedamountlow).toBeNull();
    channel.drain();
    expect(channel.sent).toHaveLength(0);
    expect(counts).toEqual({ sent: 0, dropped: 0 });
  });
});
