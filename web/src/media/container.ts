/**
 * Minimal parsers for the two containers MediaSource accepts as a byte
 * stream: WebM (EBML/Matroska) and fragmented MP4 (ISO BMFF).
 *
 * The swarm delivers a file as verified chunks in any order, so the player
 * needs to know where the initialization segment ends, which MIME type to
 * give `addSourceBuffer`, and where inside an arbitrary window of bytes a
 * media segment (Cluster / moof) starts and at what time — to start playback
 * or seek without having the whole file. Only those few fields are read.
 *
 * Every read is bounds-checked: truncated input gives `null`, malformed
 * input a plain `Error` with a message, never a RangeError or an endless loop.
 */

export type ContainerKind = 'webm' | 'mp4';

export interface InitInfo {
  kind: ContainerKind;
  /** Bytes before the first media segment; append these first, once. */
  initLength: number;
  /** For `MediaSource.isTypeSupported` / `addSourceBuffer`. */
  mimeType: string;
  durationSeconds: number | null;
  /** WebM: nanoseconds per Cluster timecode unit (Matroska default 1e6). */
  timecodeScaleNs: number;
  /** MP4: track_ID → media timescale (mdhd), to turn tfdt into seconds. */
  timescales: Map<number, number>;
}

// ---------------------------------------------------------------- helpers

/** Big-endian unsigned integer of n ≤ 8 bytes; callers check bounds first. */
function uintBE(b: Uint8Array, pos: number, n: number): number {
  let v = 0;
  for (let i = 0; i < n; i++) v = v * 256 + (b[pos + i] ?? 0);
  return v;
}

function ascii(b: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i++) {
    const c = b[i] ?? 0;
    if (c === 0) break; // EBML strings may be NUL-padded
    s += String.fromCharCode(c);
  }
  return s;
}

const hex2 = (n: number): string => n.toString(16).padStart(2, '0');
const dec2 = (n: number): string => String(n).padStart(2, '0');

function mime(kind: ContainerKind, video: string[], audio: string[]): string {
  const type = video.length > 0 ? 'video' : 'audio';
  return `${type}/${kind}; codecs="${[...video, ...audio].join(',')}"`;
}

// ------------------------------------------------------------------- EBML

const EBML_ID = 0x1a45dfa3;
const SEGMENT_ID = 0x18538067;
const CLUSTER_ID = 0x1f43b675;
const TIMECODE_ID = 0xe7;
const CRC32_ID = 0xbf;
const INFO_ID = 0x1549a966;
const TIMECODE_SCALE_ID = 0x2ad7b1;
const DURATION_ID = 0x4489;
const TRACKS_ID = 0x1654ae6b;
const TRACK_ENTRY_ID = 0xae;
const CODEC_ID_ID = 0x86;
const DOCTYPE_ID = 0x4282;

/** Length in bytes of the vint starting with `first` (0 if invalid). */
const vintLength = (first: number): number => (first === 0 ? 0 : Math.clz32(first) - 23);

interface Vint {
  value: number;
  length: number;
  /** A size with all value bits set means "unknown" (live streams). */
  unknown: boolean;
}

/**
 * The one EBML vint reader. Element IDs keep their length marker (that is
 * how the spec writes them); sizes drop it. null = invalid or cut off.
 */
function readVint(b: Uint8Array, pos: number, isId: boolean): Vint | null {
  const first = b[pos];
  if (first === undefined) return null;
  const length = vintLength(first);
  if (length === 0 || pos + length > b.length || (isId && length > 4)) return null;
  const mask = 0xff >> length;
  let value = isId ? first : first & mask;
  let allOnes = (first & mask) === mask;
  for (let i = 1; i < length; i++) {
    const x = b[pos + i] ?? 0;
    value = value * 256 + x;
    if (x !== 0xff) allOnes = false;
  }
  return { value, length, unknown: !isId && allOnes };
}

interface EbmlElement {
  id: number;
  dataStart: number;
  /** null: unknown size. */
  size: number | null;
}

/** 'short': more bytes needed to read the header; 'bad': not an element. */
function readElement(b: Uint8Array, pos: number): EbmlElement | 'short' | 'bad' {
  const id = readVint(b, pos, true);
  if (!id) return pos >= b.length || pos + vintLength(b[pos] ?? 0) > b.length ? 'short' : 'bad';
  const sp = pos + id.length;
  const size = readVint(b, sp, false);
  if (!size) return sp >= b.length || sp + vintLength(b[sp] ?? 0) > b.length ? 'short' : 'bad';
  return { id: id.value, dataStart: sp + size.length, size: size.unknown ? null : size.value };
}

/** Children of an element whose bytes are all present; anything odd is malformed. */
function* ebmlChildren(b: Uint8Array, start: number, end: number): Generator<{ id: number; start: number; end: number }> {
  const view = b.subarray(0, end);
  for (let pos = start; pos < end; ) {
    const el = readElement(view, pos);
    if (typeof el === 'string' || el.size === null || el.dataStart + el.size > end) {
      throw new Error(`WebM: malformed element at byte ${pos}`);
    }
    yield { id: el.id, start: el.dataStart, end: el.dataStart + el.size };
    pos = el.dataStart + el.size;
  }
}

function ebmlUint(b: Uint8Array, start: number, end: number): number {
  if (end - start > 8) throw new Error(`WebM: integer of ${end - start} bytes at byte ${start}`);
  return uintBE(b, start, end - start);
}

function ebmlFloat(b: Uint8Array, start: number, end: number): number {
  const dv = new DataView(b.buffer, b.byteOffset + start, end - start);
  if (end - start === 4) return dv.getFloat32(0);
  if (end - start === 8) return dv.getFloat64(0);
  if (end === start) return 0;
  throw new Error(`WebM: float of ${end - start} bytes at byte ${start}`);
}

const WEBM_CODECS = new Map([
  ['V_VP8', 'vp8'],
  ['V_VP9', 'vp9'],
  ['V_AV1', 'av01.0.08M.08'],
  ['A_OPUS', 'opus'],
  ['A_VORBIS', 'vorbis'],
]);

function parseWebmInit(b: Uint8Array): InitInfo | null {
  // Top level: the EBML header, then the Segment.
  let pos = 0;
  let docType = 'matroska'; // EBML default when DocType is absent
  let segment: EbmlElement | null = null;
  while (!segment) {
    const el = readElement(b, pos);
    if (el === 'short') return null;
    if (el === 'bad') throw new Error(`WebM: malformed element at byte ${pos}`);
    if (el.id === SEGMENT_ID) {
      segment = el;
      break;
    }
    if (el.size === null) throw new Error(`WebM: unknown-size element before the Segment at byte ${pos}`);
    const end = el.dataStart + el.size;
    if (end > b.length) return null;
    if (el.id === EBML_ID) {
      for (const c of ebmlChildren(b, el.dataStart, end)) if (c.id === DOCTYPE_ID) docType = ascii(b, c.start, c.end);
    }
    pos = end;
  }
  if (docType !== 'webm' && docType !== 'matroska') throw new Error(`WebM: unsupported DocType "${docType}"`);

  // Segment children up to the first Cluster; all but Info and Tracks are skipped by size.
  const segEnd = segment.size === null ? Infinity : segment.dataStart + segment.size;
  let scaleNs = 1e6;
  let duration = 0;
  const video: string[] = [];
  const audio: string[] = [];
  for (pos = segment.dataStart; pos < segEnd; ) {
    const el = readElement(b, pos);
    if (el === 'short') return null;
    if (el === 'bad') throw new Error(`WebM: malformed element at byte ${pos}`);
    if (el.id === CLUSTER_ID) {
      if (video.length + audio.length === 0) throw new Error('WebM: no audio or video track before the first Cluster');
      const durationSeconds = (duration * scaleNs) / 1e9;
      return {
        kind: 'webm',
        initLength: pos,
        mimeType: mime('webm', video, audio),
        durationSeconds: durationSeconds > 0 && Number.isFinite(durationSeconds) ? durationSeconds : null,
        timecodeScaleNs: scaleNs,
        timescales: new Map(),
      };
    }
    if (el.size === null) throw new Error(`WebM: unknown-size element 0x${el.id.toString(16)} before the first Cluster`);
    const end = el.dataStart + el.size;
    if (end > segEnd) throw new Error(`WebM: element at byte ${pos} overruns its Segment`);
    if ((el.id === INFO_ID || el.id === TRACKS_ID) && end > b.length) return null;
    if (el.id === INFO_ID) {
      for (const c of ebmlChildren(b, el.dataStart, end)) {
        if (c.id === TIMECODE_SCALE_ID) scaleNs = ebmlUint(b, c.start, c.end) || 1e6;
        if (c.id === DURATION_ID) duration = ebmlFloat(b, c.start, c.end);
      }
    } else if (el.id === TRACKS_ID) {
      for (const entry of ebmlChildren(b, el.dataStart, end)) {
        if (entry.id !== TRACK_ENTRY_ID) continue;
        for (const c of ebmlChildren(b, entry.start, entry.end)) {
          if (c.id !== CODEC_ID_ID) continue;
          const id = ascii(b, c.start, c.end);
          const codec = WEBM_CODECS.get(id);
          // Subtitle and other tracks are not for MediaSource; skip them.
          if (!id.startsWith('V_') && !id.startsWith('A_')) continue;
          if (codec === undefined) throw new Error(`WebM: unsupported codec ${id}`);
          (id.startsWith('V_') ? video : audio).push(codec);
        }
      }
    }
    pos = end;
  }
  throw new Error('WebM: the Segment ends without a Cluster');
}

/**
 * Where the Cluster Timecode value lies if a Cluster starts at `pos`. The
 * Timecode check keeps 1F 43 B6 75 inside frame data from passing as a Cluster.
 */
function clusterTimecode(b: Uint8Array, pos: number): { start: number; end: number } | null {
  if (pos + 4 > b.length || uintBE(b, pos, 4) !== CLUSTER_ID) return null;
  const size = readVint(b, pos + 4, false);
  if (!size) return null;
  let p = pos + 4 + size.length;
  if (b[p] === CRC32_ID) {
    // Matroska allows a CRC-32 as first child; WebM muxers do not write one.
    if (b[p + 1] !== 0x84) return null;
    p += 6;
  }
  if (b[p] !== TIMECODE_ID) return null;
  const tsize = readVint(b, p + 1, false);
  if (!tsize || tsize.unknown || tsize.value < 1 || tsize.value > 8) return null;
  const start = p + 1 + tsize.length;
  const end = start + tsize.value;
  if (end > b.length) return null;
  if (!size.unknown && pos + 4 + size.length + size.value < end) return null;
  return { start, end };
}

// -------------------------------------------------------------------- MP4

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

function parseMp4Init(b: Uint8Array): InitInfo | null {
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

// ----------------------------------------------------------------- public

/** Which container a file is, from its first 8 bytes; null if neither. */
export function detectContainer(head: Uint8Array): ContainerKind | null {
  if (head.length >= 4 && uintBE(head, 0, 4) === EBML_ID) return 'webm';
  if (head.length >= 8 && ascii(head, 4, 8) === 'ftyp') return 'mp4';
  return null;
}

/**
 * Reads the initialization segment from the first bytes of a file. null:
 * `head` is too short yet (fetch more and call again). Throws an Error for
 * content that is neither container, is malformed, or cannot be streamed.
 */
export function parseInit(head: Uint8Array): InitInfo | null {
  const kind = detectContainer(head);
  if (kind === 'webm') return parseWebmInit(head);
  if (kind === 'mp4') return parseMp4Init(head);
  const magic = [0x1a, 0x45, 0xdf, 0xa3];
  const ftyp = [0x66, 0x74, 0x79, 0x70];
  const maybeWebm = head.length < 4 && head.every((x, i) => x === magic[i]);
  const maybeMp4 = head.length < 8 && head.subarray(4).every((x, i) => x === ftyp[i]);
  if (maybeWebm || maybeMp4) return null;
  throw new Error('not a WebM or MP4 file: expected an EBML header (1A 45 DF A3) or an ftyp box at byte 0');
}

/**
 * Index in `bytes` (a window of the file at any offset) of the first media
 * segment start at or after `from`, or null. Lets a peer that joins mid-file
 * or seeks start appending at a segment boundary. Candidates are validated
 * (Cluster + Timecode, moof + mfhd); one whose validation bytes run past the
 * end of the window is not reported.
 */
export function findSegmentStart(info: InitInfo, bytes: Uint8Array, from = 0): number | null {
  const start = Number.isFinite(from) ? Math.max(0, Math.ceil(from)) : 0;
  if (info.kind === 'webm') {
    for (let i = bytes.indexOf(0x1f, start); i !== -1; i = bytes.indexOf(0x1f, i + 1)) {
      if (clusterTimecode(bytes, i)) return i;
    }
  } else {
    for (let j = bytes.indexOf(0x6d /* 'm' */, start + 4); j !== -1; j = bytes.indexOf(0x6d, j + 1)) {
      if (isMoofStart(bytes, j - 4)) return j - 4;
    }
  }
  return null;
}

/**
 * Media time in seconds at which the segment starting at bytes[0] begins
 * (WebM: Cluster Timecode; MP4: smallest tfdt of the moof, which must be
 * complete in `bytes`). null if too short or not a segment start.
 */
export function segmentStartTime(info: InitInfo, bytes: Uint8Array): number | null {
  if (info.kind === 'webm') {
    const tc = clusterTimecode(bytes, 0);
    return tc ? (uintBE(bytes, tc.start, tc.end - tc.start) * info.timecodeScaleNs) / 1e9 : null;
  }
  if (!isMoofStart(bytes, 0)) return null;
  try {
    return moofStartTime(info, bytes);
  } catch {
    return null; // a malformed moof is "not a segment start"
  }
}

/**
 * How many of `bytes` (a window of the file starting at a media segment or other
 * top-level element, e.g. just after the initialization segment) form whole segments:
 * the offset of the last boundary whose every byte before it is here. Only whole
 * segments go to `appendBuffer`: Firefox keeps just the first frame of a WebM Cluster
 * split across appends. WebM elements are walked by their sizes; a Cluster of unknown
 * size (live streams) ends where the next Cluster starts. An MP4 `moof` counts only
 * with the box after it (its `mdat`). Throws an Error on bytes that are no element.
 */
export function wholeSegmentsLength(info: InitInfo, bytes: Uint8Array): number {
  let pos = 0;
  let whole = 0;
  if (info.kind === 'webm') {
    for (;;) {
      const el = readElement(bytes, pos);
      if (el === 'short') return whole;
      if (el === 'bad') throw new Error(`WebM: malformed element at byte ${pos} of a media segment run`);
      if (el.size === null) {
        const next = findSegmentStart(info, bytes, el.dataStart);
        if (next === null) return whole;
        pos = next;
      } else {
        const end = el.dataStart + el.size;
        if (end > bytes.length) return whole;
        pos = end;
      }
      whole = pos;
    }
  }
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
 * For a WebM Cluster starting at `bytes[0]` and not yet whole: the part of it that can
 * be appended now, so playback need not wait for the whole Cluster. That is the Cluster's
 * ID with an unknown size (as live streams write it: the next Cluster ends it for the
 * parser) and its children up to the last complete one. `end` is where those children end
 * in `bytes`, `clusterEnd` where the Cluster ends (null for an unknown size), and
 * `children` where its children start. Null when there is no complete block yet, or when
 * `bytes` does not start with a Cluster.
 */
export function openClusterHead(
  bytes: Uint8Array,
): { head: Uint8Array; children: number; end: number; clusterEnd: number | null } | null {
  if (!clusterTimecode(bytes, 0)) return null;
  const el = readElement(bytes, 0);
  if (typeof el === 'string') return null;
  const end = completeChildrenEnd(bytes, el.dataStart, el.size === null ? Infinity : el.dataStart + el.size);
  // The Timecode alone plays nothing.
  const timecode = readElement(bytes, el.dataStart);
  if (typeof timecode === 'string' || timecode.size === null || end <= timecode.dataStart + timecode.size) return null;
  const head = new Uint8Array(4 + 8);
  head.set(bytes.subarray(0, 4));
  head.set([0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 4);
  return { head, children: el.dataStart, end, clusterEnd: el.size === null ? null : el.dataStart + el.size };
}

/** Where the complete elements from `pos` on, inside a parent ending at `limit`, end. */
export function completeChildrenEnd(bytes: Uint8Array, pos: number, limit: number): number {
  const stop = Math.min(limit, bytes.length);
  while (pos < stop) {
    const el = readElement(bytes, pos);
    if (typeof el === 'string' || el.size === null) break;
    const end = el.dataStart + el.size;
    if (end > stop) break;
    pos = end;
  }
  return pos;
}
