/**
 * Fragmented MP4 (ISO BMFF): the initialization segment (moov: tracks, codecs,
 * timescales, duration), moof starts and times, and whole moof + mdat pairs. Every
 * read is bounds-checked: truncated input gives `null`, malformed input a plain `Error`.
 */
import { ascii, mime, uintBE } from './bytes.js';
import type { InitInfo } from './container.js';

const hex2 = (n: number): string => n.toString(16).padStart(2, '0');
const dec2 = (n: number): string => String(n).padStart(2, '0');

interface Box {
  type: string;
  start: number;
  dataStart: number;
  /** Infinity for a size-0 ("to end of file") top-level box. */
  end: number;
}

/** 'short': header cut off; 'bad': impossible size. */
function readBox(b: Uint8Array, pos: number, limit: number): Box | 'short' | 'bad' {
  if (pos + 8 > b.length) return 'short';
  let size = uintBE(b, pos, 4);
  const type = ascii(b, pos + 4, pos + 8).padEnd(4, '\0');
  let header = 8;
  if (size === 1) {
    if (pos + 16 > b.length) return 'short';
    size = uintBE(b, pos + 8, 8);
    header = 16;
  }
  if (size === 0) return { type, start: pos, dataStart: pos + header, end: limit };
  if (size < header || !Number.isSafeInteger(size)) return 'bad';
  return { type, start: pos, dataStart: pos + header, end: pos + size };
}

/** The one box iterator, for parents whose bytes are all present. */
function* boxes(b: Uint8Array, start: number, end: number): Generator<Box> {
  for (let pos = start; pos + 8 <= end; ) {
    const box = readBox(b, pos, end);
    if (typeof box === 'string' || box.end > end) throw new Error(`MP4: malformed box at byte ${pos}`);
    yield box;
    pos = box.end;
  }
}

/** First descendant along `path`, e.g. find(b, trak, 'mdia', 'mdhd'). */
function find(b: Uint8Array, parent: Box, ...path: string[]): Box | null {
  let cur = parent;
  for (const type of path) {
    let next: Box | null = null;
    for (const c of boxes(b, cur.dataStart, cur.end)) {
      if (c.type === type) {
        next = c;
        break;
      }
    }
    if (!next) return null;
    cur = next;
  }
  return cur;
}

/** Throws unless the box holds at least n payload bytes. */
function need(box: Box, n: number): number {
  if (box.end - box.dataStart < n) throw new Error(`MP4: '${box.type}' box at byte ${box.start} is too short`);
  return box.dataStart;
}

/** mvhd and mdhd share this layout: (timescale, duration) after the dates. */
function timescaleAndDuration(b: Uint8Array, box: Box): { timescale: number; duration: number } {
  const d = need(box, 20);
  if (b[d] === 1) {
    need(box, 32);
    const duration = uintBE(b, d + 24, 8);
    return { timescale: uintBE(b, d + 20, 4), duration: duration === 2 ** 64 - 1 ? 0 : duration };
  }
  const duration = uintBE(b, d + 16, 4);
  return { timescale: uintBE(b, d + 12, 4), duration: duration === 0xffffffff ? 0 : duration };
}

/** `mp4a.OO.A` from the esds (object type and AAC audio object type); mp4a.40.2 if unreadable. */
function esdsCodec(b: Uint8Array, esds: Box): string {
  let p = esds.dataStart + 4; // after version/flags
  const byte = (): number => {
    const v = b[p++];
    if (v === undefined || p > esds.end) throw new Error('esds');
    return v;
  };
  const descriptor = (tag: number): void => {
    if (byte() !== tag) throw new Error('esds');
    for (let i = 0; i < 4 && byte() & 0x80; i++); // size: skip, we read in order
  };
  try {
    descriptor(0x03); // ES_Descriptor
    p += 2;
    const flags = byte();
    if (flags & 0x80) p += 2;
    if (flags & 0x40) p += byte();
    if (flags & 0x20) p += 2;
    descriptor(0x04); // DecoderConfigDescriptor
    const oti = byte();
    if (oti !== 0x40) return `mp4a.${hex2(oti)}`;
    p += 12;
    descriptor(0x05); // DecoderSpecificInfo: AudioSpecificConfig
    const a = byte();
    const aot = a >> 3 === 31 ? 32 + (((a & 7) << 3) | (byte() >> 5)) : a >> 3;
    return `mp4a.40.${aot}`;
  } catch {
    return 'mp4a.40.2';
  }
}

/** RFC 6381 codec string of a sample entry; falls back to common profiles when details are missing. */
function sampleEntryCodec(b: Uint8Array, entry: Box): string {
  const sub = (offset: number, type: string): Box | null =>
    entry.dataStart + offset <= entry.end
      ? find(b, { type: entry.type, start: entry.start, dataStart: entry.dataStart + offset, end: entry.end }, type)
      : null;
  switch (entry.type) {
    case 'avc1':
    case 'avc3': {
      const avcC = sub(78, 'avcC');
      if (!avcC) return `${entry.type}.42e01e`;
      const d = need(avcC, 4);
      return `${entry.type}.${hex2(b[d + 1] ?? 0)}${hex2(b[d + 2] ?? 0)}${hex2(b[d + 3] ?? 0)}`;
    }
    case 'hev1':
    case 'hvc1':
      return `${entry.type}.1.6.L93.B0`;
    case 'vp09': {
      const vpcC = sub(78, 'vpcC');
      if (!vpcC || vpcC.end - vpcC.dataStart < 7) return 'vp09.00.10.08';
      const d = vpcC.dataStart + 4;
      return `vp09.${dec2(b[d] ?? 0)}.${dec2(b[d + 1] ?? 0)}.${dec2((b[d + 2] ?? 0) >> 4)}`;
    }
    case 'av01': {
      const av1C = sub(78, 'av1C');
      if (!av1C || av1C.end - av1C.dataStart < 3) return 'av01.0.08M.08';
      const x = b[av1C.dataStart + 1] ?? 0;
      const y = b[av1C.dataStart + 2] ?? 0;
      const depth = y & 0x40 ? (y & 0x20 ? 12 : 10) : 8;
      return `av01.${x >> 5}.${dec2(x & 0x1f)}${y & 0x80 ? 'H' : 'M'}.${dec2(depth)}`;
    }
    case 'mp4a': {
      // QuickTime sound description versions 1 and 2 carry extra fields.
      const version = entry.dataStart + 10 <= entry.end ? uintBE(b, entry.dataStart + 8, 2) : 0;
      const esds = sub(28 + (version === 1 ? 16 : version === 2 ? 36 : 0), 'esds');
      return esds ? esdsCodec(b, esds) : 'mp4a.40.2';
    }
    case 'Opus':
      return 'opus';
    case 'fLaC':
      return 'flac';
    default:
      throw new Error(`MP4: unsupported codec '${entry.type}'`);
  }
}

function parseMoov(b: Uint8Array, moov: Box): Omit<InitInfo, 'kind' | 'initLength'> {
  const mvhd = find(b, moov, 'mvhd');
  if (!mvhd) throw new Error('MP4: moov has no mvhd');
  const movie = timescaleAndDuration(b, mvhd);
  const mehd = find(b, moov, 'mvex', 'mehd');
  let fragmentDuration = 0;
  if (mehd) {
    const d = need(mehd, 8);
    fragmentDuration = b[d] === 1 ? (need(mehd, 12), uintBE(b, d + 4, 8)) : uintBE(b, d + 4, 4);
  }
  const timescales = new Map<number, number>();
  const video: string[] = [];
  const audio: string[] = [];
  for (const trak of boxes(b, moov.dataStart, moov.end)) {
    if (trak.type !== 'trak') continue;
    const tkhd = find(b, trak, 'tkhd');
    const mdhd = find(b, trak, 'mdia', 'mdhd');
    const hdlr = find(b, trak, 'mdia', 'hdlr');
    if (!tkhd || !mdhd || !hdlr) throw new Error(`MP4: trak at byte ${trak.start} lacks tkhd, mdhd or hdlr`);
    const t = need(tkhd, 24);
    const trackId = b[t] === 1 ? uintBE(b, t + 20, 4) : uintBE(b, t + 12, 4);
    timescales.set(trackId, timescaleAndDuration(b, mdhd).timescale);
    const handler = ascii(b, need(hdlr, 12) + 8, hdlr.dataStart + 12);
    if (handler !== 'vide' && handler !== 'soun') continue;
    const stsd = find(b, trak, 'mdia', 'minf', 'stbl', 'stsd');
    if (!stsd) throw new Error(`MP4: track ${trackId} has no stsd`);
    const entry = boxes(b, need(stsd, 8) + 8, stsd.end).next().value;
    if (!entry) throw new Error(`MP4: track ${trackId} has no sample entry`);
    (handler === 'vide' ? video : audio).push(sampleEntryCodec(b, entry));
  }
  if (video.length + audio.length === 0) throw new Error('MP4: no audio or video track in moov');
  const ticks = fragmentDuration || movie.duration;
  return {
    mimeType: mime('mp4', video, audio),
    durationSeconds: ticks > 0 && movie.timescale > 0 ? ticks / movie.timescale : null,
    timecodeScaleNs: 1e6,
    timescales,
  };
}

export function parseMp4Init(b: Uint8Array): InitInfo | null {
  let moov: Box | null = null; // parsed once a moof shows the file is fragmented
  for (let pos = 0; ; ) {
    const box = readBox(b, pos, Infinity);
    if (box === 'short') return null;
    if (box === 'bad') throw new Error(`MP4: malformed box header at byte ${pos}`);
    if (box.type === 'moof') {
      if (!moov) throw new Error('MP4: moof before moov');
      return { kind: 'mp4', initLength: pos, ...parseMoov(b, moov) };
    }
    if (box.type === 'mdat') {
      throw new Error('MP4: mdat before any moof: the file is not fragmented (remux with -movflags frag_keyframe+empty_moov+default_base_moof)');
    }
    if (box.end === Infinity) throw new Error(`MP4: '${box.type}' box at byte ${pos} runs to the end of the file; no moof follows`);
    if (box.type === 'moov') {
      if (box.end > b.length) return null;
      moov = box;
    }
    pos = box.end;
  }
}

/** A moof header (size ≥ 24, since it must hold the 16-byte mfhd) followed by its mfhd. */
function isMoofStart(b: Uint8Array, pos: number): boolean {
  return (
    pos >= 0 &&
    pos + 16 <= b.length &&
    ascii(b, pos + 4, pos + 8) === 'moof' &&
    uintBE(b, pos, 4) >= 24 &&
    uintBE(b, pos + 8, 4) === 16 &&
    ascii(b, pos + 12, pos + 16) === 'mfhd'
  );
}

function moofStartTime(info: InitInfo, b: Uint8Array): number | null {
  const moof = readBox(b, 0, Infinity);
  if (typeof moof === 'string' || moof.end > b.length) return null;
  let best: number | null = null;
  for (const traf of boxes(b, moof.dataStart, moof.end)) {
    if (traf.type !== 'traf') continue;
    const tfhd = find(b, traf, 'tfhd');
    const tfdt = find(b, traf, 'tfdt');
    if (!tfhd || !tfdt) continue;
    const timescale = info.timescales.get(uintBE(b, need(tfhd, 8) + 4, 4));
    if (!timescale) continue;
    const d = need(tfdt, 8);
    const t = (b[d] === 1 ? (need(tfdt, 12), uintBE(b, d + 4, 8)) : uintBE(b, d + 4, 4)) / timescale;
    if (best === null || t < best) best = t;
  }
  return best;
}

/** The first moof start (moof + mfhd) at or after `start` in `bytes`, or null. */
export function findMoofStart(bytes: Uint8Array, start: number): number | null {
  for (let j = bytes.indexOf(0x6d /* 'm' */, start + 4); j !== -1; j = bytes.indexOf(0x6d, j + 1)) {
    if (isMoofStart(bytes, j - 4)) return j - 4;
  }
  return null;
}

/** The smallest tfdt in seconds of the moof starting at bytes[0] (whole in `bytes`), or null. */
export function fragmentStartTime(info: InitInfo, bytes: Uint8Array): number | null {
  if (!isMoofStart(bytes, 0)) return null;
  try {
    return moofStartTime(info, bytes);
  } catch {
    return null; // a malformed moof is "not a segment start"
  }
}

/** `wholeSegmentsLength` for MP4: top-level boxes, a moof only with the box after it. */
export function wholeFragmentsLength(bytes: Uint8Array): number {
  let pos = 0;
  let whole = 0;
  for (;;) {
    const box = readBox(bytes, pos, Infinity);
    if (box === 'short') return whole;
    if (box === 'bad') throw new Error(`MP4: malformed box at byte ${pos} of a media segment run`);
    if (box.end > bytes.length) return whole;
    pos = box.end;
    if (box.type !== 'moof') whole = pos;
  }
}

/**
 * `firstSegmentEnd` for MP4: where the top-level box at `bytes[0]` ends, a moof with the
 * box after it; null while a header needed for that is not in `bytes`.
 */
export function firstFragmentEnd(bytes: Uint8Array): number | null {
  const box = readBox(bytes, 0, Infinity);
  if (typeof box === 'string' || !Number.isFinite(box.end)) return null;
  if (box.type !== 'moof') return box.end;
  const next = readBox(bytes, box.end, Infinity);
  return typeof next === 'string' || !Number.isFinite(next.end) ? null : next.end;
}
