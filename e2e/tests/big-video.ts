/**
 * A long WebM made from a short one without encoding: its Clusters repeated, each copy's
 * Cluster timecodes moved on by the source's duration, the Segment's Duration set to the
 * whole. SeekHead, Cues, Tags and Void elements are left out (they would point into the
 * source); nothing else needs them. Written to disk piece by piece: memory stays small for
 * any length.
 */
import { closeSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';

const EBML = 0x1a45dfa3;
const SEGMENT = 0x18538067;
const INFO = 0x1549a966;
const TRACKS = 0x1654ae6b;
const CLUSTER = 0x1f43b675;
const DURATION = 0x4489;
const TIMECODE = 0xe7;

interface Element {
  id: number;
  /** Where the element starts (its ID), where its data starts and ends. */
  start: number;
  data: number;
  end: number;
}

function vint(bytes: Uint8Array, at: number, keepMarker: boolean): { value: number; length: number } {
  const first = bytes[at] ?? 0;
  const length = Math.clz32(first) - 23;
  if (length < 1 || length > 8) throw new Error(`bad EBML number at ${at}`);
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = (first & (0xff >> length)) === 0xff >> length;
  for (let i = 1; i < length; i++) {
    const b = bytes[at + i] ?? 0;
    value = value * 256 + b;
    allOnes &&= b === 0xff;
  }
  if (!keepMarker && allOnes) throw new Error(`unknown size at ${at}: not supported here`);
  return { value, length };
}

function children(bytes: Uint8Array, from: number, to: number): Element[] {
  const out: Element[] = [];
  let at = from;
  while (at < to) {
    const id = vint(bytes, at, true);
    const size = vint(bytes, at + id.length, false);
    const data = at + id.length + size.length;
    out.push({ id: id.value, start: at, data, end: data + size.value });
    at = data + size.value;
  }
  return out;
}

/** An element with an 8-byte size field. */
function element(idBytes: number[], body: Uint8Array): Uint8Array {
  const out = new Uint8Array(idBytes.length + 8 + body.length);
  out.set(idBytes);
  const size = new DataView(out.buffer, idBytes.length, 8);
  size.setUint32(0, Math.floor(body.length / 2 ** 32) | 0x01000000);
  size.setUint32(4, body.length >>> 0);
  out.set(body, idBytes.length + 8);
  return out;
}

/**
 * Writes `out`: `source` (a WebM with known element sizes, timecodes in milliseconds) made
 * at least `minBytes` long by repeating its Clusters. Returns its size and duration.
 */
export function makeRepeatedWebm(source: string, out: string, minBytes: number): { bytes: number; seconds: number } {
  const src = new Uint8Array(readFileSync(source));
  const top = children(src, 0, src.length);
  const header = top.find((e) => e.id === EBML);
  const segment = top.find((e) => e.id === SEGMENT);
  if (!header || !segment) throw new Error(`${source} is not a WebM file`);
  const parts = children(src, segment.data, segment.end);
  const info = parts.find((e) => e.id === INFO);
  const tracks = parts.find((e) => e.id === TRACKS);
  const clusters = parts.filter((e) => e.id === CLUSTER);
  if (!info || !tracks || clusters.length === 0) throw new Error(`${source} lacks Info, Tracks or Clusters`);
  const infoBytes = src.slice(info.start, info.end);
  const duration = children(src, info.data, info.end).find((e) => e.id === DURATION);
  if (!duration) throw new Error(`${source} has no Duration`);
  const durationView = new DataView(infoBytes.buffer, duration.data - info.start, duration.end - duration.data);
  const period = Math.round(durationView.byteLength === 8 ? durationView.getFloat64(0) : durationView.getFloat32(0));
  const clusterBytes = clusters.reduce((n, c) => n + 4 + 8 + (2 + 8) + (c.end - c.data) - timecodeLength(src, c), 0);
  const copies = Math.max(1, Math.ceil(minBytes / clusterBytes));
  const total = period * copies;
  if (durationView.byteLength === 8) durationView.setFloat64(0, total);
  else durationView.setFloat32(0, total);
  const tracksBytes = src.subarray(tracks.start, tracks.end);
  const segmentSize = infoBytes.length + tracksBytes.length + clusterBytes * copies;

  const tmp = `${out}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  let written = 0;
  const put = (b: Uint8Array): void => {
    writeSync(fd, b);
    written += b.length;
  };
  try {
    put(src.subarray(header.start, header.end));
    const segHead = element([0x18, 0x53, 0x80, 0x67], new Uint8Array(0));
    new DataView(segHead.buffer).setUint32(4, Math.floor(segmentSize / 2 ** 32) | 0x01000000);
    new DataView(segHead.buffer).setUint32(8, segmentSize >>> 0);
    put(segHead);
    put(infoBytes);
    put(tracksBytes);
    for (let k = 0; k < copies; k++) {
      for (const c of clusters) put(shiftedCluster(src, c, k * period));
    }
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, out);
  return { bytes: written, seconds: total / 1000 };
}

/** Bytes of the Timecode element of Cluster `c`. */
function timecodeLength(src: Uint8Array, c: Element): number {
  const tc = children(src, c.data, c.end).find((e) => e.id === TIMECODE);
  if (!tc) throw new Error(`a Cluster at ${c.start} has no Timecode`);
  return tc.end - tc.start;
}

/** Cluster `c` with its Timecode moved on by `shift` (an 8-byte Timecode, an 8-byte size). */
function shiftedCluster(src: Uint8Array, c: Element, shift: number): Uint8Array {
  const parts = children(src, c.data, c.end);
  const tc = parts.find((e) => e.id === TIMECODE)!;
  let value = 0;
  for (let i = tc.data; i < tc.end; i++) value = value * 256 + (src[i] ?? 0);
  const timecode = new Uint8Array(2 + 8);
  timecode[0] = TIMECODE;
  timecode[1] = 0x88;
  const v = new DataView(timecode.buffer, 2, 8);
  v.setUint32(0, Math.floor((value + shift) / 2 ** 32));
  v.setUint32(4, (value + shift) >>> 0);
  const rest = parts.filter((e) => e !== tc);
  const body = new Uint8Array(timecode.length + rest.reduce((n, e) => n + e.end - e.start, 0));
  body.set(timecode);
  let at = timecode.length;
  for (const e of rest) {
    body.set(src.subarray(e.start, e.end), at);
    at += e.end - e.start;
  }
  return element([0x1f, 0x43, 0xb6, 0x75], body);
}
