import type { OriginErrorCode } from './wasm.js';

/** What went wrong, for code to branch on; `message` says it for people. */
export type ErrorCode =
  | OriginErrorCode
  | 'bad-uri'
  | 'bad-option'
  | 'signaling-unreachable'
  | 'signaling-error'
  | 'no-peers'
  | 'ice-server-error'
  | 'verification-failed'
  | 'storage-failed'
  | 'mse-unsupported'
  | 'webrtc-unsupported'
  | 'media-error'
  | 'playback-stuck'
  | 'wasm-load-failed'
  | 'bad-manifest'
  | 'manifest-unreachable'
  | 'closed';

/**
 * Whether an error of each code means that playback or the fetch cannot go on (as
 * hls.js's `ErrorData.fatal`). The call that rejects with an error never went on, so every
 * rejection is fatal: the two codes that are not fatal as events (`signaling-error`,
 * `no-peers`) are fatal when they reject a call.
 */
const FATAL: { readonly [C in ErrorCode]: boolean } = {
  // Rejections only: the call was not made.
  'bad-uri': true,
  'bad-option': true,
  'mse-unsupported': true, // also an event: the file's codecs cannot be played here
  'webrtc-unsupported': true,
  'wasm-load-failed': true,
  'signaling-unreachable': true, // later drops of the socket reconnect without an error
  // A presentation manifest (NAME.ppspp.json) that is not one, or that could not be loaded.
  'bad-manifest': true,
  'manifest-unreachable': true,
  closed: true,
  // A message from the signaling server; the swarm stays joined (or rejoins).
  'signaling-error': false,
  // Nobody reachable for a while (the swarm keeps trying), or no more connections can be made.
  'no-peers': false,
  // A STUN/TURN server refused its credentials or never answered: peers it would have
  // reached are lost, the rest go on (and fresh credentials are asked for).
  'ice-server-error': false,
  // A peer sent a chunk that failed verification: it was dropped, the others go on.
  'verification-failed': false,
  // A verified chunk could not be stored: the engine asks for nothing more.
  'storage-failed': true,
  // The video element or MediaSource failed: the Player appends nothing more.
  'media-error': true,
  // The playhead stood still with media buffered; the Player goes on feeding, and playback
  // may still resume (a seek, or the decoder going on).
  'playback-stuck': false,
  // The HTTP origin failed: its request is retried later, or (for good) peers carry
  // everything. Fatal only with no signaling server (nothing else could deliver), and
  // marked so then.
  'origin-no-range': false,
  'origin-status': false,
  'origin-unreachable': false,
  'origin-timeout': false,
  'origin-bad-response': false,
  'origin-bad-tree': false,
};

/** Whether errors with `code` are fatal when they come as `error` events (see {@link PpsppError.fatal}). */
export function isFatalCode(code: ErrorCode): boolean {
  return FATAL[code];
}

/** Every error ppspp-web throws or emits. */
export class PpsppError extends Error {
  readonly code: ErrorCode;
  /**
   * True when playback (a Player) or the download (a Peer's swarm) cannot go on because of
   * this error: every rejected call, and the `error` events `storage-failed`, `media-error`
   * and `mse-unsupported`. False for trouble ppspp-web works around (`signaling-error`,
   * `no-peers`, `ice-server-error`, `verification-failed`, `playback-stuck` events): it
   * keeps going.
   */
  readonly fatal: boolean;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; fatal?: boolean }) {
    super(message, options && 'cause' in options ? { cause: options.cause } : undefined);
    this.name = 'PpsppError';
    this.code = code;
    this.fatal = options?.fatal ?? isFatalCode(code);
  }
}

/**
 * `err` as the rejection of a call: a PpsppError made as a non-fatal one (a signaling
 * server's refusal to join, which signaling.ts makes as it makes its error events) is
 * marked fatal, since the call did not go on. Anything else is returned as it is.
 */
export function fatal(err: unknown): unknown {
  if (err instanceof PpsppError && !err.fatal) (err as { fatal: boolean }).fatal = true;
  return err;
}

/** Why `signal` aborted: its reason, or an `AbortError` where the browser gives none. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('the operation was aborted', 'AbortError');
}

/** The message of anything thrown (wasm-bindgen throws `Error`s; others may throw strings). */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
