/**
 * A live pipeline for the e2e tests and the benchmark: ffmpeg's test source through
 * ffmpeg's HLS or DASH muxer (fMP4, 2 s segments, 360p and 180p H.264 with AAC; HLS with
 * EXT-X-PROGRAM-DATE-TIME for latency), `ppspp hls live` or `ppspp dash live` beside it,
 * and a static web server serving the packager's folder as it is on disk, as a CDN would.
 */
import { expect } from '@playwright/test';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type OriginServer, startOriginServer } from './origin.js';
import { BIN, type Evaluable, type Proc, ROOT, run, sha256, startSignal } from './swarm.js';

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
  /** The presentation's manifest name (`master` for HLS, `manifest` for DASH). */
  name: string;
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
export async function startLiveRun(name: string, seconds: number, serve: boolean, hooks: LiveRunHooks, packaging: 'hls' | 'dash' = 'hls'): Promise<LiveRun> {
  const { stops } = hooks;
  const dir = join(ROOT, 'target', 'e2e', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const fps = 25;
  const input = [
    '-hide_banner', '-loglevel', 'error', '-re',
    '-f', 'lavfi', '-i', `testsrc2=size=640x360:rate=${fps}:duration=${seconds}`,
    '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds}`,
    '-filter_complex', '[0:v]split=2[a][b];[b]scale=320:180[small]',
  ];
  const encode = [
    '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p',
    '-g', String(fps * SEGMENT_SECONDS), '-keyint_min', String(fps * SEGMENT_SECONDS), '-sc_threshold', '0',
    '-b:v:0', '900k', '-b:v:1', '250k', '-c:a', 'aac', '-b:a', '64k',
  ];
  const hls = [
    '-map', '[a]', '-map', '1:a', '-map', '[small]', '-map', '1:a', ...encode,
    '-f', 'hls', '-hls_time', String(SEGMENT_SECONDS), '-hls_list_size', '6',
    '-hls_flags', 'independent_segments+temp_file+program_date_time',
    '-hls_segment_type', 'fmp4', '-master_pl_name', 'master.m3u8',
    '-var_stream_map', 'v:0,a:0 v:1,a:1',
    '-hls_fmp4_init_filename', 'init_%v.mp4', '-hls_segment_filename', join(dir, 'seg_%v_%05d.m4s'),
    join(dir, 'stream_%v.m3u8'),
  ];
  // Segments that left the MPD's window stay on disk (extra_window_size), for the tests
  // to compare with.
  const dash = [
    '-map', '[a]', '-map', '[small]', '-map', '1:a', ...encode,
    '-f', 'dash', '-seg_duration', String(SEGMENT_SECONDS), '-window_size', '6', '-extra_window_size', '1000',
    '-use_template', '1', '-use_timeline', '1', '-streaming', '0', '-ldash', '0',
    '-adaptation_sets', 'id=0,streams=v id=1,streams=a',
    '-init_seg_name', 'init-$RepresentationID$.m4s', '-media_seg_name', 'chunk-$RepresentationID$-$Number%05d$.m4s',
    join(dir, 'manifest.mpd'),
  ];
  const ffmpeg = run('ffmpeg', [...input, ...(packaging === 'hls' ? hls : dash)]);
  hooks.keep?.('ffmpeg', ffmpeg);
  stops.push(() => ffmpeg.stop());
  const signal = await startSignal();
  stops.push(() => signal.stop());
  const source = run(join(BIN, 'ppspp'), [
    packaging, 'live', join(dir, packaging === 'hls' ? 'master.m3u8' : 'manifest.mpd'), '--key', join(dir, 'stream.key'), '--wait', '20', '--linger', '5',
    ...(serve ? ['--signal', signal.url, '--bind', '127.0.0.1:0'] : []),
  ]);
  hooks.keep?.('source', source);
  stops.push(() => source.stop());
  const key = await source.waitLine((l) => /^[0-9a-f]{40,}$/.test(l), 30_000);
  // Pages are opened once the source has written its manifest (after the first segments).
  const manifest = join(dir, `${packaging === 'hls' ? 'master' : 'manifest'}.ppspp.json`);
  for (const until = Date.now() + 30_000; !existsSync(manifest); ) {
    if (Date.now() > until) throw new Error(`${manifest} not written within 30 s; source: ${source.stderrTail()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const folder = new LiveFolder(dir);
  const server = await startOriginServer(folder);
  stops.push(() => server.stop());
  return { dir, name: packaging === 'hls' ? 'master' : 'manifest', key, folder, server, signal: signal.url, source };
}

/**
 * hls.html (or `page`, such as shaka.html) on the test web server `web` playing the run's
 * presentation; `plain: '1'` for the player alone.
 */
export function livePageUrl(web: string, r: LiveRun, extra: Record<string, string> = {}, page = 'hls'): string {
  const q = new URLSearchParams({
    manifest: `${r.server.url}/live/${r.name}.ppspp.json`,
    master: `${r.server.url}/live/master.m3u8`,
    mpd: `${r.server.url}/live/manifest.mpd`,
    hidden: '1',
    signal: r.signal,
    streamKey: r.key,
    ...extra,
  });
  return `${web}/e2e/${page}.html?${q}`;
}


/**
 * Waits (up to 30 s) until the HLS run's first rendition lists `count` segments. hls.js
 * joins a live stream `liveSyncDurationCount` (3) segments behind its end, or at its start
 * when the playlist is shorter: a page that opens on a stream only a segment old plays
 * right at the edge, where any late segment is a stall, as no viewer of a running stream
 * does.
 */
export async function streamHasSegments(r: LiveRun, count: number): Promise<void> {
  const playlist = join(r.dir, 'stream_0.m3u8');
  const listed = (): number => (existsSync(playlist) ? readFileSync(playlist, 'utf8').split('\n').filter((l) => l.startsWith('#EXTINF')).length : 0);
  for (const until = Date.now() + 30_000; listed() < count; ) {
    if (Date.now() > until) throw new Error(`${playlist} did not list ${count} segments within 30 s (it lists ${listed()})`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The SHA-256 of the packager's file for `url` (served under /live/; written once, never changed). */
export function packagerSha(r: LiveRun, url: string): string {
  return sha256(new Uint8Array(readFileSync(join(r.dir, new URL(url).pathname.replace(/^\/live\//, '')))));
}

/**
 * Waits (up to 60 s) until `page` has played `seconds` of the stream as `seen` reads it
 * (null: the page has not run yet); fails at once with the page's own error.
 */
export async function playingLive(
  page: Evaluable,
  seconds: number,
  seen: (page: Evaluable) => Promise<{ played: number; error: string | null } | null>,
): Promise<void> {
  await expect
    .poll(async () => {
      const s = await seen(page);
      if (!s) return 0;
      return s.error ? `failed: ${s.error}` : s.played;
    }, { timeout: 60_000, message: `the page plays ${seconds} s of the stream` })
    .toBeGreaterThanOrEqual(seconds);
}
