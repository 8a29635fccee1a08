/**
 * What the WebM and MP4 parsers both use: big-endian integers, ASCII, and the
 * MediaSource type (every caller checks bounds first); and joining byte arrays.
 */
import type { ContainerKind } from './container.js';

/** Big-endian unsigned integer of n ≤ 8 bytes; callers check bounds first. */
export function uintBE(b: Uint8Array, pos: number, n: number): number {
  let v = 0;
  for (let i = 0; i < n; i++) v = v * 256 + (b[pos + i] ?? 0);
  return v;
}

export function ascii(b: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i++) {
    const c = b[i] ?? 0;
    if (c === 0) break; // EBML strings may be NUL-padded
    s += String.fromCharCode(c);
  }
  return s;
}

export function mime(kind: ContainerKind, video: string[], audio: string[]): string {
  const type = video.length > 0 ? 'video' : 'audio';
  return `${type}/${kind}; codecs="${[...video, ...audio].join(',')}"`;
}

/** `parts` joined into one array of `total` bytes (the only part itself, uncopied). */
export function concat(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1 && parts[0]) return parts[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
