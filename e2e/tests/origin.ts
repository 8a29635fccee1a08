/**
 * A plain static web server for HTTP-origin tests: files from memory or disk, Range requests
 * answered with 206 as any web server or CDN does, CORS for pages of another origin (or
 * not, to test its refusal), and a count of the bytes it sent per file.
 */
import { closeSync, createReadStream, fstatSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import { basename, join } from 'node:path';
import { BIN, ROOT, run } from './swarm.js';

export interface OriginServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** Body bytes sent for `path` so far (206 and 200 answers). */
  bytesSent(path: string): number;
  /** Body bytes sent for every path so far. */
  totalBytesSent(): number;
  /** Requests for `path` so far. */
  requests(path: string): number;
  stop(): Promise<void>;
}

/**
 * A downlink shared by every answer of a server: `bytesPerSecond` at most (0: no limit),
 * changed as the test goes (a throttled viewer's line, at the server's end).
 */
export interface Throttle {
  bytesPerSecond: number;
}

/** Serves `files` (path → bytes, or the name of a file on disk) on a free loopback port. */
export async function startOriginServer(files: Map<string, Uint8Array | string>, opts: { cors?: boolean; throttle?: Throttle } = {}): Promise<OriginServer> {
  const cors = opts.cors ?? true;
  const throttle = opts.throttle;
  // When the throttled line is free again (ms since the epoch).
  let lineFreeAt = 0;
  const paced = async (res: ServerResponse, body: Uint8Array): Promise<void> => {
    for (let at = 0; at < body.length; at += 16 << 10) {
      const piece = body.subarray(at, at + (16 << 10));
      const rate = throttle?.bytesPerSecond ?? 0;
      if (rate > 0) {
        const now = Date.now();
        const start = Math.max(now, lineFreeAt);
        lineFreeAt = start + (piece.length * 1000) / rate;
        if (start > now) await new Promise((r) => setTimeout(r, start - now));
      }
      if (res.destroyed) return;
      res.write(piece);
    }
    res.end();
  };
  const sent = new Map<string, number>();
  const asked = new Map<string, number>();
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (cors) {
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.setHeader('Access-Control-Allow-Headers', 'Range');
      res.setHeader('Access-Control-Expose-Headers', 'Content-Range, Content-Length');
    }
    if (req.method === 'OPTIONS') {
      res.statusCode = 204;
      res.end();
      return;
    }
    asked.set(path, (asked.get(path) ?? 0) + 1);
    const file = files.get(path);
    // A file on disk is opened once and its length read from the open file: a live
    // packager replaces its manifest by a rename, and a length read before the open would
    // cut the newer, longer file short.
    let fd: number | null = null;
    if (typeof file === 'string') {
      try {
        fd = openSync(file, 'r');
      } catch {
        // Gone since it was listed (a live window's old segment): as if never there.
      }
    }
    if (file === undefined || (typeof file === 'string' && fd === null) || (req.method !== 'GET' && req.method !== 'HEAD')) {
      if (fd !== null) closeSync(fd);
      res.statusCode = 404;
      res.end('not found');
      return;
    }
    const length = fd !== null ? fstatSync(fd).size : (file as Uint8Array).length;
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('Content-Type', 'application/octet-stream');
    const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    let [start, end] = [0, length];
    if (m && (m[1] !== '' || m[2] !== '')) {
      start = m[1] === '' ? Math.max(0, length - Number(m[2])) : Number(m[1]);
      end = m[1] === '' || m[2] === '' ? length : Math.min(length, Number(m[2]) + 1);
      if (start >= length || start >= end) {
        if (fd !== null) closeSync(fd);
        res.statusCode = 416;
        res.setHeader('Content-Range', `bytes */${length}`);
        res.end();
        return;
      }
      res.statusCode = 206;
      res.setHeader('Content-Range', `bytes ${start}-${end - 1}/${length}`);
    }
    res.setHeader('Content-Length', String(end - start));
    if (req.method === 'HEAD') {
      if (fd !== null) closeSync(fd);
      res.end();
      return;
    }
    sent.set(path, (sent.get(path) ?? 0) + end - start);
    if (fd === null) {
      const bytes = (file as Uint8Array).subarray(start, end);
      if (throttle) void paced(res, bytes);
      else res.end(bytes);
    } else if (throttle) {
      const bytes = readFileSync(fd).subarray(start, end);
      closeSync(fd);
      void paced(res, bytes);
    } else {
      // pipeline: a page that goes away mid-answer closes the file too.
      pipeline(createReadStream('', { fd, start, end: end - 1 }), res, () => {});
    }
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bytesSent: (path) => sent.get(path) ?? 0,
    totalBytesSent: () => [...sent.values()].reduce((a, b) => a + b, 0),
    requests: (path) => asked.get(path) ?? 0,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Where `serveOnOrigin` writes `file`'s tree file: a folder per test worker, since two
 * workers may serve the same file at once.
 */
export function treeFileOf(file: string): string {
  const dir = join(ROOT, 'target', 'e2e', `trees-${process.env.TEST_PARALLEL_INDEX ?? 0}`);
  mkdirSync(dir, { recursive: true });
  return join(dir, `${basename(file).replace(/\.[^.]*$/, '')}.tree`);
}

/**
 * `file`'s bytes as `/v.webm` (`served` in their place, or read from disk as requests
 * come) on a new origin server, with its
 * tree file beside it under the name `ppspp root --http` gives it; `uri(signal?)` writes
 * the tree file (`ppspp root --tree`) and returns the URI it prints. Stop the server after.
 */
export async function serveOnOrigin(
  file: string,
  served: Uint8Array | 'from-disk',
  opts: { cors?: boolean } = {},
): Promise<{ server: OriginServer; uri: (signal?: string) => Promise<string> }> {
  const files = new Map<string, Uint8Array | string>();
  const server = await startOriginServer(files, opts);
  const tree = treeFileOf(file);
  const name = basename(tree);
  return {
    server,
    uri: async (signal) => {
      const args = ['root', file, '--hash', 'sha256', '--chunk-size', '8192', '--tree', tree, '--http', `${server.url}/v.webm`];
      if (signal) args.push('--signal', signal);
      const p = run(join(BIN, 'ppspp'), args);
      const uri = await p.waitLine((l) => l.startsWith('ppspp://'));
      await p.stop();
      files.set('/v.webm', served === 'from-disk' ? file : served);
      files.set(`/${name}`, readFileSync(tree));
      return uri;
    },
  };
}
