/**
 * Byte builders for synthetic WebM and fragmented MP4, shared by the container tests
 * (media/helpers.ts), the Player's fake media (fakes/webm.ts, fakes/mp4.ts) and its
 * tests (what it appended, joined with `concat`).
 */

export const concat = (...parts: Array<Uint8Array | number[]>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};
export const text = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));
export const be = (v: number, n: number): number[] => {
  const out: number[] = [];
  for (let i = n - 1; i >= 0; i--) out.push(Math.floor(v / 2 ** (8 * i)) % 256);
  return out;
};

/** EBML element; `id` as written (marker included), size as a minimal vint. */
export function el(id: number, ...children: Array<Uint8Array | number[]>): Uint8Array {
  const data = concat(...children);
  let len = 1;
  while (data.length >= 2 ** (7 * len) - 1) len++;
  const size = be(data.length, len);
  size[0] = (size[0] ?? 0) | (0x80 >> (len - 1));
  const idBytes = be(id, Math.ceil(Math.log2(id + 1) / 8));
  return concat(idBytes, size, data);
}
export const UNKNOWN_SIZE = [0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
export const f64 = (x: number): number[] => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, x);
  return [...b];
};

/** ISO BMFF box and full box. */
export const box = (type: string, ...children: Array<Uint8Array | number[]>): Uint8Array => {
  const data = concat(...children);
  return concat(be(data.length + 8, 4), text(type), data);
};
export const fullbox = (type: string, version: number, ...children: Array<Uint8Array | number[]>): Uint8Array =>
  box(type, [version, 0, 0, 0], ...children);

// --------------------------------------------------------- MP4 track boxes

export function trak(id: number, timescale: number, handler: string, entry: Uint8Array): Uint8Array {
  return box(
    'trak',
    fullbox('tkhd', 0, be(0, 8), be(id, 4), new Array<number>(68).fill(0)),
    box(
      'mdia',
      fullbox('mdhd', 0, be(0, 8), be(timescale, 4), be(0, 4), [0x55, 0xc4, 0, 0]),
      fullbox('hdlr', 0, be(0, 4), text(handler), new Array<number>(13).fill(0)),
      box('minf', box('stbl', fullbox('stsd', 0, be(1, 4), entry))),
    ),
  );
}

export const ESDS = fullbox(
  'esds',
  0,
  [0x03, 0x80, 0x80, 0x80, 0x22, 0x00, 0x02, 0x00], // ES_Descriptor, ES_ID 2, no flags
  [0x04, 0x80, 0x80, 0x80, 0x14, 0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], // DecoderConfig, OTI 0x40
  [0x05, 0x80, 0x80, 0x80, 0x02, 0x12, 0x10], // AudioSpecificConfig: AOT 2
  [0x06, 0x80, 0x80, 0x80, 0x01, 0x02],
);
