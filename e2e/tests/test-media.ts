/**
 * Every video and ladder the suite plays, made once with ffmpeg under target/e2e/ (each
 * maker skips what is there): by the global setup before the workers start, or earlier by
 * `make e2e-media` (tests/media.setup.ts), which `make test` runs beside the Rust tests so
 * that the e2e suite starts with them made.
 */
import { DASH_LADDER, makeDashLadder } from './dash-ladder.js';
import { LADDER, TS_LADDER, makeLadder, makeTsLadder } from './hls-ladder.js';
import {
  VIDEO, VIDEO_HD_MP4, VIDEO_HD_WEBM, VIDEO_LONG_GOP, VIDEO_MP4, VIDEO_ORIGIN, VIDEO_ORIGIN_LONG,
  makeHdVideos, makeLongGopVideo, makeOriginVideos, makeVideo,
} from './swarm.js';

/** Makes what is missing; the paths made (files, and the ladders' folders). */
export async function makeTestMedia(): Promise<string[]> {
  await makeVideo();
  makeHdVideos();
  makeOriginVideos();
  makeLongGopVideo();
  // The ladders need the release `ppspp` (`make native`) for their `prepare`.
  makeLadder();
  makeTsLadder();
  makeDashLadder();
  return [VIDEO, VIDEO_MP4, VIDEO_HD_MP4, VIDEO_HD_WEBM, VIDEO_ORIGIN, VIDEO_ORIGIN_LONG, VIDEO_LONG_GOP, LADDER, TS_LADDER, DASH_LADDER];
}
