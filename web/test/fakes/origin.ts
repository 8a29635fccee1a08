/**
 * A video published on a fake web server (fakes/http.ts) as a site would: the file and its
 * tree file, and the swarm URI (which names neither signaling nor the origin).
 */
import { resolvePeerOptions } from '../../src/options.js';
import { engineOptions } from '../../src/engine-start.js';
import { WasmPeer, treeFile } from '../../src/wasm.js';
import { type FakeHttp, installFetch } from './http.js';

/** Where the fake server has the video and its tree file. */
export const FAKE_ORIGIN = { url: 'http://cdn.test/v.webm', tree: 'http://cdn.test/v.tree' };

export interface Published {
  uri: string;
  http: FakeHttp;
  /** Puts the real fetch back. */
  restore: () => void;
}

/** Publishes `file` in chunks of `chunkSize` (SHA-256) at {@link FAKE_ORIGIN}. */
export function publishOnFakeOrigin(file: Uint8Array, chunkSize: number): Published {
  const engine = WasmPeer.seeder(file, chunkSize, 'sha256', undefined, 'video.webm', engineOptions(resolvePeerOptions()), 0);
  const uri = engine.uri();
  engine.free();
  const [http, restore] = installFetch(
    new Map([
      [FAKE_ORIGIN.url, file],
      [FAKE_ORIGIN.tree, treeFile(file, chunkSize, 'sha256')],
    ]),
  );
  return { uri, http, restore };
}
