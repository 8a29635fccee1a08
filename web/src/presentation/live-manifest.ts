/**
 * The live presentation manifest (`NAME.ppspp.json` with `"type": "live"`, docs/FORMATS.md,
 * kept by `ppspp hls live`): each rendition's live swarm and initialisation segment, and
 * the segments of the playlist's window with where their chunks lie. Read here for its
 * shape only: what it says is trusted once the engine checked its signatures (the stream
 * key's over each rendition's record, the rendition key's over each part), so the
 * records are kept as they came, for the engine to read.
 */
import { PpsppError } from '../errors.js';
import type { Rendition } from './manifest.js';

export interface LiveInit {
  /** Absolute URL of the initialisation segment. */
  url: string;
  length: number;
  /** Its hash, hex, with the rendition's hash function. */
  hash: string;
}

/** A media segment of a rendition's window. */
export interface LivePartEntry {
  /** Absolute URL, without a fragment. */
  url: string;
  firstChunk: number;
  chunks: number;
  length: number;
  /** The record as the manifest has it (`uri`, …, `munros`): what the engine checks. */
  record: Record<string, unknown>;
}

export interface LiveRenditionEntry {
  id: string;
  kind: Rendition['kind'];
  bandwidth: number | null;
  resolution: string | null;
  /** The rendition's live swarm URI (no peers named). */
  swarm: string;
  init: LiveInit | null;
  /** The record as the manifest has it: what the stream key's signature covers. */
  record: Record<string, unknown>;
  parts: LivePartEntry[];
}

export interface LiveManifest {
  url: string;
  type: 'live';
  /** Absolute URL of the master playlist. */
  source: string;
  /** The stream key the source signs with (hex, swarm-ID form): what the page was given should be it. */
  key: string;
  /** The packager's playlists ended: nothing more comes. */
  ended: boolean;
  renditions: LiveRenditionEntry[];
}

const isString = (v: unknown): v is string => typeof v === 'string' && v !== '';
const isWhole = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A URL without its fragment: how segments are matched. */
export function withoutHash(url: string): string {
  const i = url.indexOf('#');
  return i < 0 ? url : url.slice(0, i);
}

/** Checks a live manifest's shape (`json`, read from `url`); throws `bad-manifest` naming what is wrong. */
export function parseLiveManifest(json: Record<string, unknown>, url: string): LiveManifest {
  const bad = (what: string): PpsppError => new PpsppError('bad-manifest', `${url}: ${what}`);
  const str = (o: Record<string, unknown>, name: string, where: string): string => {
    const v = o[name];
    if (!isString(v)) throw bad(`${where}.${name} must be a string, not ${JSON.stringify(v)}`);
    return v;
  };
  const whole = (o: Record<string, unknown>, name: string, where: string): number => {
    const v = o[name];
    if (!isWhole(v)) throw bad(`${where}.${name} must be a whole number, not ${JSON.stringify(v)}`);
    return v;
  };
  const at = (rel: string): string => withoutHash(new URL(rel, url).href);
  if (!Array.isArray(json.renditions) || json.renditions.length === 0) throw bad('renditions must be a non-empty list');
  const renditions = json.renditions.map((r: unknown, i: number): LiveRenditionEntry => {
    const where = `renditions[${i}]`;
    if (!isObject(r)) throw bad(`${where} must be an object`);
    const kind = r.kind;
    if (kind !== 'video' && kind !== 'audio' && kind !== 'muxed') throw bad(`${where}.kind must be video, audio or muxed, not ${JSON.stringify(kind)}`);
    const swarm = str(r, 'swarm', where);
    if (!swarm.startsWith('ppspp://live/')) throw bad(`${where}.swarm must be a live swarm URI (ppspp://live/…)`);
    let init: LiveInit | null = null;
    if (r.init !== undefined && r.init !== null) {
      if (!isObject(r.init)) throw bad(`${where}.init must be an object`);
      init = { url: at(str(r.init, 'uri', `${where}.init`)), length: whole(r.init, 'length', `${where}.init`), hash: str(r.init, 'hash', `${where}.init`) };
    }
    if (!Array.isArray(r.parts)) throw bad(`${where}.parts must be a list`);
    const parts = r.parts.map((p: unknown, j: number): LivePartEntry => {
      const pw = `${where}.parts[${j}]`;
      if (!isObject(p)) throw bad(`${pw} must be an object`);
      if (!Array.isArray(p.munros)) throw bad(`${pw}.munros must be a list`);
      return {
        url: at(str(p, 'uri', pw)),
        firstChunk: whole(p, 'firstChunk', pw),
        chunks: whole(p, 'chunks', pw),
        length: whole(p, 'length', pw),
        record: p,
      };
    });
    return {
      id: str(r, 'id', where),
      kind,
      bandwidth: r.bandwidth === undefined || r.bandwidth === null ? null : whole(r, 'bandwidth', where),
      resolution: r.resolution === undefined || r.resolution === null ? null : str(r, 'resolution', where),
      swarm,
      init,
      record: r,
      parts,
    };
  });
  return {
    url,
    type: 'live',
    source: new URL(str(json, 'source', 'manifest'), url).href,
    key: str(json, 'key', 'manifest').toLowerCase(),
    ended: json.ended === true,
    renditions,
  };
}
