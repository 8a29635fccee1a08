import { describe, expect, it } from 'vitest';
import { PpsppError } from '../src/errors.js';
import { resolvePeerOptions, resolvePlayerOptions } from '../src/options.js';

function badOption(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(PpsppError);
    expect((err as PpsppError).code).toBe('bad-option');
    return (err as PpsppError).message;
  }
  throw new Error('did not throw');
}

describe('peer options', () => {
  it('has sensible defaults', () => {
    expect(resolvePeerOptions()).toEqual({
      signal: undefined,
      signalingTimeoutMs: 10_000,
      iceServers: [],
      iceTransportPolicy: 'all',
      maxConnections: 8,
      uploadLimit: 0,
      downloadLimit: 0,
      priority: 0,
      connectTimeoutMs: 15_000,
      dataBatchBytes: 32_768,
      statsIntervalMs: 1000,
      wasm: undefined,
      engineThread: 'worker',
      preferPeers: true,
      reportOffload: false,
    });
  });

  it('engineThread is main or worker', () => {
    expect(resolvePeerOptions({ engineThread: 'main' }).engineThread).toBe('main');
    expect(() => resolvePeerOptions({ engineThread: 'gpu' as never })).toThrow(/engineThread/);
  });

  it('signal: false or an empty list means no signaling (HTTP only)', () => {
    expect(resolvePeerOptions({ signal: false }).signal).toBe(false);
    expect(resolvePeerOptions({ signal: [] }).signal).toBe(false);
  });

  it('keeps valid values', () => {
    const o = resolvePeerOptions({ signal: 'wss://example.org/ws', maxConnections: 20, uploadLimit: 1e6, priority: 1, iceServers: [{ urls: 'stun:stun.example.org' }] });
    expect(o.signal).toStrictEqual(['wss://example.org/ws']);
    const several = ['wss://a.example.org/ws', 'wss://b.example.org/ws'];
    expect(resolvePeerOptions({ signal: several }).signal).toStrictEqual(several);
    expect(o.maxConnections).toBe(20);
    expect(o.uploadLimit).toBe(1e6);
    expect(o.priority).toBe(1);
    expect(o.iceServers).toHaveLength(1);
  });

  it('names the option that is wrong and why', () => {
    expect(badOption(() => resolvePeerOptions({ maxConnections: 0 }))).toMatch(/maxConnections.*at least 1/);
    expect(badOption(() => resolvePeerOptions({ maxConnections: 2.5 }))).toMatch(/maxConnections.*whole/);
    expect(badOption(() => resolvePeerOptions({ uploadLimit: -1 }))).toMatch(/uploadLimit/);
    expect(badOption(() => resolvePeerOptions({ downloadLimit: Number.NaN }))).toMatch(/downloadLimit.*finite/);
    expect(badOption(() => resolvePeerOptions({ priority: 17 }))).toMatch(/priority.*at most 16/);
    expect(badOption(() => resolvePeerOptions({ signal: 'http://example.org' }))).toMatch(/ws:\/\/ or wss:\/\//);
    expect(badOption(() => resolvePeerOptions({ signal: 'not a url' }))).toMatch(/signal/);
    expect(badOption(() => resolvePeerOptions({ signal: Array(17).fill('wss://a.example.org/ws') }))).toMatch(/list of 1 to 16/);
    expect(badOption(() => resolvePeerOptions({ signal: true } as never))).toMatch(/signal/);
    expect(badOption(() => resolvePeerOptions({ signalingTimeoutMs: 10 }))).toMatch(/signalingTimeoutMs.*at least 1000/);
    expect(badOption(() => resolvePeerOptions({ iceTransportPolicy: 'none' } as never))).toMatch(/iceTransportPolicy.*"all" or "relay"/);
    expect(badOption(() => resolvePlayerOptions({ upload: 'sometimes' } as never))).toMatch(/upload.*true, false or 'auto'/);
    expect(badOption(() => resolvePlayerOptions({ p2p: 1 } as never))).toMatch(/p2p.*true or false/);
    expect(badOption(() => resolvePeerOptions({ signal: ['wss://a.example.org/ws', 'ftp://b'] }))).toMatch(/ws:\/\/ or wss:\/\//);
    expect(badOption(() => resolvePeerOptions({ signal: [7] as unknown as string[] }))).toMatch(/as strings/);
    expect(badOption(() => resolvePeerOptions({ connectTimeoutMs: 5 }))).toMatch(/connectTimeoutMs/);
    expect(badOption(() => resolvePeerOptions({ dataBatchBytes: 65_537 }))).toMatch(/dataBatchBytes.*at most 65536/);
    expect(badOption(() => resolvePeerOptions({ dataBatchBytes: -1 }))).toMatch(/dataBatchBytes.*at least 0/);
    expect(badOption(() => resolvePeerOptions({ preferPeers: 'yes' } as never))).toMatch(/preferPeers.*true or false/);
    expect(badOption(() => resolvePeerOptions({ reportOffload: 1 } as never))).toMatch(/reportOffload.*true or false/);
    // A typo must not be silently ignored.
    expect(badOption(() => resolvePeerOptions({ maxConnection: 3 } as never))).toMatch(/unknown option "maxConnection"/);
    expect(badOption(() => resolvePeerOptions({ iceServers: 'stun:x' } as never))).toMatch(/iceServers/);
    expect(badOption(() => resolvePeerOptions(null as never))).toMatch(/object/);
  });
});

describe('player options', () => {
  it('adds the playback defaults', () => {
    const o = resolvePlayerOptions({});
    expect(o.keepBehindSeconds).toBe(30);
    expect(o.readAheadBytes).toBe(4 << 20);
    expect(o.urgentPriority).toBe(2);
    expect(o.mimeType).toBeUndefined();
    expect(o.maxMemoryBytes).toBe(256 << 20);
    expect(o.httpOrigin).toBeUndefined();
    expect(resolvePlayerOptions({ maxMemoryBytes: 0 }).maxMemoryBytes).toBe(0);
  });

  it('rejects bad playback options and peer-only typos', () => {
    expect(badOption(() => resolvePlayerOptions({ keepBehindSeconds: 1 }))).toMatch(/keepBehindSeconds/);
    expect(badOption(() => resolvePlayerOptions({ mimeType: ' ' }))).toMatch(/mimeType/);
    expect(badOption(() => resolvePlayerOptions({ urgentPriority: -1 }))).toMatch(/urgentPriority/);
    expect(badOption(() => resolvePlayerOptions({ autoplay: true } as never))).toMatch(/unknown option "autoplay"/);
    expect(badOption(() => resolvePlayerOptions({ maxMemoryBytes: 1000 }))).toMatch(/maxMemoryBytes must be 0 \(no bound\) or at least 1 MiB/);
    expect(badOption(() => resolvePlayerOptions({ httpOrigin: { url: 'v.webm' } as never }))).toMatch(/httpOrigin\.tree must be a URL/);
    expect(badOption(() => resolvePlayerOptions({ httpOrigin: { url: 'a', tree: 'b', maxRequests: 0 } }))).toMatch(
      /httpOrigin\.maxRequests must be at least 1/,
    );
    expect(badOption(() => resolvePlayerOptions({ httpOrigin: { url: 'a', tree: 'b', speed: 1 } as never }))).toMatch(
      /unknown option httpOrigin\.speed/,
    );
  });
});
