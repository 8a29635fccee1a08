/**
 * The ladder of hls-ladder.ts as DASH for the Shaka Player tests: the same 60 s and three
 * renditions, 2 s segments (SegmentTemplate over a SegmentTimeline, as ffmpeg's dash muxer
 * writes them), `ppspp dash prepare` beside it. Made once with ffmpeg under target/e2e/.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { LADDER_ENCODING } from './hls-ladder.js';
import { BIN, ROOT } from './swarm.js';

export const DASH_LADDER = join(ROOT, 'target', 'e2e', 'dash-ladder');

export function makeDashLadder(): void {
  if (existsSync(join(DASH_LADDER, 'manifest.ppspp.json'))) return;
  const tmp = `${DASH_LADDER}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  execFileSync('ffmpeg', [...LADDER_ENCODING, '-f', 'dash', '-seg_duration', '2', '-use_template', '1', '-use_timeline', '1', 'manifest.mpd'], { cwd: tmp });
  execFileSync(join(BIN, 'ppspp'), ['dash', 'prepare', 'manifest.mpd'], { cwd: tmp, stdio: 'ignore' });
  rmSync(DASH_LADDER, { recursive: true, force: true });
  renameSync(tmp, DASH_LADDER);
}

/** The web server mount of Shaka Player from npm, under /vendor/shaka/ (for `webForSpec`). */
export const SHAKA_MOUNT = `/vendor/shaka/=${join(ROOT, 'node_modules', 'shaka-player', 'dist')}`;
