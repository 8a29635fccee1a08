/**
 * The presentation manifest (`NAME.ppspp.json`, docs/FORMATS.md, written by `ppspp hls
 * prepare`): each rendition of an HLS or DASH presentation as one PPSPP content, and where
 * each segment a player asks for lies in it.
 */
import { PpsppError, messageOf } from '../errors.js';
import type { OriginPart } from '../http-origin.js';
import { type LiveManifest, parseLiveManifest, withoutHash } from './live-manifest.js';

export const MANIFEST_FORMAT = 'ppspp-presentation';
export const MANIFEST_VERSION = 1;

/** A part as the manifest names it, its URL made absolute: what the HTTP origin reads. */
export type ManifestPart = OriginPart;

export interface Rendition {
  /** The media playlist's URI relative to the master (a DASH Representation's id). */
  id: string;
  kind: 'video' | 'audio' | 'muxed';
  bandwidth: number | null;
  resolution: string | null;
  /** The swarm's root hash, hex, and what a swarm URI says of it. */
  root: string;
  hash: string;
  chunkSize: number;
  length: number;
  /** Absolute URL of the rendition's tree file. */
  tree: string;
  parts: ManifestPart[];
}

export interface Manifest {
  /** Absolute URL the manifest was read from (its relative URLs are resolved against it). */
  url: string;
  type: 'vod';
  /** Absolute URL of the master playlist or MPD. */
  source: string;
  renditions: Rendition[];
}

/** A segment's place: which rendition, and its bytes there (end exclusive). */
export interface SegmentRef {
  rendition: number;
  start: number;
  end: number;
}

function bad(url: string, what: string): PpsppError {
  return new PpsppError('bad-manifest', `${url}: ${what}`);
}

function field<T>(o: Record<string, unknown>, name: string, where: string, url: string, check: (v: unknown) => v is T, want: string): T {
  const v = o[name];
  if (!check(v)) throw bad(url, `${where}.${name} must be ${want}, not ${JSON.stringify(v)}`);
  return v;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks a manifest's JSON text read from `url`; throws `bad-manifest` naming what is wrong. */
export function parseManifest(text: string, url: string): Manifest | LiveManifest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw bad(url, `not JSON: ${messageOf(err)}`);
  }
  if (!isObject(json)) throw bad(url, 'not a JSON object');
  if (json.format !== MANIFEST_FORMAT) throw bad(url, `format must be ${JSON.stringify(MANIFEST_FORMAT)}, not ${JSON.stringify(json.format)}`);
  if (json.version !== MANIFEST_VERSION) throw bad(url, `version ${JSON.stringify(json.version)} is not supported (this build reads ${MANIFEST_VERSION})`);
  if (json.type === 'live') return parseLiveManifest(json, url);
  if (json.type !== 'vod') throw bad(url, `type ${JSON.stringify(json.type)} is not supported (this build reads "vod" and "live")`);
  const at = (rel: string): string => new URL(rel, url).href;
  const source = at(field(json, 'source', 'manifest', url, isString, 'a URL'));
  if (!Array.isArray(json.renditions) || json.renditions.length === 0) throw bad(url, 'renditions must be a non-empty list');
  const renditions = json.renditions.map((r: unknown, i: number): Rendition => {
    const where = `renditions[${i}]`;
    if (!isObject(r)) throw bad(url, `${where} must be an object`);
    const kind = r.kind;
    if (kind !== 'video' && kind !== 'audio' && kind !== 'muxed') throw bad(url, `${where}.kind must be video, audio or muxed, not ${JSON.stringify(kind)}`);
    const root = field(r, 'root', where, url, isString, 'a hex root hash');
    if (!/^[0-9a-f]+$/i.test(root)) throw bad(url, `${where}.root must be hex, not ${JSON.stringify(root)}`);
    const chunkSize = field(r, 'chunkSize', where, url, isWhole, 'a whole number of bytes');
    const length = field(r, 'length', where, url, isWhole, 'a whole number of bytes');
    if (chunkSize === 0 || length === 0) throw bad(url, `${where}: chunkSize and length must not be 0`);
    if (!Array.isArray(r.parts) || r.parts.length === 0) throw bad(url, `${where}.parts must be a non-empty list`);
    let sum = 0;
    const parts = r.parts.map((p: unknown, j: number): ManifestPart => {
      const pw = `${where}.parts[${j}]`;
      if (!isObject(p)) throw bad(url, `${pw} must be an object`);
      const partLength = field(p, 'length', pw, url, isWhole, 'a whole number of bytes');
      if (partLength === 0) throw bad(url, `${pw}.length must not be 0`);
      const offset = p.offset === undefined || p.offset === null ? null : field(p, 'offset', pw, url, isWhole, 'a whole number of bytes');
      sum += partLength;
      return { url: at(field(p, 'uri', pw, url, isString, 'a URL')), offset, length: partLength };
    });
    if (sum !== length) throw bad(url, `${where}: its parts add up to ${sum} bytes, not its length ${length}`);
    const bandwidth = r.bandwidth === undefined ? null : field(r, 'bandwidth', where, url, isWhole, 'a whole number');
    const resolution = r.resolution === undefined ? null : field(r, 'resolution', where, url, isString, 'WIDTHxHEIGHT');
    return {
      id: field(r, 'id', where, url, isString, 'a string'),
      kind,
      bandwidth,
      resolution,
      root: root.toLowerCase(),
      hash: field(r, 'hash', where, url, isString, 'a hash function name'),
      chunkSize,
      length,
      tree: at(field(r, 'tree', where, url, isString, 'a URL')),
      parts,
    };
  });
  return { url, type: 'vod', source, renditions };
}

/**
 * Loads and checks the manifest at `url` (relative to the page): `manifest-unreachable`
 * if it cannot be fetched within `timeoutMs`, `bad-manifest` if it is not one.
 */
export async function loadManifest(url: string, timeoutMs: number, signal?: AbortSignal): Promise<Manifest | LiveManifest> {
  const base = typeof document !== 'undefined' ? document.baseURI : undefined;
  const absolute = new URL(url, base).href;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const onAbort = (): void => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    let response: Response;
    let text: string;
    try {
      // A live manifest changes every segment: no cached copy.
      response = await fetch(absolute, { signal: controller.signal, cache: 'no-store' });
      text = await response.text();
    } catch (err) {
      const why = signal?.aborted ? 'aborted' : controller.signal.aborted ? `no answer in ${timeoutMs} ms` : `${messageOf(err)} (the network failed, or the server does not allow this page by CORS)`;
      throw new PpsppError('manifest-unreachable', `${absolute}: ${why}`, { cause: err });
    }
    if (!response.ok) throw new PpsppError('manifest-unreachable', `${absolute}: HTTP ${response.status}`);
    return parseManifest(text, response.url || absolute);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** Where each segment URL (and byte range) lies in which rendition's content. */
export class SegmentIndex {
  /** URL without its fragment → the parts of that file: [rendition, file offset, length, content start]. */
  private readonly byUrl = new Map<string, [number, number | null, number, number][]>();

  constructor(manifest: Manifest) {
    manifest.renditions.forEach((r, ri) => {
      let start = 0;
      for (const p of r.parts) {
        const key = withoutHash(p.url);
        const list = this.byUrl.get(key) ?? [];
        list.push([ri, p.offset, p.length, start]);
        this.byUrl.set(key, list);
        start += p.length;
      }
    });
  }

  /**
   * The content range a request for `url` (bytes `rangeStart..rangeEnd`, end exclusive, if
   * given) reads, or null if no rendition holds it (not in the manifest, or a range that
   * is not within one part). Matched as given, then without the query.
   */
  find(url: string, rangeStart?: number, rangeEnd?: number): SegmentRef | null {
    const ranged = rangeEnd !== undefined && rangeEnd > 0;
    const key = withoutHash(url);
    for (const k of [key, key.split('?')[0]!]) {
      for (const [rendition, offset, length, start] of this.byUrl.get(k) ?? []) {
        if (!ranged) {
          if (offset === null) return { rendition, start, end: start + length };
          continue;
        }
        const from = offset ?? 0;
        const rs = rangeStart ?? 0;
        if (rs >= from && rangeEnd <= from + length && rs < rangeEnd) {
          return { rendition, start: start + rs - from, end: start + rangeEnd - from };
        }
      }
    }
    return null;
  }
}

/** The swarm URI of a rendition, as `ppspp root` prints it for the same content. */
export function renditionUri(r: Rendition): string {
  return `ppspp://${r.root}?len=${r.length}&cs=${r.chunkSize}&hash=${encodeURIComponent(r.hash)}`;
}
