/**
 * IceServerWatch on a peer connection's events in the orders browsers give them: what is
 * and is not a STUN/TURN server that never answered.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { PpsppError } from '../src/errors.js';
import { IceServerWatch } from '../src/ice-server-watch.js';

const STUN: RTCIceServer = { urls: 'stun:198.51.100.10:3478' };

/** The events of one peer connection, dispatched by hand. */
class Pc extends EventTarget {
  iceGatheringState: RTCIceGatheringState = 'new';
  iceConnectionState: RTCIceConnectionState = 'new';

  gathering(state: RTCIceGatheringState): void {
    this.iceGatheringState = state;
    this.dispatchEvent(new Event('icegatheringstatechange'));
  }
  ice(state: RTCIceConnectionState): void {
    this.iceConnectionState = state;
    this.dispatchEvent(new Event('iceconnectionstatechange'));
  }
  candidate(type: RTCIceCandidateType): void {
    this.dispatchEvent(Object.assign(new Event('icecandidate'), { candidate: { type } }));
  }
  unreachable(address: string | null): void {
    this.dispatchEvent(Object.assign(new Event('icecandidateerror'), { errorCode: 701, errorText: 'timeout', url: STUN.urls, address }));
  }
}

describe('IceServerWatch', () => {
  let errors: PpsppError[];
  let watch: IceServerWatch;
  const open = (): Pc => {
    const pc = new Pc();
    watch.watch(pc as unknown as RTCPeerConnection, [STUN]);
    pc.gathering('gathering');
    pc.candidate('host');
    return pc;
  };

  beforeEach(() => {
    errors = [];
    watch = new IceServerWatch({ signaled: () => [], refresh: () => {}, error: (e) => errors.push(e) });
  });

  it('a server unreachable from a routable address, with nothing gathered from it, is said once', () => {
    for (let i = 0; i < 2; i++) {
      const pc = open();
      pc.unreachable('192.168.1.x');
      pc.gathering('complete');
    }
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/^no STUN\/TURN server answered \(stun:198\.51\.100\.10:3478\)/)]);
  });

  it('a loopback address that cannot reach the server says nothing (its 701 comes with every gathering)', () => {
    for (const address of ['127.0.0.x', '127.0.0.1', '::1', '[::1]']) {
      const pc = open();
      pc.unreachable(address);
      pc.gathering('complete');
    }
    expect(errors).toEqual([]);
  });

  it('a connection up before its gathering ended (Chromium then stops gathering) says nothing; a later one still can', () => {
    const early = open();
    early.unreachable('192.168.1.x');
    early.ice('checking');
    early.ice('connected');
    early.gathering('complete');
    expect(errors).toEqual([]);

    const late = open();
    late.unreachable('192.168.1.x');
    late.gathering('complete');
    late.ice('connected');
    expect(errors.map((e) => e.code)).toEqual(['ice-server-error']);
  });

  it('a server-reflexive candidate from any connection means a server answers', () => {
    const pc = open();
    pc.unreachable('192.168.1.x');
    pc.candidate('srflx');
    pc.gathering('complete');
    const other = open();
    other.unreachable('10.0.0.x');
    other.gathering('complete');
    expect(errors).toEqual([]);
  });
});
