/** What went wrong, for code to branch on; `message` says it for people. */
export type ErrorCode =
  | 'bad-uri'
  | 'bad-option'
  | 'signaling-unreachable'
  | 'signaling-error'
  | 'no-peers'
  | 'verification-failed'
  | 'storage-failed'
  | 'mse-unsupported'
  | 'webrtc-unsupported'
  | 'media-error'
  | 'playback-stuck'
  | 'wasm-load-failed'
  | 'closed';

/** Every error ppspp-web throws or emits. */
export class PpsppError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PpsppError';
    this.code = code;
  }
}

/** The message of anything thrown (wasm-bindgen throws `Error`s; others may throw strings). */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
