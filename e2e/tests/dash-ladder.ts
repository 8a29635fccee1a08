/**
 * The ladder of hls-ladder.ts as DASH for the Shaka Player tests: the same 60 s and three
 * renditions, 2 s segments (SegmentTemplate over a SegmentTimeline, as ffmpeg's dash muxer
 * writes them), `ppspp dash prepare` beside it. Made once with ffmpeg under target/e2e/.
 */
import { join } from 'node:path';
import { LADDER_COPY, ladderInput, makePresentationOnce } from './hls-ladder.js';
import { ROOT } from './swarm.js';

export const DASH_LADDER = join(ROOT, 'target', 'e2e', 'dash-ladder');

export function makeDashLadder(): void {
  makePresentationOnce(DASH_LADDER, () => [...ladderInput(), ...LADDER_COPY, '-f', 'dash', '-seg_duration', '2', '-use_template', '1', '-use_timeline', '1', 'manifest.mpd'], 'dash', 'manifest.mpd');
}

/** The web server mount of Shaka Player from npm, under /vendor/shaka/ (for `webForSpec`). */
export const SHAKA_MOUNT = `/vendor/shaka/=${join(ROOT, 'node_modules', 'shaka-player', 'dist')}`;
