/**
 * A live HLS pipeline for the e2e tests and the benchmark: ffmpeg's test source through
 * ffmpeg's HLS muxer (fMP4, 2 s segments, two renditions with audio, EXT-X-PROGRAM-DATE-TIME
 * for latency), `ppspp hls live` beside it, and a static web server serving the packager's
 * folder as it is on disk, as a CDN would.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type OriginServer, startOriginServer } from './origin.js';
import { BIN, type Proc, ROOT, run, startSignal } from './swarm.js';

/** Segment length in seconds (ffmpeg's -hls_time and the keyframe interval). */
export const SEGMENT_SECONDS = 2;

/**
 * The packager's folder as a web server serves it: each request reads the file as it is
 * now on disk; `tamper` flips a byte of the files it matches.
 */
export class LiveFolder extends Map<string, Uint8Array | string> {
  tamper: (path: string) => boolean = () => false;
  constructor(private readonly dir: string) {
    super();
  }
  override get(path: string): Uint8Array | string | undefined {
    if (!path.startsWith('/live/')) return undefined;
    const file = join(this.dir, path.slice('/live/'.length));
    if (file.includes('..') || !existsSync(file)) return undefined;
    if (!this.tamper(path)) return file;
    const bytes = new Uint8Array(readFileSync(file));
    bytes[1000] = (bytes[1000] ?? 0) ^ 0xff;
    return bytes;
  }
}

export interface LiveRun {
  dir: string;
  key: string;
  folder: LiveFolder;
  server: OriginServer;
  signal: string;
  source: Proc;
}

/** What a live run's processes are given to: the failure report, and the test's stops. */
export interface LiveRunHooks {
  keep?: (name: string, proc: Proc) => void;
  stops: (() => Promise<void>)[];
}

/**
 * ffmpeg at real time for `seconds` (360p and 180p H.264 with AAC, a keyframe per segment)
 * into a fresh folder under target/e2e, `ppspp hls live` following it (signing only, or
 * serving its swarms too with `serve`), a signaling server and the web server (the folder
 * under /live/); each stopped by `hooks.stops`.
 */
export async function startLiveRun(name: string, seconds: number, serve: boolean, hooks: LiveRunHooks): Promise<LiveRun> {
  const { stops } = hooks;
  const dir = join(ROOT, 'target', 'e2e', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const fps = 25;
  const ffmpeg = run('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-re',
    '-f', 'lavfi', '-i', `testsrc2=size=640x360:rate=${fps}:duration=${seconds}`,
    '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds}`,
    '-filter_complex', '[0:v]split=2[a][b];[b]scale=320:180[small]',
    '-map', '[a]', '-map', '1:a', '-map', '[small]', '-map', '1:a',
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p',
    '-g', String(fps * SEGMENT_SECONDS), '-keyint_min', String(fps * SEGMENT_SECONDS), '-sc_threshold', '0',
    '-b:v:0', '900k', '-b:v:1', '250k', '-c:a', 'aac', '-b:a', '64k',
    '-f', 'hls', '-hls_time', String(SEGMENT_SECONDS), '-hls_list_size', '6',
    '-hls_flags', 'independent_segments+temp_file+program_date_time',
    '-hls_segment_type', 'fmp4', '-master_pl_name', 'master.m3u8',
    '-var_stream_map', 'v:0,a:0 v:1,a:1',
    '-hls_fmp4_init_filename', 'init_%v.mp4', '-hls_segment_filename', join(dir, 'seg_%v_%05d.m4s'),
    join(dir, 'stream_%v.m3u8'),
  ]);
  hooks.keep?.('ffmpeg', ffmpeg);
  stops.push(() => ffmpeg.stop());
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const source = run(join(BIN, 'ppspp'), [
    'hls', 'live', join(dir, 'master.m3u8'), '--key', join(dir, 'stream.key'), '--wait', '20', '--linger', '5',
    ...(serve ? ['--signal', signal.url, '--bind', '127.0.0.1:0'] : []),
  ]);
  hooks.keep?.('source', source);
  stops.push(() => source.stop());
  const key = await source.waitLine((l) => /^[0-9a-f]{40,}$/.test(l), 30_000);
  const folder = new LiveFolder(dir);
  const server = await startOriginServer(folder);
  stops.push(() => server.stop());
  return { dir, key, folder, server, signal: signal.url, source };
}

/** hls.html (on the test web server `web`) playing the run's presentation; `plain: '1'` for hls.js alone. */
export function livePageUrl(web: string, r: LiveRun, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams({
    manifest: `${r.server.url}/live/master.ppspp.json`,
    master: `${r.server.url}/live/master.m3u8`,
    hidden: '1',
    signal: r.signal,
    streamKey: r.key,
    ...extra,
  });
  return `${web}/e2e/hls.html?${q}`;
}

