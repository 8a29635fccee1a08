/**
 * An HLS ladder for the player-integration tests: 60 s of 1280×720 test video in three
 * renditions (240p, 480p, 720p at 0.4, 1 and 2.8 Mbit/s), 2 s fMP4 segments, a file per
 * segment; `ppspp hls prepare` beside it. Made once with ffmpeg under target/e2e/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { BIN, ROOT } from './swarm.js';

export const LADDER = join(ROOT, 'target', 'e2e', 'hls-ladder');

const LADDER_FPS = 25;

/**
 * ffmpeg's input and encoding of the ladder's three renditions, encoded once into
 * {@link LADDER_SOURCE}. x264's `superfast` preset: B-frames and CABAC as a site's encodes
 * have, the bit rates the same, and much less of the test run's CPU than `veryfast` (the
 * ladder is encoded during `make test`, beside other checks).
 */
const LADDER_ENCODING = [
  '-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc2=size=1280x720:rate=${LADDER_FPS},noise=alls=8:allf=t`, '-t', '60',
  '-filter_complex', '[0:v]split=3[a][b][c];[a]scale=426:240[v0];[b]scale=854:480[v1];[c]null[v2]',
  '-map', '[v0]', '-map', '[v1]', '-map', '[v2]',
  '-c:v', 'libx264', '-preset', 'superfast', '-pix_fmt', 'yuv420p', '-g', '50', '-keyint_min', '50', '-sc_threshold', '0',
  '-b:v:0', '400k', '-b:v:1', '1000k', '-b:v:2', '2800k',
];

/** The ladder's renditions, encoded once: the HLS, MPEG-TS and DASH ladders copy its streams. */
const LADDER_SOURCE = join(ROOT, 'target', 'e2e', 'ladder-source.mp4');

/** Encodes {@link LADDER_SOURCE} unless it is there (into a file of this process, then moved). */
function makeLadderSource(): void {
  if (existsSync(LADDER_SOURCE)) return;
  mkdirSync(dirname(LADDER_SOURCE), { recursive: true });
  const tmp = `${LADDER_SOURCE}.${process.pid}.tmp.mp4`;
  execFileSync('ffmpeg', ['-y', ...LADDER_ENCODING, tmp]);
  renameSync(tmp, LADDER_SOURCE);
}

/** ffmpeg's first input for a ladder: the source, made if missing. */
export function ladderInput(): string[] {
  makeLadderSource();
  return ['-loglevel', 'error', '-i', LADDER_SOURCE];
}

/** ffmpeg's output options, after the inputs, that take the source's three renditions as they are. */
export const LADDER_COPY = ['-map', '0:v:0', '-map', '0:v:1', '-map', '0:v:2', '-c:v', 'copy'];

/**
 * Makes a presentation in `dir` once: ffmpeg with the arguments `ffmpegArgs` gives in a
 * fresh temporary folder of this process, then `ppspp <kind> prepare <source>` there, then
 * the folder moved into place (so a run cut short leaves nothing that looks made). Skipped
 * when `dir` holds the manifest; when another test worker moved its copy into place first,
 * that one stays (its files may be served already).
 */
export function makePresentationOnce(dir: string, ffmpegArgs: () => string[], kind: 'hls' | 'dash', source: string): void {
  const manifest = source.replace(/\.[^.]+$/, '.ppspp.json');
  if (existsSync(join(dir, manifest))) return;
  const args = ffmpegArgs();
  const tmp = `${dir}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  execFileSync('ffmpeg', args, { cwd: tmp });
  execFileSync(join(BIN, 'ppspp'), [kind, 'prepare', source], { cwd: tmp, stdio: 'ignore' });
  // A folder without the manifest is what an older layout left.
  if (!existsSync(join(dir, manifest))) rmSync(dir, { recursive: true, force: true });
  try {
    renameSync(tmp, dir);
  } catch (err) {
    if (!existsSync(join(dir, manifest))) throw err;
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function makeLadder(): void {
  makePresentationOnce(LADDER, () => [
    ...ladderInput(), ...LADDER_COPY,
    '-f', 'hls', '-hls_time', '2', '-hls_playlist_type', 'vod', '-hls_segment_type', 'fmp4',
    '-master_pl_name', 'master.m3u8', '-var_stream_map', 'v:0 v:1 v:2',
    '-hls_fmp4_init_filename', 'init.mp4', '-hls_segment_filename', 'v%v/seg%03d.m4s', 'v%v/index.m3u8',
  ], 'hls', 'master.m3u8');
}

export const TS_LADDER = join(ROOT, 'target', 'e2e', 'hls-ts-ladder');
const TS_SECONDS = 20;

/**
 * The ladder's first 20 s as MPEG-TS segments with AAC audio muxed into each rendition
 * (what hls.js transmuxes to fMP4 in the page), a file per segment; `ppspp hls prepare`
 * beside it.
 */
export function makeTsLadder(): void {
  makePresentationOnce(TS_LADDER, () => [
    ...ladderInput(),
    '-f', 'lavfi', '-t', String(TS_SECONDS), '-i', 'sine=frequency=440:sample_rate=48000',
    // Whole frames, not `-t`: the copied video starts a B-frame delay late, and a cut at
    // 20 s would leave a last segment of that delay.
    ...LADDER_COPY, '-frames:v', String(TS_SECONDS * LADDER_FPS),
    '-map', '1:a', '-map', '1:a', '-map', '1:a', '-c:a', 'aac', '-b:a', '64k',
    '-f', 'hls', '-hls_time', '2', '-hls_playlist_type', 'vod', '-hls_segment_type', 'mpegts',
    '-master_pl_name', 'master.m3u8', '-var_stream_map', 'v:0,a:0 v:1,a:1 v:2,a:2',
    '-hls_segment_filename', 'v%v/seg%03d.ts', 'v%v/index.m3u8',
  ], 'hls', 'master.m3u8');
}

/** Every file of the ladder (or of `root`): URL path under `prefix` → file on disk. */
export function ladderFiles(prefix: string, root: string = LADDER): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(`${prefix}/${relative(root, path)}`, path);
    }
  };
  walk(root);
  return files;
}

/** The web server mount of hls.js from npm, under /vendor/hls/ (for `webForSpec`). */
export const HLS_MOUNT = `/vendor/hls/=${join(ROOT, 'node_modules', 'hls.js', 'dist')}`;

/** The web server mount of Video.js from npm, under /vendor/videojs/ (for `webForSpec`). */
export const VIDEOJS_MOUNT = `/vendor/videojs/=${join(ROOT, 'node_modules', 'video.js', 'dist')}`;
