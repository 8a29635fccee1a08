/**
 * A rendition's engine, begun as a player's is (engine-start.ts), for on-demand and live
 * presentations alike; and what its failure is to the rendition's loads.
 */
import { type BegunEngine, beginEngine } from '../engine-start.js';
import { PpsppError, messageOf } from '../errors.js';

/**
 * Why a rendition's engine could not be made: its Worker's failure as it is
 * (`wasm-load-failed`: the next engines run on the main thread), else the rendition's
 * URI the engine refused (`bad-manifest`).
 */
export function renditionFailure(id: string, err: unknown): PpsppError {
  if (err instanceof PpsppError && err.code === 'wasm-load-failed') return err;
  return new PpsppError('bad-manifest', `rendition ${id}: ${messageOf(err)}`, { cause: err });
}

/** Begins the engine of rendition `id` (see `beginEngine`); a URI it refuses throws `bad-manifest`. */
export function beginRendition(id: string, ...args: Parameters<typeof beginEngine>): BegunEngine {
  try {
    return beginEngine(...args);
  } catch (err) {
    throw renditionFailure(id, err);
  }
}
