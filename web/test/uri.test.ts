import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { isRootHex, uriFor } from '../src/discover.js';
import { PpsppError } from '../src/errors.js';
import { resolvePeerOptions } from '../src/options.js';
import { loadWasm, parseUriLoaded } from '../src/wasm.js';

// The URI parser is the core's (crates/ppspp/src/uri.rs), reached through the Wasm module
// exactly as the browser reaches it.
beforeAll(async () => {
  await loadWasm(readFileSync(new URL('../wasm/ppspp_wasm_bg.wasm', import.meta.url)));
});

const ROOT = 'c89800bfc82ed01ed6e3bfd5408c51274491f7d4';
const ROOT256 = '12d0e382' + 'ab'.repeat(28);

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(PpsppError);
    return (err as PpsppError).code + ': ' + (err as PpsppError).message;
  }
  throw new Error('did not throw');
}

describe('parseUri', () => {
  it('reads every field', () => {
    const info = parseUriLoaded(
      `ppspp://${ROOT256}?len=26121&cs=8192&hash=sha256&signal=ws%3A%2F%2F127.0.0.1%3A8787%2Fws&udp=127.0.0.1:7000&name=m74.jpg`,
    );
    expect(info).toEqual({
      root: ROOT256,
      hash: 'sha256',
      chunkSize: 8192,
      length: 26121,
      signal: 'ws://127.0.0.1:8787/ws',
      udp: ['127.0.0.1:7000'],
      name: 'm74.jpg',
    });
  });

  it('applies the defaults: 1024-byte chunks, SHA-1, no signal', () => {
    const info = parseUriLoaded(`ppspp://${ROOT}?len=26121`);
    expect(info.chunkSize).toBe(1024);
    expect(info.hash).toBe('sha1');
    expect(info.signal).toBeUndefined();
    expect(info.udp).toEqual([]);
  });

  it('rejects bad URIs with a bad-uri error that says why', () => {
    expect(codeOf(() => parseUriLoaded('http://example.com/video.webm'))).toMatch(/^bad-uri: .*ppspp:\/\//);
    expect(codeOf(() => parseUriLoaded(`ppspp://${ROOT}`))).toMatch(/^bad-uri: .*len=/);
    expect(codeOf(() => parseUriLoaded(`ppspp://${ROOT.slice(2)}?len=5`))).toMatch(/^bad-uri: .*root/);
    expect(codeOf(() => parseUriLoaded(`ppspp://${ROOT}?len=5&cs=0`))).toMatch(/^bad-uri: .*cs/);
    expect(codeOf(() => parseUriLoaded(`ppspp://${ROOT}?len=5&hash=md5`))).toMatch(/^bad-uri: .*hash/);
    expect(codeOf(() => parseUriLoaded(`ppspp://${ROOT}?len=-1`))).toMatch(/^bad-uri: .*len/);
    // A SHA-1-length root with hash=sha256 does not match.
    expect(codeOf(() => parseUriLoaded(`ppspp://${ROOT}?len=5&hash=sha256`))).toMatch(/^bad-uri/);
  });
});

describe('bare root hashes', () => {
  it('are told apart from URIs', () => {
    expect(isRootHex(ROOT)).toBe(true);
    expect(isRootHex(ROOT256.toUpperCase())).toBe(true);
    expect(isRootHex(` ${ROOT}\n`)).toBe(true);
    expect(isRootHex(`ppspp://${ROOT}?len=1`)).toBe(false);
    expect(isRootHex(ROOT.slice(0, 38))).toBe(false);
    expect(isRootHex(ROOT.replace('c', 'g'))).toBe(false);
  });

  it('need the signal option, and pass URIs through', async () => {
    const options = resolvePeerOptions({});
    await expect(uriFor(ROOT, options)).rejects.toMatchObject({ code: 'bad-option' });
    const uri = `ppspp://${ROOT}?len=26121`;
    await expect(uriFor(uri, options)).resolves.toBe(uri);
  });
});
