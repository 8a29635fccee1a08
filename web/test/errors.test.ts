import { describe, expect, it } from 'vitest';
import { type ErrorCode, PpsppError, abortReason, fatal, isFatalCode } from '../src/errors.js';

// The table web/README.md documents ("Errors"): keep them equal.
const FATAL_EVENTS: Record<ErrorCode, boolean> = {
  'bad-uri': true,
  'bad-option': true,
  'signaling-unreachable': true,
  'signaling-error': false,
  'no-peers': false,
  'ice-server-error': false,
  'verification-failed': false,
  'storage-failed': true,
  'mse-unsupported': true,
  'webrtc-unsupported': true,
  'media-error': true,
  'playback-stuck': false,
  'wasm-load-failed': true,
  'bad-manifest': true,
  'manifest-unreachable': true,
  closed: true,
  'origin-no-range': false,
  'origin-status': false,
  'origin-unreachable': false,
  'origin-timeout': false,
  'origin-bad-response': false,
  'origin-bad-tree': false,
};

describe('PpsppError.fatal', () => {
  it('follows the code unless given', () => {
    for (const [code, isFatal] of Object.entries(FATAL_EVENTS) as [ErrorCode, boolean][]) {
      expect(isFatalCode(code), code).toBe(isFatal);
      expect(new PpsppError(code, 'm').fatal, code).toBe(isFatal);
    }
    expect(new PpsppError('no-peers', 'm', { fatal: true }).fatal).toBe(true);
    expect(new PpsppError('media-error', 'm', { fatal: false }).fatal).toBe(false);
  });

  it('keeps code, message, name and cause', () => {
    const cause = new Error('inner');
    const e = new PpsppError('bad-uri', 'bad', { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e).toMatchObject({ name: 'PpsppError', code: 'bad-uri', message: 'bad', cause, fatal: true });
    expect('cause' in new PpsppError('bad-uri', 'bad')).toBe(false);
  });

  it('a rejection is fatal: fatal() marks a non-fatal PpsppError and passes anything else', () => {
    const refused = new PpsppError('signaling-error', 'signaling server: unsupported-version: …');
    expect(refused.fatal).toBe(false);
    expect(fatal(refused)).toBe(refused);
    expect(refused.fatal).toBe(true);
    const other = new TypeError('x');
    expect(fatal(other)).toBe(other);
    expect(fatal('text')).toBe('text');
  });
});

describe('abortReason', () => {
  it("is the signal's reason, AbortError by default", () => {
    const c = new AbortController();
    c.abort();
    expect(abortReason(c.signal)).toMatchObject({ name: 'AbortError' });
    const d = new AbortController();
    const why = new Error('navigated away');
    d.abort(why);
    expect(abortReason(d.signal)).toBe(why);
  });
});
