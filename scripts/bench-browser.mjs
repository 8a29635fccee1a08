// The browser half of `make bench` (the native half is scripts/bench-native.mjs):
//  1. goodput page → page over loopback: a raw unordered, maxRetransmits 0 data-channel
//     blast paced on bufferedAmount, and PPSPP with verification, per chunk size; and, at
//     the default chunk size, a native `ppspp seed` → one page over WebRTC (50 MB), and the
//     fetching engine on the page's main thread against in a dedicated Worker (idle and
//     busy main thread);
//  2. Merkle verification in Wasm and crypto.subtle digests;
//  3. a swarm: 8 headless pages playing a 20 MB video, from 1 native seeder (with the CPU
//     seconds each page spends per MB it verifies, and the seeder per MB it sends), and
//     (each run right after) from the same file on the static web server as an HTTP origin,
//     and from a fresh seeder with every page's main thread kept busy 50 ms in every 100
//     (a site's own work: does the engine still serve its peers and reach a first frame?);
//  4. live: 8 headless pages playing ffmpeg's test source streamed at real time through
//     `ppspp live`: latency from ffmpeg reading a frame to a page appending it, stalls, and
//     the source's upload ÷ the stream's bytes.
// Writes target/bench/browser.json. Run inside scripts/netns.sh (loopback only).
//   node scripts/bench-browser.mjs [--smoke] [--out FILE] [--only goodput,verify,swarm,live]
// Where the CPU went: a profiled PPSPP fetch at the default chunk size (the share of each
// page's main thread, and of its engine's Worker, in each part) and, in the swarm's first
// run, the CPU of every thread.
// Diagnostics: BENCH_DEBUG=1 (sender/receiver state), BENCH_PROFILE=1 (the profiled fetch's
// costliest functions, and a CPU profile of the first swarm page), BENCH_CHUNK_SIZES, BENCH_SEED_OPTIONS, BENCH_FETCH_OPTIONS, BENCH_RUNS,
// BENCH_GOODPUT_MIB (page → page content, default 32), BENCH_LIVE_PAGES, BENCH_LIVE_UNCHOKED,
// BENCH_NATIVE_STACK (the native seeder's --webrtc-stack), BENCH_HIDDEN_VIDEOS=1 (the swarm
// pages' videos not displayed: what compositing them costs the others), BENCH_ENGINE=worker
// or main (the swarm pages' engineThread).
import { chromium } from '@playwright/test';
import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  CpuPerMb,
  profileShares,
  profileStart,
  profileStop,
  threadCpuBetween,
  threadCpuSnapshot,
  workerProfileStart,
  workerProfileStop,
} from './bench-cpu.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const smoke = process.argv.includes('--smoke');
const outIdx = process.argv.indexOf('--out');
const out = outIdx > 0 ? process.argv[outIdx + 1] : join(root, 'target', 'bench', smoke ? 'browser-smoke.json' : 'browser.json');
const onlyIdx = process.argv.indexOf('--only');
const only = onlyIdx > 0 ? process.argv[onlyIdx + 1].split(',') : ['goodput', 'verify', 'swarm', 'live'];
const RUNS = smoke ? 1 : Number(process.env.BENCH_RUNS ?? 3);
const GOODPUT_BYTES = smoke ? 1 << 20 : Number(process.env.BENCH_GOODPUT_MIB ?? 32) << 20;
const CHUNK_SIZES = smoke ? [8192] : (process.env.BENCH_CHUNK_SIZES ?? "1024,4096,8192,16384").split(",").map(Number);
const VERIFY_BYTES = smoke ? 1 << 20 : 32 << 20;
const VERIFY_SIZES = smoke ? [4096] : [1024, 4096, 16384];
const SWARM_PAGES = smoke ? 2 : 8;
/** Pages that join, one after another, the swarm's pages still playing (all but one). */
const JOINERS = smoke ? 1 : 3;
/** What every swarm page's URL adds: videos not displayed, where the engine runs. */
const PAGE_QUERY = `${process.env.BENCH_HIDDEN_VIDEOS ? '&hidden=1' : ''}${process.env.BENCH_ENGINE ? `&engine=${process.env.BENCH_ENGINE}` : ''}`;
/** Milliseconds in every 100 the busy pages' main thread runs the page's own work. */
const BUSY_MS = 50;
const LIVE_PAGES = smoke ? 2 : Number(process.env.BENCH_LIVE_PAGES ?? 8);
/** Seconds the live stream runs; the pages join in its first seconds. */
const LIVE_SECONDS = smoke ? 6 : 40;
/** Peers the live source serves at once (`ppspp live --max-unchoked`): the rest relay. */
const LIVE_UNCHOKED = Number(process.env.BENCH_LIVE_UNCHOKED ?? 2);
const HIGH_WATER = 64 * 1024;
/** The package's default chunk size: the native seeder → page part runs at it. */
const DEFAULT_CHUNK = 8192;
/** Bytes the native seeder sends one page. */
const NATIVE_BYTES = smoke ? 2 << 20 : 50_000_000;
// Seeder options for the PPSPP goodput runs (BENCH_SEED_OPTIONS='{"priority":1}' to compare).
const SEED_OPTIONS = JSON.parse(process.env.BENCH_SEED_OPTIONS ?? '{}');
// And the fetching page's (BENCH_FETCH_OPTIONS='{"dataBatchBytes":0}').
const FETCH_OPTIONS = JSON.parse(process.env.BENCH_FETCH_OPTIONS ?? '{}');
const bin = (name) => join(root, 'target', 'release', name);

function log(msg) {
  process.stderr.write(`bench-browser: ${msg}\n`);
}

function stats(runs) {
  const s = [...runs].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { min: s[0], median, max: s[s.length - 1], runs };
}

/** Starts a process and resolves with its first stdout line matching `re` (and the process). */
function start(cmd, args, re) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  let err = '';
  child.stderr.on('data', (d) => (err = (err + d).slice(-2000)));
  const rl = createInterface({ input: child.stdout });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd} did not start: ${err}`)), 60_000);
    rl.on('line', (line) => {
      lines.push(line);
      if (re.test(line)) {
        clearTimeout(timer);
        resolve({ child, line, lines });
      }
    });
    child.once('exit', (code) => reject(new Error(`${cmd} exited (${code}): ${err}`)));
  });
}

const stop = (p) => p && p.child.exitCode === null && p.child.kill('SIGTERM');

/** User + system CPU seconds a running process has used so far (/proc/PID/stat). */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  return (Number(fields[11]) + Number(fields[12])) / ticks;
}

/**
 * The time a page's main thread spent in tasks so far (CDP Performance.getMetrics
 * TaskDuration): the engine (Wasm), the package's JavaScript and MediaSource appends run
 * there. It is wall-clock time, so it includes the time the thread waited for a core
 * inside a task; the CPU the pages used is taken from /proc (`threadCpuSnapshot`).
 */
async function pageTaskSeconds(p) {
  const cdp = metering.get(p);
  if (!cdp) return NaN;
  const { metrics } = await cdp.send('Performance.getMetrics');
  return metrics.find((m) => m.name === 'TaskDuration')?.value ?? NaN;
}

/** Each page's CDP session with metrics collected from its start (`page`). */
const metering = new WeakMap();

const args = JSON.parse(readFileSync(join(root, 'e2e', 'chromium-args.json'), 'utf8'));
const web = await start('node', [join(root, 'web', 'scripts', 'serve.mjs'), '--mount', `/e2e/=${join(root, 'e2e', 'pages')}`,
  '--mount', `/bench-media/=${join(root, 'target', 'bench')}`], /^serving /);
const base = web.line.slice('serving '.length).replace(/\/$/, '');
const signal = await start(bin('ppspp-signal'), ['--bind', '127.0.0.1:0'], /listening on ws:/);
const signalUrl = signal.line.slice(signal.line.indexOf('ws://'));
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args });
const result = { smoke, date: new Date().toISOString(), chromium: browser.version() };

/** BENCH_PROFILE=1: a profile's 25 costliest functions in the log. */
function logProfile(functions, who) {
  if (!process.env.BENCH_PROFILE) return;
  const total = functions.reduce((a, f) => a + f.ms, 0);
  log(`  profile ${who}: ${total.toFixed(0)} ms sampled`);
  for (const f of functions.slice(0, 25)) log(`    ${((100 * f.ms) / total).toFixed(1).padStart(5)} %  ${f.name || '(anon)'} ${f.file}:${f.line}`);
}

/** UDP datagrams the kernel dropped for a full socket receive buffer so far (this network namespace). */
function udpRcvbufErrors() {
  const lines = readFileSync('/proc/net/snmp', 'utf8').split('\n').filter((l) => l.startsWith('Udp: '));
  const [names, values] = lines.map((l) => l.split(' ').slice(1));
  return Number(values?.[names?.indexOf('RcvbufErrors') ?? -1] ?? NaN);
}

/**
 * The native seeder → one page: `ppspp seed` of NATIVE_BYTES over WebRTC, fetched RUNS
 * times by `receiver` with `Peer.fetch` (timed from the first verified chunk to the last,
 * as page → page), against `raw`, the same run's raw page → page rate.
 */
async function nativeToPage(receiver, raw) {
  const file = join(root, 'target', 'bench', `native-${NATIVE_BYTES}.bin`);
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(NATIVE_BYTES));
  }
  const seeder = await start(bin('ppspp'), ['seed', file, '--signal', signalUrl, '--bind', '127.0.0.1:0',
    '--chunk-size', String(DEFAULT_CHUNK), '--hash', 'sha1', '--stats-json', ...(process.env.BENCH_NATIVE_STACK ? ['--webrtc-stack', process.env.BENCH_NATIVE_STACK] : [])],
    /^ppspp:\/\//);
  try {
    const mbps = [];
    const seederCpu = [];
    const dropped = [];
    for (let r = 0; r < RUNS; r++) {
      const cpu0 = cpuSeconds(seeder.child.pid);
      const drops0 = udpRcvbufErrors();
      const got = await receiver.evaluate(([u, o]) => window.ppsppFetch(u, { options: o }), [seeder.line, FETCH_OPTIONS]);
      dropped.push(udpRcvbufErrors() - drops0);
      if (got.bytes !== NATIVE_BYTES) throw new Error(`fetched ${got.bytes} of ${NATIVE_BYTES} bytes from the native seeder`);
      if (process.env.BENCH_DEBUG) {
        log(`    ${JSON.stringify(got)}`);
        for (const l of seeder.lines.splice(1)) if (l.startsWith('{')) log(`    seeder: ${l.slice(0, 600)}`);
      }
      mbps.push(got.bytes / got.ms / 1000);
      seederCpu.push((cpuSeconds(seeder.child.pid) - cpu0) / (got.bytes / 1e6));
    }
    const m = stats(mbps);
    // The seeder's last stats line (one a second) counts its retransmissions of all runs.
    await new Promise((r) => setTimeout(r, 1200));
    const last = [...seeder.lines].reverse().find((l) => l.startsWith('{'));
    const resent = last ? JSON.parse(last).retransmissions / RUNS / Math.ceil(NATIVE_BYTES / DEFAULT_CHUNK) : null;
    log(`  native seeder → page, ${DEFAULT_CHUNK} B: ${m.median.toFixed(1)} MB/s, ${(m.median / raw.median).toFixed(2)} of raw page → page; ${stats(dropped).median} datagrams dropped at a full UDP receive buffer per fetch, ${resent === null ? '?' : (100 * resent).toFixed(1)} % of chunks resent`);
    return {
      chunk_size: DEFAULT_CHUNK, content_bytes: NATIVE_BYTES, mbps: m, raw_mbps: raw, ratio: m.median / raw.median, seeder_cpu_s_per_mb: stats(seederCpu),
      udp_rcvbuf_drops_per_fetch: stats(dropped), seeder_resent_ratio: resent,
    };
  } finally {
    stop(seeder);
  }
}

/**
 * Where the fetching engine runs: page → page PPSPP at `cs` with the fetcher on the
 * receiving page's main thread or in a dedicated Worker (the data channel transferred to
 * it), each with the page's main thread idle and busy BUSY_MS in every 100; the arms
 * alternate run by run. Both sides are bare WasmPeers (bench.html), so the arms differ
 * only in the thread.
 */
async function engineThreads(sender, receiver, cs, raw) {
  const arms = [['main', 0], ['worker', 0], ['main', BUSY_MS], ['worker', BUSY_MS]];
  const mbps = Object.fromEntries(arms.map(([where, busy]) => [`${where}${busy ? '_busy' : ''}`, []]));
  for (let r = 0; r < RUNS; r++) {
    for (const [where, busy] of arms) {
      const offer = await sender.evaluate(([b, c]) => window.wpSeedOffer(b, c), [GOODPUT_BYTES, cs]);
      const answer = await receiver.evaluate(([sdp, uri, w, ms]) => window.wpFetchAnswer(sdp, uri, w, ms), [offer.sdp, offer.uri, where, busy]);
      await sender.evaluate((sdp) => window.wpAccept(sdp), answer);
      const got = await receiver.evaluate(() => window.wpResult());
      mbps[`${where}${busy ? '_busy' : ''}`].push(GOODPUT_BYTES / got.ms / 1000);
    }
  }
  const out = { chunk_size: cs, busy_ms_per_100: BUSY_MS, raw_mbps: raw };
  for (const [k, v] of Object.entries(mbps)) out[k] = stats(v);
  log(`  fetcher on the main thread / in a Worker, ${cs} B: ${out.main.median.toFixed(1)} / ${out.worker.median.toFixed(1)} MB/s; main thread busy ${BUSY_MS} ms in 100: ${out.main_busy.median.toFixed(1)} / ${out.worker_busy.median.toFixed(1)} MB/s`);
  return out;
}

async function page(path) {
  const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
  const p = await context.newPage();
  p.on('pageerror', (e) => log(`page error: ${e.message}`));
  const cdp = await context.newCDPSession(p);
  await cdp.send('Performance.enable');
  metering.set(p, cdp);
  await p.goto(`${base}${path}`);
  return p;
}

try {
  // 1. Goodput.
  if (only.includes('goodput')) {
  log('goodput: raw data channel vs PPSPP, page → page');
  result.goodput = {};
  for (const cs of CHUNK_SIZES) {
    const sender = await page('/e2e/bench.html');
    const receiver = await page('/e2e/bench.html');
    await sender.waitForFunction(() => window.benchReady);
    await receiver.waitForFunction(() => window.benchReady);
    const offer = await sender.evaluate(() => window.blastOffer());
    const answer = await receiver.evaluate((sdp) => window.blastAnswer(sdp), offer);
    await sender.evaluate((sdp) => window.blastAccept(sdp), answer);
    const raw = [];
    const loss = [];
    const rawCpu = new CpuPerMb(process.pid);
    for (let r = 0; r < RUNS; r++) {
      await receiver.evaluate(() => window.blastReset());
      const cpuBefore = threadCpuSnapshot(process.pid);
      await sender.evaluate(([b, s, h]) => window.blastSend(b, s, h), [GOODPUT_BYTES, cs, HIGH_WATER]);
      await new Promise((res) => setTimeout(res, 300));
      const got = await receiver.evaluate(() => window.blastReceived());
      raw.push(got.bytes / (got.last - got.first) / 1000);
      loss.push(1 - got.bytes / GOODPUT_BYTES);
      rawCpu.add(cpuBefore, (got.last - got.first) / 1000, got.bytes);
    }
    const ppspp = [];
    const ppsppCpu = new CpuPerMb(process.pid);
    for (let r = 0; r < RUNS; r++) {
      const uri = await sender.evaluate(([s, b, c, o]) => window.ppsppSeed(s, b, c, o), [signalUrl, GOODPUT_BYTES, cs, SEED_OPTIONS]);
      const cpuBefore = threadCpuSnapshot(process.pid);
      const fetching = receiver.evaluate(([u, o]) => window.ppsppFetch(u, { options: o }), [uri, FETCH_OPTIONS]);
      if (process.env.BENCH_DEBUG) {
        for (let i = 0; i < 6; i++) {
          await new Promise((res) => setTimeout(res, 300));
          log(`    sender: ${JSON.stringify(await sender.evaluate(() => window.ppsppSenderStats()))}`);
        }
      }
      const got = await fetching;
      if (got.bytes !== GOODPUT_BYTES) throw new Error(`fetched ${got.bytes} bytes`);
      if (process.env.BENCH_DEBUG) log(`    ${JSON.stringify(got)}`);
      ppspp.push(got.bytes / got.ms / 1000);
      ppsppCpu.add(cpuBefore, got.ms / 1000, got.bytes);
    }
    if (cs === DEFAULT_CHUNK) {
      // What each page's main thread and its engine's Worker did in one more fetch,
      // profiled (the sampling slows it, so it is not one of the timed runs). The fetcher
      // is kept until its Worker's profile is taken: a freed engine's Worker ends.
      const uri = await sender.evaluate(([s, b, c, o]) => window.ppsppSeed(s, b, c, o), [signalUrl, GOODPUT_BYTES, cs, SEED_OPTIONS]);
      const profiling = [await profileStart(sender), await profileStart(receiver)];
      const workerProfiling = [await workerProfileStart(sender), await workerProfileStart(receiver)];
      const got = await receiver.evaluate(([u, o]) => window.ppsppFetch(u, { keep: true, options: o }), [uri, FETCH_OPTIONS]);
      const [sent, received] = [await profileStop(profiling[0]), await profileStop(profiling[1])];
      const [sentWorker, receivedWorker] = [await workerProfileStop(workerProfiling[0]), await workerProfileStop(workerProfiling[1])];
      await receiver.evaluate(() => window.ppsppClose());
      if (got.bytes !== GOODPUT_BYTES) throw new Error(`fetched ${got.bytes} bytes`);
      if (sentWorker.workers === 0 || receivedWorker.workers === 0) throw new Error('an engine\'s Worker was not profiled');
      logProfile(sent, 'sender');
      logProfile(sentWorker.functions, 'sender\'s engine Worker');
      logProfile(received, 'receiver');
      logProfile(receivedWorker.functions, 'receiver\'s engine Worker');
      result.goodput_profile = {
        chunk_size: cs,
        mbps: got.bytes / got.ms / 1000,
        sender: profileShares(sent),
        sender_worker: profileShares(sentWorker.functions),
        receiver: profileShares(received),
        receiver_worker: profileShares(receivedWorker.functions),
      };
      const shares = (s) => `idle ${(100 * s.idle).toFixed(0)} %, browser ${(100 * s.browser).toFixed(0)} %, hashing ${(100 * s.wasm_hash).toFixed(0)} %, allocator ${(100 * s.wasm_alloc).toFixed(0)} %, engine ${(100 * s.wasm_engine).toFixed(0)} %, send ${(100 * s.channel_send).toFixed(0)} %, JS ${(100 * s.js).toFixed(0)} %`;
      const gp = result.goodput_profile;
      log(`  profiled PPSPP fetch: sender ${shares(gp.sender)}; its Worker ${shares(gp.sender_worker)}; receiver ${shares(gp.receiver)}; its Worker ${shares(gp.receiver_worker)}`);
    }
    const rawS = stats(raw);
    const ppsppS = stats(ppspp);
    result.goodput[cs] = { raw_mbps: rawS, raw_loss: stats(loss), ppspp_mbps: ppsppS, ratio: ppsppS.median / rawS.median, raw_cpu: rawCpu.result(), ppspp_cpu: ppsppCpu.result() };
    log(`  ${cs} B: raw ${rawS.median.toFixed(1)} MB/s, PPSPP ${ppsppS.median.toFixed(1)} MB/s, ratio ${(ppsppS.median / rawS.median).toFixed(2)}`);
    for (const [name, c] of [['raw', result.goodput[cs].raw_cpu], ['PPSPP', result.goodput[cs].ppspp_cpu]]) {
      log(`    ${name}: ${(1000 * c.cpu_s_per_mb).toFixed(1)} CPU ms per MB, cores busy ${c.cores_busy.toFixed(2)} of ${availableParallelism()}; ${c.threads.slice(0, 5).map((g) => `${g.process} ${g.thread} ${(1000 * g.cpu_s_per_mb).toFixed(1)}`).join(', ')}`);
    }
    if (cs === DEFAULT_CHUNK) result.engine_thread = await engineThreads(sender, receiver, cs, rawS);
    await sender.context().close();
    if (cs === DEFAULT_CHUNK) result.native_to_page = await nativeToPage(receiver, rawS);
    await receiver.context().close();
  }

  }
  // 2. Verification in Wasm and crypto.subtle.
  if (only.includes('verify')) {
  log('verification: Wasm Merkle verification and crypto.subtle digests');
  result.verify_wasm = {};
  result.digest_subtle = {};
  const vp = await page('/e2e/bench.html');
  await vp.waitForFunction(() => window.benchReady);
  for (const hash of ['sha1', 'sha256']) {
    for (const cs of VERIFY_SIZES) {
      const key = `${hash}_${cs / 1024}k`;
      result.verify_wasm[key] = stats(await vp.evaluate(([h, c, b, r]) => window.verifyWasm(h, c, b, r), [hash, cs, VERIFY_BYTES, RUNS]));
      result.digest_subtle[key] = stats(await vp.evaluate(([h, c, b, r]) => window.digestSubtle(h, c, b, r), [hash, cs, VERIFY_BYTES, RUNS]));
      log(`  ${key}: Wasm ${result.verify_wasm[key].median.toFixed(0)} MB/s, subtle ${result.digest_subtle[key].median.toFixed(0)} MB/s`);
    }
  }
  await vp.context().close();
  }

  // 3. Swarm.
  if (only.includes('swarm')) {
  log(`swarm: 1 native seeder + ${SWARM_PAGES} pages`);
  const video = join(root, 'target', 'bench', smoke ? 'swarm-smoke.webm' : 'swarm.webm');
  if (!existsSync(video)) {
    mkdirSync(dirname(video), { recursive: true });
    // Noise keeps VP8 at its target rate: about 20 MB in 60 s.
    execFileSync('ffmpeg', ['-y', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=30',
      '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000', '-t', smoke ? '4' : '60',
      '-vf', 'noise=alls=30:allf=t', '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8',
      '-b:v', '2600k', '-minrate', '2600k', '-maxrate', '2600k', '-g', '30', '-c:a', 'libopus', '-b:a', '64k',
      '-f', 'webm', `${video}.tmp`]);
    execFileSync('mv', [`${video}.tmp`, video]);
  }
  const size = statSync(video).size;
  // A viewer arriving where others already play: first frames of pages that join.
  const joinTtff = [];
  const joinStartup = [];
  const ratios = [];
  const walls = [];
  const ttff = [];
  // Where each page's time to the first frame went (Player.startup), step by step.
  const startup = [];
  const duplicates = [];
  const stalls = [];
  const longestStall = [];
  // Per run: the pages' renderer processes' CPU (all threads; the main thread alone) per
  // page per MB; per page: its main thread's task time per MB.
  const pageCpu = [];
  const pageMainCpu = [];
  const pageTask = [];
  const seederCpu = [];
  let cpuByThread = null;
  // The HTTP origin: the same file on the page's static server (sirv answers Range), with
  // its tree file beside it.
  const origin = { ratios: [], walls: [], ttff: [] };
  // Pages whose main thread is busy (player.html?busy=).
  const busy = { ratios: [], walls: [], ttff: [], pageUpload: [] };
  const tree = `${video}.tree`;
  const rootOut = execFileSync(bin('ppspp'), ['root', video, '--hash', 'sha256', '--chunk-size', '8192', '--tree', tree,
    '--tree-url', `${base}/bench-media/${tree.split('/').pop()}`,
    '--http', `${base}/bench-media/${video.split('/').pop()}`, '--signal', signalUrl], { encoding: 'utf8' });
  const originUri = rootOut.split('\n').find((l) => l.startsWith('ppspp://'));
  /**
   * Opens the pages on `uri` 250 ms apart and waits until each holds everything
   * (BENCH_PROFILE=1: with a CPU profile of the first page, the first time).
   */
  let profiled = !process.env.BENCH_PROFILE;
  const playAll = async (uri, query = '') => {
    const t0 = Date.now();
    const pages = [];
    let profiling = null;
    for (let i = 0; i < SWARM_PAGES; i++) {
      pages.push(await page(`/e2e/player.html?uri=${encodeURIComponent(uri)}${PAGE_QUERY}${query}`));
      if (!profiled) {
        profiled = true;
        profiling = await profileStart(pages[0]);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const done = async (p) => p.evaluate(() => { const s = window.__t.player?.stats(); return s ? s.chunksHave === s.chunkCount : false; });
    for (const p of pages) {
      for (let i = 0; !(await done(p)); i++) {
        if (i > 1200) throw new Error('a swarm page did not complete within 2 minutes');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (profiling) logProfile(await profileStop(profiling), 'the first swarm page');
    return { pages, wall: (Date.now() - t0) / 1000 };
  };
  for (let run = 0; run < RUNS; run++) {
    const seeder = await start(bin('ppspp'), ['seed', video, '--signal', signalUrl, '--bind', '127.0.0.1:0',
      '--chunk-size', '8192', '--hash', 'sha256', '--stats-json'], /^ppspp:\/\//);
    // Where the machine's CPU went: every thread of the browser, the seeder and the
    // servers, from the first page's start until all pages held everything.
    const cpuBefore = threadCpuSnapshot(process.pid);
    const { pages, wall } = await playAll(seeder.line);
    const threads = threadCpuBetween(cpuBefore, threadCpuSnapshot(process.pid));
    const cpuOf = (keep) => threads.filter(keep).reduce((a, g) => a + g.cpu_s, 0);
    // Each page has a renderer process of its own (a browser context each).
    pageCpu.push(cpuOf((g) => g.process === 'renderer') / SWARM_PAGES / (size / 1e6));
    pageMainCpu.push(cpuOf((g) => g.process === 'renderer' && g.thread === 'main thread') / SWARM_PAGES / (size / 1e6));
    if (run === 0) {
      const total = cpuOf(() => true);
      cpuByThread = { wall_s: wall, cores: availableParallelism(), total_cpu_s: total, threads };
      log(`  run 1: ${total.toFixed(0)} CPU s in ${wall.toFixed(1)} s on ${availableParallelism()} cores; ${threads.slice(0, 6).map((g) => `${g.process} ${g.thread} ${g.cpu_s.toFixed(1)}`).join(', ')}`);
    }
    walls.push(wall);
    await new Promise((r) => setTimeout(r, 1200)); // one more seeder stats line
    for (const p of pages) ttff.push(await p.evaluate(() => window.__t.firstFrameMs ?? window.__t.player.timeToFirstFrameMs));
    for (const p of pages) startup.push(await p.evaluate(() => window.__t.player.startup));
    // Playback until the page held everything (nothing can stall after that).
    for (const p of pages) {
      const durations = await p.evaluate(() => window.__t.stalls.map((s) => s.durationMs));
      stalls.push(durations.filter((d) => d > 1000).length);
      longestStall.push(Math.max(0, ...durations));
    }
    // Each page verified the whole video.
    for (const p of pages) pageTask.push((await pageTaskSeconds(p)) / (size / 1e6));
    const last = [...seeder.lines].reverse().find((l) => l.startsWith('{'));
    const uploaded = JSON.parse(last).bytes_uploaded;
    ratios.push(uploaded / size);
    // Chunks a page received again after it had them: what a duplicate request cost the
    // swarm (the seeder's share of it is in its upload).
    let duplicate = 0;
    for (const p of pages) duplicate += await p.evaluate(() => window.__t.player.stats().bytesDuplicate);
    duplicates.push(duplicate / size);
    seederCpu.push(cpuSeconds(seeder.child.pid) / (uploaded / 1e6));
    // A page joining the others while they play (the last page leaves first, so
    // SWARM_PAGES - 1 play): what a viewer arriving at a busy page sees.
    await pages.at(-1).context().close();
    for (let j = 0; j < JOINERS; j++) {
      const p = await page(`/e2e/player.html?uri=${encodeURIComponent(seeder.line)}${PAGE_QUERY}`);
      let ms = null;
      for (let i = 0; ms === null || ms === undefined; i++) {
        if (i > 600) throw new Error('a joining page had no first frame within 30 s');
        await new Promise((r) => setTimeout(r, 50));
        ms = await p.evaluate(() => window.__t.firstFrameMs ?? window.__t.player?.timeToFirstFrameMs ?? null);
      }
      joinTtff.push(ms);
      joinStartup.push(await p.evaluate(() => window.__t.player.startup));
      await p.context().close();
      await new Promise((r) => setTimeout(r, 500));
    }
    for (const p of pages.slice(0, -1)) await p.context().close();
    stop(seeder);
    log(`  run ${run + 1}: seeder upload ${ratios.at(-1).toFixed(2)}× content, pages received ${duplicates.at(-1).toFixed(2)}× content twice, wall ${walls.at(-1).toFixed(1)} s, seeder ${seederCpu.at(-1).toFixed(3)} CPU s/MB sent, a page ${pageCpu.at(-1).toFixed(3)} CPU s/MB verified (${pageMainCpu.at(-1).toFixed(3)} on its main thread; main-thread tasks ${stats(pageTask.slice(-SWARM_PAGES)).median.toFixed(3)} s/MB, median)`);
    // The same pages with the HTTP origin and no seeder: what the server sent is what the
    // pages' engines received from it.
    const http = await playAll(originUri);
    origin.walls.push(http.wall);
    let fromOrigin = 0;
    for (const p of http.pages) {
      origin.ttff.push(await p.evaluate(() => window.__t.firstFrameMs ?? window.__t.player.timeToFirstFrameMs));
      fromOrigin += await p.evaluate(() => window.__t.player.stats().httpBytesReceived);
    }
    origin.ratios.push(fromOrigin / size);
    for (const p of http.pages) await p.context().close();
    log(`  run ${run + 1}: HTTP origin sent ${origin.ratios.at(-1).toFixed(2)}× content, wall ${origin.walls.at(-1).toFixed(1)} s`);
    // The same again from a fresh seeder, every page's main thread busy BUSY_MS in 100.
    const busySeeder = await start(bin('ppspp'), ['seed', video, '--signal', signalUrl, '--bind', '127.0.0.1:0',
      '--chunk-size', '8192', '--hash', 'sha256', '--stats-json'], /^ppspp:\/\//);
    const loaded = await playAll(busySeeder.line, `&busy=${BUSY_MS}`);
    busy.walls.push(loaded.wall);
    for (const p of loaded.pages) {
      busy.ttff.push(await p.evaluate(() => window.__t.firstFrameMs ?? window.__t.player.timeToFirstFrameMs));
      busy.pageUpload.push((await p.evaluate(() => window.__t.player.stats().bytesUploaded)) / size);
    }
    await new Promise((r) => setTimeout(r, 1200)); // one more seeder stats line
    const busyLast = [...busySeeder.lines].reverse().find((l) => l.startsWith('{'));
    busy.ratios.push(JSON.parse(busyLast).bytes_uploaded / size);
    for (const p of loaded.pages) await p.context().close();
    stop(busySeeder);
    log(`  run ${run + 1}: busy pages: seeder upload ${busy.ratios.at(-1).toFixed(2)}× content, wall ${busy.walls.at(-1).toFixed(1)} s`);
  }
  result.swarm_busy = {
    pages: SWARM_PAGES, busy_ms_per_100: BUSY_MS, content_bytes: size, seeder_upload_ratio: stats(busy.ratios),
    page_upload_ratio: stats(busy.pageUpload), ttff_ms: stats(busy.ttff), wall_s: stats(busy.walls),
  };
  log(`  busy pages: first frame median ${result.swarm_busy.ttff_ms.median.toFixed(0)} ms (max ${result.swarm_busy.ttff_ms.max.toFixed(0)}), each page uploaded ${result.swarm_busy.page_upload_ratio.median.toFixed(2)}× content (median)`);
  result.swarm_origin = { pages: SWARM_PAGES, content_bytes: size, origin_ratio: stats(origin.ratios), ttff_ms: stats(origin.ttff), wall_s: stats(origin.walls) };
  log(`  HTTP origin: first frame median ${result.swarm_origin.ttff_ms.median.toFixed(0)} ms over ${origin.ttff.length} pages`);
  const steps = ['engineMs', 'joinedMs', 'firstPeerMs', 'firstChunkMs', 'firstAppendMs', 'firstBufferedMs', 'firstFrameMs'];
  result.swarm = {
    pages: SWARM_PAGES, content_bytes: size, seeder_upload_ratio: stats(ratios), duplicate_ratio: stats(duplicates), ttff_ms: stats(ttff), wall_s: stats(walls),
    stalls_over_1s_per_page: stats(stalls), longest_stall_ms: stats(longestStall),
    page_cpu_s_per_mb: stats(pageCpu), page_main_thread_cpu_s_per_mb: stats(pageMainCpu), page_task_s_per_mb: stats(pageTask),
    seeder_cpu_s_per_mb: stats(seederCpu),
    startup_ms: Object.fromEntries(steps.map((k) => [k, stats(startup.map((s) => s[k]).filter((v) => v !== null && v !== undefined))])),
    cpu_by_thread: cpuByThread,
  };
  result.swarm_join = {
    playing: SWARM_PAGES - 1, per_run: JOINERS, joiners: joinTtff.length, ttff_ms: stats(joinTtff),
    startup_ms: Object.fromEntries(steps.map((k) => [k, stats(joinStartup.map((s) => s[k]).filter((v) => v !== null && v !== undefined))])),
  };
  log(`  first frame median ${result.swarm.ttff_ms.median.toFixed(0)} ms over ${ttff.length} pages; stalls over 1 s: ${stalls.reduce((a, b) => a + b, 0)} in all, longest ${Math.max(...longestStall).toFixed(0)} ms`);
  log(`  a page joining ${SWARM_PAGES - 1} playing: first frame median ${result.swarm_join.ttff_ms.median.toFixed(0)} ms over ${joinTtff.length} pages`);
  log(`  startup, median (max) ms after attach(): ${steps.map((k) => `${k} ${result.swarm.startup_ms[k].median?.toFixed(0)} (${result.swarm.startup_ms[k].max?.toFixed(0)})`).join(', ')}`);
  }
  if (only.includes('live')) {
  log(`live: ppspp live + ${LIVE_PAGES} pages, ${LIVE_SECONDS} s of ffmpeg's test source at real time`);
  const live = { latency_ms: [], latency_max_ms: [], stalls: [], longest_stall_ms: [], ratios: [], ttff: [] };
  const keyDir = join(root, 'target', 'bench');
  mkdirSync(keyDir, { recursive: true });
  for (let run = 0; run < RUNS; run++) {
    const t0 = Date.now();
    // 320×240 at 25 frames a second, about 0.5 Mbit/s, a Cluster a second: light enough to
    // encode at real time next to 8 pages on 2 cores (at 640×360 the encoder fell behind).
    const ffmpeg = spawn('ffmpeg', ['-loglevel', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25',
      '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000', '-t', String(LIVE_SECONDS),
      '-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '400k', '-g', '25', '-keyint_min', '25',
      '-c:a', 'libopus', '-b:a', '64k', '-f', 'webm', '-'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const source = spawn(bin('ppspp'), ['live', '--signal', signalUrl, '--bind', '127.0.0.1:0', '--key', join(keyDir, 'live.key'),
      '--max-unchoked', String(LIVE_UNCHOKED), '--linger', '2', '--stats-json'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let streamBytes = 0;
    ffmpeg.stdout.on('data', (d) => {
      streamBytes += d.length;
      source.stdin.write(d);
    });
    ffmpeg.stdout.on('end', () => source.stdin.end());
    const sourceLines = [];
    const rl = createInterface({ input: source.stdout });
    // Its last stats line comes as it exits, once the input ended and its tail was served.
    const sourceDone = new Promise((r) => rl.once('close', r));
    const uri = await new Promise((resolve, reject) => {
      rl.on('line', (l) => {
        sourceLines.push(l);
        if (l.startsWith('ppspp://live/')) resolve(l);
      });
      source.once('exit', (code) => reject(new Error(`ppspp live exited (${code})`)));
    });
    const pages = [];
    for (let i = 0; i < LIVE_PAGES; i++) {
      pages.push(await page(`/e2e/player.html?uri=${encodeURIComponent(uri)}&appends=1&liveEnd=3000`));
      await new Promise((r) => setTimeout(r, 250));
    }
    const ended = async (p) => p.evaluate(() => window.__t.liveEnded || window.__t.error !== null);
    for (const p of pages) {
      for (let i = 0; !(await ended(p)); i++) {
        if (i > (LIVE_SECONDS + 30) * 10) throw new Error('a live page did not end within the stream plus 30 s');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const latencies = [];
    for (const p of pages) {
      const t = await p.evaluate(() => ({
        error: window.__t.error, appendTimes: window.__t.appendTimes, ttff: window.__t.firstFrameMs,
        stalls: window.__t.stalls.map((s) => s.durationMs),
      }));
      if (t.error) throw new Error(`a live page failed: ${t.error}`);
      for (const [at, mediaEnd] of t.appendTimes) latencies.push(at - (t0 + mediaEnd * 1000));
      live.ttff.push(t.ttff);
      live.stalls.push(t.stalls.filter((d) => d > 1000).length);
      live.longest_stall_ms.push(Math.max(0, ...t.stalls));
    }
    latencies.sort((a, b) => a - b);
    live.latency_ms.push(latencies[Math.floor(latencies.length / 2)]);
    live.latency_max_ms.push(latencies[latencies.length - 1]);
    await sourceDone;
    const last = [...sourceLines].reverse().find((l) => l.startsWith('{'));
    live.ratios.push(JSON.parse(last).bytes_uploaded / streamBytes);
    for (const p of pages) await p.context().close();
    ffmpeg.kill('SIGKILL');
    log(`  run ${run + 1}: latency median ${live.latency_ms.at(-1).toFixed(0)} ms, max ${live.latency_max_ms.at(-1).toFixed(0)} ms; source upload ${live.ratios.at(-1).toFixed(2)}× the stream`);
  }
  result.live = {
    pages: LIVE_PAGES, seconds: LIVE_SECONDS, max_unchoked: LIVE_UNCHOKED,
    latency_ms_median: stats(live.latency_ms), latency_ms_max: stats(live.latency_max_ms),
    stalls_over_1s_per_page: stats(live.stalls), longest_stall_ms: stats(live.longest_stall_ms),
    seeder_upload_ratio: stats(live.ratios), ttff_ms: stats(live.ttff),
  };
  }
} finally {
  await browser.close();
  stop(signal);
  stop(web);
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
log(`wrote ${out}`);
