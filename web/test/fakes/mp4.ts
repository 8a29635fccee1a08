/**
 * A small synthetic fragmented MP4 (H.264 + AAC sample entries, one moof + mdat fragment
 * a second of pseudo-random bytes), laid out as ffmpeg writes it with
 * `-movflags frag_keyframe+empty_moov+default_base_moof`: ftyp, moov (mvex), fragments.
 * Enough for the Player's parsing; no decoder ever sees it.
 */
import { randomBytes } from './webm.js';

function concat(...parts: Array<Uint8Array | number[]>): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

const text = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));

function be(v: number, n: number): number[] {
  const out: number[] = [];
  for (let i = n - 1; i >= 0; i--) out.push(Math.floor(v / 2 ** (8 * i)) % 256);
  return out;
}

const box = (type: string, ...children: Array<Uint8Array | number[]>): Uint8Array => {
  const data = concat(...children);
  return concat(be(data.length + 8, 4), text(type), data);
};

const fullbox = (type: string, version: number, ...children: Array<Uint8Array | number[]>): Uint8Array =>
  box(type, [version, 0, 0, 0], ...children);

function trak(id: number, timescale: number, handler: string, entry: Uint8Array): Uint8Array {
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

const ESDS = fullbox(
  'esds',
  0,
  [0x03, 0x80, 0x80, 0x80, 0x22, 0x00, 0x02, 0x00], // ES_Descriptor, ES_ID 2
  [0x04, 0x80, 0x80, 0x80, 0x14, 0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], // DecoderConfig, AAC
  [0x05, 0x80, 0x80, 0x80, 0x02, 0x12, 0x10], // AudioSpecificConfig: AAC LC
  [0x06, 0x80, 0x80, 0x80, 0x01, 0x02],
);

export interface SyntheticMp4 {
  file: Uint8Array;
  initLength: number;
  /** Byte offset of each fragment (its moof), and its time in seconds. */
  fragments: { offset: number; time: number }[];
  durationSeconds: number;
}

/** `seconds` fragments of about `fragmentBytes` each. */
export function syntheticMp4(seconds: number, fragmentBytes: number): SyntheticMp4 {
  const init = concat(
    box('ftyp', text('iso5'), be(512, 4), text('iso5iso6mp41')),
    box(
      'moov',
      fullbox('mvhd', 0, be(0, 8), be(1000, 4), be(seconds * 1000, 4), new Array<number>(80).fill(0)),
      trak(1, 90000, 'vide', box('avc1', new Array<number>(78).fill(0), box('avcC', [1, 0x64, 0x00, 0x1f, 0xff]))),
      trak(2, 48000, 'soun', box('mp4a', new Array<number>(28).fill(0), ESDS)),
      box('mvex', fullbox('trex', 0, be(1, 4), new Array<number>(16).fill(0))),
    ),
  );
  const fragments: Uint8Array[] = [];
  for (let s = 0; s < seconds; s++) {
    const moof = box(
      'moof',
      fullbox('mfhd', 0, be(s + 1, 4)),
      box('traf', fullbox('tfhd', 0, be(1, 4)), fullbox('tfdt', 0, be(s * 90000, 4))),
      box('traf', fullbox('tfhd', 0, be(2, 4)), fullbox('tfdt', 0, be(s * 48000, 4))),
    );
    fragments.push(concat(moof, box('mdat', randomBytes(fragmentBytes, 7000 + s))));
  }
  const file = concat(init, ...fragments);
  const offsets: { offset: number; time: number }[] = [];
  let at = init.length;
  fragments.forEach((f, s) => {
    offsets.push({ offset: at, time: s });
    at += f.length;
  });
  return { file, initLength: init.length, fragments: offsets, durationSeconds: seconds };
}
