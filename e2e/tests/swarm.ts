/**
 * What every e2e test needs: the test video, the static server, a signaling server with a
 * native seeder (real processes, loopback only), pages that play, and checks on them.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type Browser, type Page, expect } from '@playwright/test';

/** What the checks below need of a page: Playwright's, or a Firefox page (firefox.ts). */
export type Evaluable = Pick<Page, 'evaluate'>;

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = join(ROOT, 'target', 'release');
export const VIDEO = join(ROOT, 'target', 'e2e', 'video.webm');
/** The test video's length in seconds. */
export const VIDEO_SECONDS = 20;

/** The fragmented MP4 (H.264 + AAC) test video, 12 s. */
export const VIDEO_MP4 = join(ROOT, 'target', 'e2e', 'video.mp4');
export const VIDEO_MP4_SECONDS = 12;

/**
 * 20 s of VP9 + Opus WebM, a keyframe every second (one cluster per second), and 12 s of
 * fragmented MP4 (H.264 + AAC, a fragment per keyframe).
 */
export async function makeVideo(): Promise<void> {
  mkdirSync(dirname(VIDEO), { recursive: true });
  if (!existsSync(VIDEO_MP4) || statSync(VIDEO_MP4).size === 0) {
    execFileSync('ffmpeg', [
      '-y', '-loglevel', 'error',
      '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25',
      '-f', 'lavfi', '-i', 'sine=frequency=660:sample_rate=44100',
      '-t', String(VIDEO_MP4_SECONDS),
      '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-g', '25', '-keyint_min', '25',
      '-c:a', 'aac', '-b:a', '64k',
      '-movflags', 'frag_keyframe+empty_moov+default_base_moof', '-f', 'mp4', `${VIDEO_MP4}.${process.pid}.tmp`,
    ]);
    execFileSync('mv', [`${VIDEO_MP4}.${process.pid}.tmp`, VIDEO_MP4]);
  }
  if (existsSync(VIDEO) && statSync(VIDEO).size > 0) return;
  execFileSync('ffmpeg', [
    '-y', '-loglevel', 'error',
    '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25',
    '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
    '-t', String(VIDEO_SECONDS),
    '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '500k', '-g', '25', '-keyint_min', '25',
    '-c:a', 'libopus', '-b:a', '48k',
    '-f', 'webm', `${VIDEO}.${process.pid}.tmp`,
  ]);
  execFileSync('mv', [`${VIDEO}.${process.pid}.tmp`, VIDEO]);
}

/** 20 s of VP9 + Opus at about 1.6 Mbit/s (a common web video rate; about 4 MB), a
 * keyframe every second: what the HTTP-origin tests play. */
export const VIDEO_ORIGIN = join(ROOT, 'target', 'e2e', 'video-origin.webm');
/** The same for 60 s (about 11 MB): the origin's share of a swarm, where each page's start
 * (its first second or so from the origin) is a small part of the video, as on a real site. */
export const VIDEO_ORIGIN_LONG = join(ROOT, 'target', 'e2e', 'video-origin-60s.webm');

export function makeOriginVideos(): void {
  for (const [file, seconds] of [[VIDEO_ORIGIN, 20], [VIDEO_ORIGIN_LONG, 60]] as const) {
    if (existsSync(file) && statSync(file).size > 0) continue;
    mkdirSync(dirname(file), { recursive: true });
    execFileSync('ffmpeg', [
      '-y', '-loglevel', 'error',
      '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25',
      '-f', 'lavfi', '-i', 'sine=frequency=330:sample_rate=48000',
      '-t', String(seconds),
      '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8',
      '-b:v', '1600k', '-minrate', '1600k', '-maxrate', '1600k', '-g', '25', '-keyint_min', '25',
      '-c:a', 'libopus', '-b:a', '48k',
      '-f', 'webm', `${file}.${process.pid}.tmp`,
    ]);
    execFileSync('mv', [`${file}.${process.pid}.tmp`, file]);
  }
}

/**
 * 60 s of 1280×720 at 25 fps with a keyframe every 2 s (web/README.md's recipe), about
 * 2.8 Mbit/s as a site's 720p is: H.264 + AAC in fragmented MP4 (a fragment per
 * keyframe, the first ending past 700 KB), and VP9 + Opus in WebM (a Cluster per
 * keyframe). Noise over the test pattern keeps the encoders from making it small.
 */
export const VIDEO_HD_SECONDS = 60;
export const VIDEO_HD_MP4 = join(ROOT, 'target', 'e2e', 'video-720p.mp4');
export const VIDEO_HD_WEBM = join(ROOT, 'target', 'e2e', 'video-720p.webm');

export function makeHdVideos(): void {
  const source = [
    '-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25,noise=alls=8:allf=t',
    '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000',
    '-t', String(VIDEO_HD_SECONDS),
  ];
  const rate = ['-b:v', '2800k', '-maxrate', '2800k', '-bufsize', '5600k', '-g', '50', '-keyint_min', '50'];
  const encodings: [string, string[]][] = [
    [VIDEO_HD_MP4, [
      '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', ...rate, '-c:a', 'aac', '-b:a', '128k',
      '-movflags', 'frag_keyframe+empty_moov+default_base_moof', '-f', 'mp4',
    ]],
    [VIDEO_HD_WEBM, [
      '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-row-mt', '1', ...rate,
      '-c:a', 'libopus', '-b:a', '96k', '-f', 'webm',
    ]],
  ];
  for (const [file, codec] of encodings) {
    if (existsSync(file) && statSync(file).size > 0) continue;
    mkdirSync(dirname(file), { recursive: true });
    execFileSync('ffmpeg', ['-y', '-loglevel', 'error', ...source, ...codec, `${file}.${process.pid}.tmp`]);
    execFileSync('mv', [`${file}.${process.pid}.tmp`, file]);
  }
}

/** 40 s of VP9 + Opus with a keyframe every 10 s: four Clusters of about 2 MB each, more
 * than the Player looks at in one go (1 MiB). */
export const VIDEO_LONG_GOP = join(ROOT, 'target', 'e2e', 'video-long-gop.webm');

export function makeLongGopVideo(): void {
  if (existsSync(VIDEO_LONG_GOP) && statSync(VIDEO_LONG_GOP).size > 0) return;
  execFileSync('ffmpeg', [
    '-y', '-loglevel', 'error',
    '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25',
    '-f', 'lavfi', '-i', 'sine=frequency=550:sample_rate=48000',
    '-t', '40',
    '-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '1600k', '-g', '250', '-keyint_min', '250',
    '-c:a', 'libopus', '-b:a', '48k',
    // The WebM muxer would otherwise start a Cluster every 5 s, keyframe or not.
    '-cluster_time_limit', '20000', '-cluster_size_limit', '10000000',
    '-f', 'webm', `${VIDEO_LONG_GOP}.${process.pid}.tmp`,
  ]);
  execFileSync('mv', [`${VIDEO_LONG_GOP}.${process.pid}.tmp`, VIDEO_LONG_GOP]);
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export const VIDEO_SHA256 = (): string => sha256(readFileSync(VIDEO));

export interface Proc {
  child: ChildProcess;
  lines: string[];
  /** The last few KB the process wrote to stderr. */
  stderrTail(): string;
  waitLine(match: (line: string) => boolean, ms?: number): Promise<string>;
  stop(): Promise<void>;
}

/** Starts `cmd`; with `stdin: 'pipe'` its stdin can be written (or piped into). */
export function run(cmd: string, args: string[], stdin: 'ignore' | 'pipe' = 'ignore'): Proc {
  const child = spawn(cmd, args, { stdio: [stdin, 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: { match: (l: string) => boolean; resolve: (l: string) => void }[] = [];
  const rl = createInterface({ input: child.stdout! });
  rl.on('line', (line) => {
    lines.push(line);
    for (const w of [...waiters]) {
      if (w.match(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    lines,
    stderrTail: () => stderr,
    waitLine(match, ms = 30_000) {
      const found = lines.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${cmd}: no such line within ${ms} ms; stderr:\n${stderr}`)), ms);
        waiters.push({ match, resolve: (l) => { clearTimeout(timer); resolve(l); } });
        child.once('exit', (code) => reject(new Error(`${cmd} exited (${code}); stderr:\n${stderr}`)));
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

/** The static server for the test pages and the package (web/). */
export function startWeb(): Promise<{ url: string; stop(): Promise<void> }> {
  return startWebWith([]);
}

/** The static server with more `/url/=dir` mounts. */
export async function startWebWith(mounts: string[], flags: string[] = []): Promise<{ url: string; stop(): Promise<void> }> {
  const args = [join(ROOT, 'web', 'scripts', 'serve.mjs'), '--mount', `/e2e/=${join(ROOT, 'e2e', 'pages')}`, ...flags];
  for (const m of mounts) args.push('--mount', m);
  const p = run('node', args);
  const line = await p.waitLine((l) => l.startsWith('serving '));
  return { url: line.slice('serving '.length).replace(/\/$/, ''), stop: () => p.stop() };
}

export interface SeederStats {
  have: number;
  chunks: number;
  peers: number;
  bytes_up: number;
}

export interface Swarm {
  signal: string;
  uri: string;
  /** The seeder's last `--stats-json` line, with the bytes it uploaded summed over channels. */
  seederStats(): SeederStats;
  killSeeder(): Promise<void>;
  stop(): Promise<void>;
}

/** ppspp-signal alone, on `bind` (default: a free loopback port). */
export async function startSignal(bind = '127.0.0.1:0', extra: string[] = []): Promise<{ url: string; stop(): Promise<void> }> {
  const signal = run(join(BIN, 'ppspp-signal'), ['--bind', bind, ...extra]);
  const line = await signal.waitLine((l) => l.includes('listening on '));
  return { url: line.slice(line.indexOf('ws://')), stop: () => signal.stop() };
}

/** ppspp-signal and `ppspp seed VIDEO --signal …` on loopback. */
export async function startSwarm(opts: { uploadLimit?: number; chunkSize?: number; file?: string } = {}): Promise<Swarm> {
  const signal = run(join(BIN, 'ppspp-signal'), ['--bind', '127.0.0.1:0']);
  const line = await signal.waitLine((l) => l.includes('listening on '));
  const url = line.slice(line.indexOf('ws://'));
  const args = ['seed', opts.file ?? VIDEO, '--signal', url, '--bind', '127.0.0.1:0', '--stats-json',
    '--chunk-size', String(opts.chunkSize ?? 8192), '--hash', 'sha256'];
  if (opts.uploadLimit) args.push('--upload-limit', String(opts.uploadLimit));
  const seeder = run(join(BIN, 'ppspp'), args);
  const uri = await seeder.waitLine((l) => l.startsWith('ppspp://'));
  let uploaded = 0;
  return {
    signal: url,
    uri,
    seederStats() {
      const last = [...seeder.lines].reverse().find((l) => l.startsWith('{'));
      if (!last) return { have: 0, chunks: 0, peers: 0, bytes_up: uploaded };
      const s = JSON.parse(last) as { have: number; chunks: number; peers: number; bytes_uploaded?: number; channels: { bytes_up: number }[] };
      uploaded = Math.max(uploaded, s.bytes_uploaded ?? s.channels.reduce((a, c) => a + c.bytes_up, 0));
      return { have: s.have, chunks: s.chunks, peers: s.peers, bytes_up: uploaded };
    },
    killSeeder: () => seeder.stop(),
    async stop() {
      await seeder.stop();
      await signal.stop();
    },
  };
}

/**
 * `n` pages, each in its own browser context (its own WebRTC stack), playing `uri`;
 * `beforeGoto` runs on each before it loads (to watch it: tests/diagnose.ts).
 */
export async function openPages(
  browser: Browser,
  web: string,
  uri: string,
  n: number,
  query = '',
  beforeGoto?: (page: Page) => Promise<unknown>,
): Promise<Page[]> {
  const pages: Page[] = [];
  for (let i = 0; i < n; i++) {
    const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
    const page = await context.newPage();
    page.on('pageerror', (e) => console.log(`page ${i}: ${e.message}`));
    await beforeGoto?.(page);
    await page.goto(`${web}/e2e/player.html?uri=${encodeURIComponent(uri)}${query}`);
    pages.push(page);
  }
  return pages;
}

/** Waits until the page's video played past `seconds` with no error. */
export async function expectPlayedPast(page: Evaluable, seconds: number, timeout = 60_000): Promise<void> {
  await expect
    .poll(
      () =>
        page.evaluate(() => {
          const t = (window as unknown as { __t?: { error: string | null } }).__t;
          const v = document.querySelector('video')!;
          if (!t) return `the test page's script did not run (${document.readyState} ${location.href.slice(0, 80)})`;
          if (t.error) return `attach failed: ${t.error}`;
          if (v.error) return `video error: ${v.error.message}`;
          return v.currentTime;
        }),
      { timeout, message: `video plays past ${seconds} s` },
    )
    .toBeGreaterThan(seconds);
}

/** Waits until the page holds the whole content, then returns the SHA-256 of its bytes. */
export async function completeHash(page: Evaluable, timeout = 60_000): Promise<string> {
  await expect
    .poll(() => page.evaluate(() => {
      const t = (window as unknown as { __t: { error: string | null; player: { stats(): { chunksHave: number; chunkCount: number } } | null } }).__t;
      if (t.error) return `attach failed: ${t.error}`;
      const s = t.player?.stats();
      return s !== undefined && s.chunksHave === s.chunkCount;
    }), { timeout, message: 'page holds the whole content' })
    .toBe(true);
  return page.evaluate(async () => {
    const p = (window as unknown as { __t: { player: { content: { length: number }; read(a: number, b: number): Uint8Array } } }).__t.player;
    const digest = await crypto.subtle.digest('SHA-256', p.read(0, p.content.length) as Uint8Array<ArrayBuffer>);
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
  });
}

/** Page stats (`player.stats()`). */
export function pageStats(page: Evaluable): Promise<{ bytesDownloaded: number; bytesUploaded: number; bytesFromSeeders: number; bytesFromPeers: number; chunksRejected: number; chunksHave: number; chunkCount: number }> {
  return page.evaluate(() => {
    const s = (window as unknown as { __t: { player: { stats(): Record<string, number> } } }).__t.player.stats();
    return {
      bytesDownloaded: s.bytesDownloaded!, bytesUploaded: s.bytesUploaded!, bytesFromSeeders: s.bytesFromSeeders!,
      bytesFromPeers: s.bytesFromPeers!, chunksRejected: s.chunksRejected!, chunksHave: s.chunksHave!, chunkCount: s.chunkCount!,
    };
  });
}

/** Every selected ICE pair of the page is loopback: no test traffic leaves the host. */
export async function expectLoopback(page: Evaluable): Promise<void> {
  const pairs = await page.evaluate(() => (window as unknown as { __t: { player: { selectedPairs(): Promise<{ local: string; remote: string }[]> } } }).__t.player.selectedPairs());
  for (const p of pairs) {
    expect(p.local, 'local candidate is loopback').toMatch(/^(127\.|::1$)/);
    expect(p.remote, 'remote candidate is loopback').toMatch(/^(127\.|::1$)/);
  }
}

/** A TCP port free on loopback now (for a server that must be told its port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
