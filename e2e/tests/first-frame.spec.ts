/**
 * The first frame never waits on a stalled exchange: 720p video with 2 s keyframes, whose
 * first segment is several times what a page fetches at once, played from a static web
 * server by 3 pages that start together (the case that stalled for 30 s), with and without
 * a seeder (first-frame.ts). A stalled exchange costs tens of seconds; these bounds are
 * loose enough that a loaded two-core machine does not reach them. How fast the first
 * frames are, for 3 and 6 pages, is measured by `make bench` (bench/first-frame.bench.ts;
 * BENCHMARKS.md), never here.
 */
import { expect, test } from '@playwright/test';
import { FailureReport } from './diagnose.js';
import { playTogether } from './first-frame.js';
import { ALONE, webForSpec } from './spec-setup.js';
import { VIDEO_HD_MP4, VIDEO_HD_WEBM, makeHdVideos } from './swarm.js';

const { web, stops } = webForSpec(makeHdVideos);
const report = new FailureReport();

/** A page that waited on an exchange nobody serves showed nothing for 30 s. */
const FIRST_FRAME_WITHIN_MS = 6000;
const NO_STALL_OVER_MS = 4000;

/** Pages that start together: six only add load, which make bench measures. */
const PAGES = 3;

for (const [name, file] of [['fragmented MP4 (H.264)', VIDEO_HD_MP4], ['WebM (VP9)', VIDEO_HD_WEBM]] as const) {
  for (const seeder of [false, true]) {
    test(`${name}, 720p: ${PAGES} pages from a web server${seeder ? ' and a seeder' : ''} start together and play; none waits on a stalled exchange`, ALONE, async ({ browser }) => {
      test.setTimeout(120_000);
      const all = await playTogether(browser, web(), stops, report, { file, pages: PAGES, seeder });
      const message = `per page: ${JSON.stringify(all)}`;
      console.log(message);
      for (const [i, s] of all.entries()) {
        expect(s.firstFrameMs, `page ${i}'s first frame (ms); ${message}`).not.toBeNull();
        expect(s.firstFrameMs!, `page ${i}'s first frame (ms); ${message}`).toBeLessThan(FIRST_FRAME_WITHIN_MS);
        expect(s.stallsMs.filter((ms) => ms > NO_STALL_OVER_MS), `page ${i}'s stalls over ${NO_STALL_OVER_MS} ms; ${message}`).toEqual([]);
      }
    });
  }
}
