/**
 * The rules the page and the native peer (`ppspp` CLI) follow alike, against the one file
 * both are checked with (tests/policy/adapters.json; the CLI's `rtc::rejoin` tests read it
 * too).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HIGH_WATER_BYTES, MAX_QUEUED_BYTES } from '../src/channel-sender.js';
import { rejoinDelayMs } from '../src/signaling.js';

interface Policy {
  dataChannel: { highWaterBytes: number; maxQueuedBytes: number };
  signalingRejoin: {
    firstMs: number;
    maxMs: number;
    jitter: [number, number];
    delays: { attempt: number; urls: number; random: number; ms: number }[];
  };
}

const policy = JSON.parse(
  readFileSync(new URL('../../tests/policy/adapters.json', import.meta.url), 'utf8'),
) as Policy;

describe('the policy shared with the native peer', () => {
  it('queues on a data channel as the native peer does', () => {
    expect(HIGH_WATER_BYTES).toBe(policy.dataChannel.highWaterBytes);
    expect(MAX_QUEUED_BYTES).toBe(policy.dataChannel.maxQueuedBytes);
  });

  it('waits before joining the signaling servers again as the native peer does', () => {
    const { delays, firstMs, maxMs, jitter } = policy.signalingRejoin;
    expect(delays.length).toBeGreaterThanOrEqual(5);
    for (const d of delays) expect(rejoinDelayMs(d.attempt, d.urls, d.random)).toBeCloseTo(d.ms, 6);
    expect(rejoinDelayMs(0, 1, 0.5)).toBe(firstMs);
    expect(rejoinDelayMs(1000, 1, 0)).toBe(maxMs * jitter[0]);
    expect(rejoinDelayMs(1000, 1, 1)).toBe(maxMs * jitter[1]);
  });
});
