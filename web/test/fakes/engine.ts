/**
 * The real engine: the Wasm module that `make web` builds into web/wasm/, loaded from its
 * bytes (Node has no fetch of file URLs). Once loaded, `loadWasm()` calls in the package
 * (Peer.create, Player.attach) find it loaded.
 */
import { readFileSync } from 'node:fs';
import { loadWasm } from '../../src/wasm.js';

export function loadEngine(): Promise<void> {
  const url = new URL('../../wasm/ppspp_wasm_bg.wasm', import.meta.url);
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(url);
  } catch (err) {
    throw new Error(`${url.pathname} is missing: run \`make web\` first (${String(err)})`, { cause: err });
  }
  return loadWasm(bytes as Uint8Array<ArrayBuffer>);
}
