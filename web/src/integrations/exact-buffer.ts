/**
 * The bytes as an ArrayBuffer that holds exactly them, as players want their segments:
 * the view's own buffer when the view is all of it, else a copy.
 */
export function exactBuffer(bytes: Uint8Array): ArrayBuffer {
  const b = bytes.buffer;
  if (b instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === b.byteLength) return b;
  return bytes.slice().buffer as ArrayBuffer;
}
