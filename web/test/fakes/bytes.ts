/**
 * Byte comparison for large buffers: `expect(a).toEqual(b)` walks typed arrays element by
 * element through the diff machinery and takes seconds on a few hundred KB.
 */

/** The first index where `a` and `b` differ (or the shorter length), or null if equal. */
export function differsAt(a: Uint8Array, b: Uint8Array): number | null {
  const n = Math.min(a.length, b.length);
  const ab = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const bb = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (a.length === b.length && ab.equals(bb)) return null;
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}
