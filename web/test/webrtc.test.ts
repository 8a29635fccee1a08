import { afterEach, describe, expect, it } from 'vitest';
import { requireWebRtc } from '../src/connections.js';
import { PpsppError } from '../src/errors.js';

describe('requireWebRtc', () => {
  afterEach(() => {
    delete (globalThis as { RTCPeerConnection?: unknown }).RTCPeerConnection;
  });

  it('says so, with a code, where there is no RTCPeerConnection', () => {
    expect(typeof (globalThis as { RTCPeerConnection?: unknown }).RTCPeerConnection).toBe('undefined');
    let error: unknown;
    try {
      requireWebRtc();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PpsppError);
    expect((error as PpsppError).code).toBe('webrtc-unsupported');
    expect((error as PpsppError).message).toMatch(/no WebRTC/);
  });

  it('passes where there is one', () => {
    (globalThis as { RTCPeerConnection?: unknown }).RTCPeerConnection = class {};
    expect(() => requireWebRtc()).not.toThrow();
  });
});
