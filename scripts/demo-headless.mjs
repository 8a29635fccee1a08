// `make demo HEADLESS=1`: 4 headless Chromium pages play the demo page; prints a summary
// (time to first frame, bytes from the seeder and from peers, chunks verified/rejected)
// and exits 0 only if every page played. A screenshot of the first page goes to
// target/demo/screenshot.png.
//   node demo-headless.mjs PAGE_URL SEEDER_STATS_FILE|- VIDEO_FILE|live
// (-: no seeder, an HTTP origin; live: a live stream, whose pages also report how far
// they play behind the source)
import { chromium } from '@playwright/test';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [url, seederStats, videoFile] = process.argv.slice(2);
const live = videoFile === 'live';
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const PAGES = Number(process.env.PAGES ?? 4);
const PLAY_SECONDS = 5;
const TIMEOUT_MS = 90_000;
const args = JSON.parse(readFileSync(join(root, 'e2e', 'chromium-args.json'), 'utf8'));

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args });
const pages = [];
try {
  for (let i = 0; i < PAGES; i++) {
    const context = await browser.newContext({ permissions: ['camera', 'microphone'], viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.on('pageerror', (e) => console.log(`page ${i + 1}: ${e.message}`));
    await page.goto(url);
    pages.push(page);
    await new Promise((r) => setTimeout(r, 500)); // staggered, as viewers arrive
  }
  const deadline = Date.now() + TIMEOUT_MS;
  const played = new Array(PAGES).fill(false);
  // Where each page started playing (a live page starts mid-stream).
  const startedAt = new Array(PAGES).fill(null);
  while (Date.now() < deadline && !played.every(Boolean)) {
    for (let i = 0; i < PAGES; i++) {
      if (played[i]) continue;
      const s = await pages[i].evaluate(() => ({ t: document.querySelector('video').currentTime, first: window.demo?.player?.timeToFirstFrameMs ?? null, err: window.demo?.error ?? document.querySelector('video').error?.message ?? null }));
      if (s.err) throw new Error(`page ${i + 1}: ${s.err}`);
      if (s.first !== null && startedAt[i] === null) startedAt[i] = live ? s.t : 0;
      played[i] = startedAt[i] !== null && s.t - startedAt[i] > PLAY_SECONDS;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await new Promise((r) => setTimeout(r, 1500)); // one more stats tick on every page and the seeder
  await pages[0].screenshot({ path: join(root, 'target', 'demo', 'screenshot.png') });
  const rows = [];
  for (let i = 0; i < PAGES; i++) {
    rows.push(await pages[i].evaluate(() => {
      const p = window.demo.player;
      const s = p?.stats();
      return { ttff: p?.timeToFirstFrameMs ?? null, t: document.querySelector('video').currentTime, fromSeeders: (s?.bytesFromSeeders ?? 0) + (s?.bytesFromHttp ?? 0), fromOrigin: s?.httpBytesReceived ?? 0, fromPeers: s?.bytesFromPeers ?? 0, verified: s?.chunksVerified ?? 0, rejected: s?.chunksRejected ?? 0, uploaded: s?.bytesUploaded ?? 0, latency: window.demo.latency, errors: window.demo.errors };
    }));
  }
  // A live stream's size: what the page that got the most received.
  const size = live ? Math.max(1, ...rows.map((r) => r.fromSeeders + r.fromPeers)) : statSync(videoFile).size;
  const http = seederStats === '-';
  const seederLines = http ? [] : readFileSync(seederStats, 'utf8').split('\n').filter((l) => l.startsWith('{'));
  // With an HTTP origin: what the pages received from it is what the web server sent.
  const seederUp = http ? rows.reduce((a, r) => a + r.fromOrigin, 0) : seederLines.length ? JSON.parse(seederLines.at(-1)).bytes_uploaded : NaN;
  const source = http ? 'origin' : live ? 'source' : 'seeder';
  const mb = (n) => (n / 1e6).toFixed(2);
  console.log(live ? `\nppspp-web live demo, ${PAGES} headless pages\n` : `\nppspp-web demo, ${PAGES} headless pages, video ${mb(size)} MB\n`);
  console.log(`page  first frame  playing at  from ${source}  from peers  uploaded  verified  rejected${live ? '  behind source' : ''}`);
  rows.forEach((r, i) => {
    const behind = live ? `  ${(r.latency === null ? '–' : `${r.latency.toFixed(1)} s`).padStart(13)}` : '';
    console.log(`${String(i + 1).padStart(4)}  ${(r.ttff === null ? '–' : `${r.ttff.toFixed(0)} ms`).padStart(11)}  ${`${r.t.toFixed(1)} s`.padStart(10)}  ${`${mb(r.fromSeeders)} MB`.padStart(11)}  ${`${mb(r.fromPeers)} MB`.padStart(10)}  ${`${mb(r.uploaded)} MB`.padStart(8)}  ${String(r.verified).padStart(8)}  ${String(r.rejected).padStart(8)}${behind}`);
    for (const e of r.errors) console.log(`      error: ${e}`);
  });
  const fromSeeders = rows.reduce((a, r) => a + r.fromSeeders, 0);
  const fromPeers = rows.reduce((a, r) => a + r.fromPeers, 0);
  console.log(`\n${http ? 'the web server (HTTP origin) sent' : live ? 'the live source uploaded' : 'seeder uploaded'} ${mb(seederUp)} MB (${(seederUp / size).toFixed(2)}× ${live ? 'what the most-fed page received' : 'the video'}); pages got ${mb(fromSeeders)} MB from the ${source} and ${mb(fromPeers)} MB from each other (offload ${((fromPeers / Math.max(1, fromSeeders + fromPeers)) * 100).toFixed(0)} %)`);
  console.log(`screenshot of page 1: target/demo/screenshot.png`);
  const ok = played.every(Boolean);
  console.log(ok ? `all ${PAGES} pages played past ${PLAY_SECONDS} s` : `only ${played.filter(Boolean).length} of ${PAGES} pages played past ${PLAY_SECONDS} s within ${TIMEOUT_MS / 1000} s`);
  process.exitCode = ok ? 0 : 1;
} catch (err) {
  console.error(`demo: ${err.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
