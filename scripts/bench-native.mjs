#!/usr/bin/env node
// Native half of `make bench`: measures, then writes one JSON file.
//   udp            ppspp seed/fetch over loopback UDP (scripts/bench-udp.sh), 1 and 8 KiB chunks
//   binmap         criterion's binmap bench (ops/s per benchmark id, memory against a bitmap)
//   verify_native  Merkle verification MB/s (crates/ppspp-wasm/examples/verify.rs, the same
//                  VerifyBench workload the browser times in Wasm)
//   sim            simulated LEDBAT: ppspp-sim link, delay, loss (deterministic, one run each)
//   signal         signaling scale: 10,000 WebSocket clients, in memory and over Redis
//   scale          one native seeder under load (page-like WebRTC peers, 1,000 UDP fetchers)
//                  and the simulator's swarm with 1,000 leechers
// plus `machine` (CPU, cores, memory, kernel, rustc). Figures measured several times are
// {min, median, max, runs: [...]}. Units: MB/s = 10^6 bytes/s, Mbit/s = 10^6 bits/s.
//
// Usage: node scripts/bench-native.mjs [--smoke] [--out FILE] [--only udp,binmap,verify,sim,signal,scale]
//   --smoke  a few seconds of tiny sizes, 1 run each: numbers, not meaningful ones
//   --out    default target/bench/native.json (--smoke: target/bench/native-smoke.json)
//   --only   run only these parts (the others are left out of the file)
// Full mode also copies the simulator's plots to docs/bench/sim-<plot>.png.
// Exits non-zero if any part failed; the file is written anyway, with `errors`.
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PARTS = ['udp', 'binmap', 'verify', 'sim', 'signal', 'scale'];

function usage(msg) {
  if (msg) console.error(`bench-native: ${msg}`);
  console.error(`usage: node scripts/bench-native.mjs [--smoke] [--out FILE] [--only ${PARTS.join(',')}]`);
  process.exit(2);
}

const args = process.argv.slice(2);
let smoke = false;
let out = null;
let only = PARTS;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--smoke') smoke = true;
  else if (a === '--out') out = resolve(args[++i] ?? usage('--out needs a file'));
  else if (a.startsWith('--out=')) out = resolve(a.slice(6));
  else if (a === '--only') only = (args[++i] ?? usage('--only needs parts')).split(',');
  else if (a.startsWith('--only=')) only = a.slice(7).split(',');
  else if (a === '-h' || a === '--help') usage();
  else usage(`unknown argument ${a}`);
}
out ??= join(root, 'target', 'bench', smoke ? 'native-smoke.json' : 'native.json');

// What `make test-rust` builds with: the same flags find its artifacts fresh, where a
// package's own feature set would rebuild shared dependencies.
const TEST_BUILD = ['--workspace', '--locked', '--features', 'ppspp-cli/webrtc-rs,ppspp-wasm/bench'];
for (const p of only) if (!PARTS.includes(p)) usage(`unknown part ${p} (${PARTS.join(', ')})`);

const log = (msg) => console.error(`bench-native: ${msg}`);

function stats(runs) {
  const s = [...runs].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { min: s[0], median, max: s[s.length - 1], runs };
}

/** `x` to `digits` significant digits. */
const round = (x, digits = 4) => Number(x.toPrecision(digits));

// The child currently running, so that an interrupt ends its whole process group.
let current = null;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    if (current) try { process.kill(-current.pid, 'SIGTERM'); } catch { /* gone */ }
    process.exit(130);
  });
}

/**
 * Runs a command in its own process group; resolves with its stdout and stderr, rejects on
 * a non-zero exit or after `timeoutS` (ending the group). Its stderr is shown line by line
 * as it comes, unless `quiet` or `hide` (a RegExp) matches the line.
 */
function run(cmd, argv, { timeoutS = 1800, quiet = false, hide = null, env = {} } = {}) {
  return new Promise((res, rej) => {
    const child = spawn(cmd, argv, {
      cwd: root,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CARGO_TERM_COLOR: 'never', ...env },
    });
    current = child;
    let stdout = '';
    let stderr = '';
    let shown = 0; // stderr up to here has been shown (or hidden)
    const show = (all) => {
      const end = all ? stderr.length : stderr.lastIndexOf('\n') + 1;
      if (end <= shown) return;
      for (const line of stderr.slice(shown, end).split('\n').slice(0, all ? undefined : -1)) {
        if (!quiet && !(hide && hide.test(line))) process.stderr.write(`${line}\n`);
      }
      shown = end;
    };
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => {
      stderr += d;
      show(false);
    });
    const timer = setTimeout(() => {
      log(`${cmd} ${argv.join(' ')}: no end after ${timeoutS} s, stopping it`);
      try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    }, timeoutS * 1000);
    child.on('error', (e) => { clearTimeout(timer); current = null; rej(e); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      show(true);
      current = null;
      if (code === 0) return res({ stdout, stderr });
      const tail = (quiet ? stderr : '').split('\n').slice(-20).join('\n');
      rej(new Error(`${cmd} ${argv.join(' ')} ended with ${signal ?? `exit ${code}`}${tail ? `\n${tail}` : ''}`));
    });
  });
}

async function tryOut(cmd, argv) {
  try { return (await run(cmd, argv, { quiet: true, timeoutS: 60 })).stdout.trim(); } catch { return null; }
}

async function machine() {
  let cpu = null;
  try {
    const m = readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.+)$/m);
    cpu = m ? m[1].trim() : null;
  } catch { /* not Linux */ }
  const status = await tryOut('git', ['status', '--porcelain', '--untracked-files=no']);
  return {
    cpu_model: cpu ?? os.cpus()[0]?.model ?? null,
    cores: os.availableParallelism ? os.availableParallelism() : os.cpus().length,
    memory_gib: round(os.totalmem() / 2 ** 30, 3),
    kernel: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    rustc: await tryOut('rustc', ['--version']),
    node: process.version,
    git_commit: await tryOut('git', ['rev-parse', 'HEAD']),
    git_dirty: status === null ? null : status.length > 0,
    loadavg_start: os.loadavg().map((x) => round(x, 3)),
  };
}

async function targetDir() {
  const meta = JSON.parse((await run('cargo', ['metadata', '--format-version', '1', '--no-deps'], { quiet: true })).stdout);
  return meta.target_directory;
}

// 1. Native UDP on loopback: scripts/bench-udp.sh RUNS MB (both chunk sizes).
async function udp() {
  const runs = smoke ? 1 : 3;
  const mb = smoke ? 2 : 100;
  log(`udp: ${runs} run(s) of ${mb} MB, 1 and 8 KiB chunks`);
  const { stdout } = await run('bash', [join(root, 'scripts', 'bench-udp.sh'), String(runs), String(mb)], { timeoutS: 3600 });
  const lines = stdout.trim().split('\n');
  const header = lines.shift().split(',');
  const rows = lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [header[i], Number(v)])));
  const result = { file_mb: mb, runs_each: runs };
  for (const [cs, k] of [[1024, '1k'], [8192, '8k']]) {
    const mine = rows.filter((r) => r.chunk_size === cs);
    if (mine.length !== runs) throw new Error(`udp: expected ${runs} runs with ${cs} B chunks, got ${mine.length}:\n${stdout}`);
    result[`mbps_${k}`] = stats(mine.map((r) => r.mb_per_s));
    result[`fetch_cpu_s_${k}`] = stats(mine.map((r) => r.fetch_cpu_s));
    result[`fetch_rss_kb_${k}`] = stats(mine.map((r) => r.fetch_rss_kb));
    result[`seed_cpu_s_${k}`] = stats(mine.map((r) => r.seed_cpu_s));
    result[`seed_rss_kb_${k}`] = stats(mine.map((r) => r.seed_rss_kb));
    log(`  ${k}: ${result[`mbps_${k}`].median} MB/s (median)`);
  }
  return result;
}

/** The criterion result folders (`…/new/`) under `dir` written since `since` (ms). */
function criterionResults(dir, since) {
  const found = [];
  const walk = (d) => {
    let entries;
    try { entries = readdirSync(d, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = join(d, e.name);
      if (e.name === 'new') {
        const est = join(p, 'estimates.json');
        const bj = join(p, 'benchmark.json');
        if (existsSync(est) && existsSync(bj) && statSync(est).mtimeMs >= since) found.push({ est, bj });
      } else walk(p);
    }
  };
  walk(dir);
  return found;
}

// 2. Binmap against a bitmap: criterion's `binmap` bench.
async function binmap(target) {
  // Full mode: 1 s warm-up and 2 s measurement per bench (criterion's 3 + 5 s defaults
  // made this part six minutes of a suite that must stay under twenty).
  const quick = smoke
    ? ['--warm-up-time', '0.05', '--measurement-time', '0.1', '--sample-size', '10', '--nresamples', '1000']
    : ['--warm-up-time', '1', '--measurement-time', '2'];
  // Smoke: the test build's profile and flags, whose dependencies (criterion among them)
  // `make test` has built, and a baseline of its own so the full run's comparisons stay
  // against full runs.
  const build = smoke ? ['--profile', 'test', ...TEST_BUILD] : ['-p', 'ppspp'];
  const baseline = smoke ? ['--save-baseline', 'smoke'] : [];
  log(`binmap: cargo bench ${build.join(' ')} --bench binmap${smoke ? ' (short)' : ''}`);
  const since = Date.now() - 1000;
  const { stderr } = await run('cargo', ['bench', ...build, '--bench', 'binmap', '--', '--noplot', ...baseline, ...quick], {
    timeoutS: 3600,
    hide: /^(Benchmarking |Warning: Unable to complete|\s*$)/, // criterion's progress
  });
  const opsPerS = {};
  const meanNs = {};
  for (const groupDir of ['set', 'find']) {
    for (const { est, bj } of criterionResults(join(target, 'criterion', groupDir), since)) {
      const b = JSON.parse(readFileSync(bj, 'utf8'));
      const e = JSON.parse(readFileSync(est, 'utf8'));
      const ns = e.mean.point_estimate;
      const elements = b.throughput?.Elements ?? b.throughput?.elements ?? 1;
      meanNs[b.full_id] = round(ns);
      opsPerS[b.full_id] = round(elements / (ns * 1e-9));
    }
  }
  if (Object.keys(opsPerS).length === 0) throw new Error(`binmap: no criterion results under ${join(target, 'criterion')}`);
  // The bench prints "memory: Sequential, 2^16, cells, binmap bytes, bitmap bytes, ratio".
  const memory = {};
  for (const m of stderr.matchAll(/^memory: (\w+), (2\^\d+), (\d+), (\d+), (\d+), ([\d.]+)\s*$/gm)) {
    memory[`${m[1]}/${m[2]}`] = {
      binmap_cells: Number(m[3]),
      binmap_bytes: Number(m[4]),
      bitmap_bytes: Number(m[5]),
      ratio: round(Number(m[4]) / Number(m[5]), 3),
    };
  }
  const sorted = (o) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
  log(`  ${Object.keys(opsPerS).length} benchmarks, ${Object.keys(memory).length} memory rows`);
  return {
    note: 'ops_per_s: set = chunks set per second; find = calls per second (1024 calls per iteration). mean_ns: criterion mean per iteration. memory: heap bytes of the binmap against n/8 bytes of bitmap, ratio = binmap / bitmap',
    ops_per_s: sorted(opsPerS),
    mean_ns: sorted(meanNs),
    memory,
  };
}

// The smoke run takes its binaries from the test build `make test` made just before
// (`cargo test --no-run` with the same flags is then a no-op): it builds examples and the
// binaries integration tests run. `cargo build` with the same flags would build much of the
// tree again, its features unified without the dev-dependencies.
let testBuilt = null;
function testBuild() {
  if (!testBuilt) {
    log(`cargo test ${TEST_BUILD.join(' ')} --no-run`);
    testBuilt = run('cargo', ['test', ...TEST_BUILD, '--no-run'], { timeoutS: 3600, quiet: true });
  }
  return testBuilt;
}

// 3. Merkle verification, native (the browser times the same VerifyBench in Wasm): as
// built normally (RustCrypto picks SHA-NI etc. at run time where the CPU has them) and with
// the portable software backends forced (`--cfg sha1_backend/sha2_backend="soft"`, in a
// target directory of its own), which is what Wasm runs and what the issue's target
// (Wasm ≥ 60 % of native software hashing) compares against.
async function verifyOnce(soft) {
  const env = soft
    ? { RUSTFLAGS: '--cfg sha1_backend="soft" --cfg sha2_backend="soft"', CARGO_TARGET_DIR: join(root, 'target', 'soft-hash') }
    : {};
  let stdout;
  if (smoke && !soft) {
    // The smoke run checks that figures come, not their speed: the test build's example (a
    // debug build, no release build of its own), where the hashing is as built normally.
    log('verify: the test build\'s examples/verify --smoke');
    await testBuild();
    ({ stdout } = await run(join(target, 'debug', 'examples', 'verify'), ['--smoke'], { timeoutS: 600 }));
  } else {
    log(`verify${soft ? ' (software hashing)' : ''}: cargo run --release -p ppspp-wasm --features bench --example verify`);
    ({ stdout } = await run('cargo', ['run', '--release', '-p', 'ppspp-wasm', '--features', 'bench', '--example', 'verify'], { timeoutS: 3600, env }));
  }
  const line = stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop();
  if (!line) throw new Error(`verify: no JSON line in its output:\n${stdout}`);
  const v = JSON.parse(line);
  log(`  ${Object.entries(v).filter(([, x]) => x?.median !== undefined).map(([k, x]) => `${k} ${x.median} MB/s`).join(', ')}`);
  return v;
}

async function verify() {
  const normal = await verifyOnce(false);
  // The smoke run skips the software backends: their build (a target directory of its
  // own, every dependency again) only feeds a ratio the full run reports, and the program
  // is the one just run.
  if (smoke) {
    log('verify (software hashing): in the full run only');
    return normal;
  }
  return { ...normal, soft: await verifyOnce(true) };
}

// 4. Simulated LEDBAT (deterministic: one run each). Smoke: `link` only (about 2 s).
// Rates here are Mbit/s, as in docs/EXPERIMENTS.md.
async function sim(target) {
  // Smoke: the test build's simulator (its `link` run takes seconds), not a release build.
  if (smoke) {
    log('sim: the test build\'s ppspp-sim');
    await testBuild();
  } else {
    log('sim: cargo build --release -p ppspp-sim');
    await run('cargo', ['build', '--release', '-p', 'ppspp-sim'], { timeoutS: 3600 });
  }
  const bin = join(target, smoke ? 'debug' : 'release', 'ppspp-sim');
  const result = {};
  for (const exp of smoke ? ['link'] : ['link', 'delay', 'loss']) {
    const dir = join(target, 'sim', exp);
    log(`  ppspp-sim ${exp}`);
    const { stdout } = await run(bin, [exp, '--out', dir], { timeoutS: 1800 });
    const s = JSON.parse(stdout.trim().split('\n').pop());
    if (exp === 'link') {
      // 5 Mbit/s, 60 ms one-way, 60 s; figures over 10–60 s for each queue size.
      result.link = { link_mbit_s: 5, one_way_ms: 60, wall_s: s.wall_s };
      for (const q of ['40KB', '400KB']) {
        result.link[`queue_${q}`] = {
          utilisation: s[q].utilisation_10_60s,
          queue_delay_ms: s[q].queue_ms_10_60s,
          goodput_mbit_s: s[q].goodput_mbps_10_60s,
          peak_rate_mbit_s: s[q].peak_rate_mbps,
        };
      }
    } else if (exp === 'delay') {
      // 10 Mbit/s, one-way delay 25–500 ms, 60 s each: goodput by delay.
      const keys = Object.keys(s.by_owd).sort((a, b) => parseFloat(a) - parseFloat(b));
      result.delay = {
        link_mbit_s: 10,
        queue_kb: 400,
        wall_s: s.wall_s,
        goodput_mbit_s_30_60s: Object.fromEntries(keys.map((k) => [k, s.by_owd[k].mean_mbps_30_60s])),
        goodput_mbit_s_0_60s: Object.fromEntries(keys.map((k) => [k, s.by_owd[k].mean_mbps_0_60s])),
      };
    } else {
      // 10 Mbit/s, 10 ms one-way, random loss 0–3 %, 60 s each: goodput by loss rate.
      const keys = Object.keys(s.by_loss).sort((a, b) => parseFloat(a) - parseFloat(b));
      result.loss = {
        link_mbit_s: 10,
        one_way_ms: 10,
        queue_kb: 100,
        wall_s: s.wall_s,
        goodput_mbit_s_0_60s: Object.fromEntries(keys.map((k) => [k, s.by_loss[k].mean_mbps_0_60s])),
        mb_downloaded: Object.fromEntries(keys.map((k) => [k, s.by_loss[k].mb_downloaded])),
      };
    }
    if (!smoke) {
      const docs = join(root, 'docs', 'bench');
      mkdirSync(docs, { recursive: true });
      const plots = readdirSync(dir).filter((f) => f.endsWith('.png')).sort();
      for (const f of plots) copyFileSync(join(dir, f), join(docs, `sim-${f.replaceAll('_', '-')}`));
      result[exp].plots = plots.map((f) => `docs/bench/sim-${f.replaceAll('_', '-')}`);
    }
  }
  return result;
}

// 5. Signaling scale (signaling/examples/signal-load.rs): WebSocket clients joining rooms of
// one in-memory instance, and of two instances sharing a Redis; join and relay latency,
// server memory per client, server (and Redis) CPU per 1,000 relayed signals. Smoke: the
// test build's binaries, a few hundred clients.
async function signal(target) {
  const profile = smoke ? 'debug' : 'release';
  if (smoke) {
    log('signal: the test build\'s examples/signal-load and ppspp-signal');
    await testBuild();
  } else {
    log('signal: cargo build --release --locked -p ppspp-signal --example signal-load --bin ppspp-signal');
    await run('cargo', ['build', '--release', '--locked', '-p', 'ppspp-signal', '--example', 'signal-load', '--bin', 'ppspp-signal'], { timeoutS: 3600 });
  }
  const load = join(target, profile, 'examples', 'signal-load');
  const server = join(target, profile, 'ppspp-signal');
  const size = smoke ? ['--clients', '200', '--rooms', '4', '--signals', '2'] : ['--clients', '10000', '--rooms', '100', '--signals', '5', '--rate', '5000'];
  const modes = { memory: ['--instances', '1'], redis: ['--instances', '2', '--redis'] };
  const runs = smoke ? 1 : 3;
  const result = { clients: Number(size[1]), rooms: Number(size[3]), signals_per_client: Number(size[5]) };
  for (const [mode, flags] of Object.entries(modes)) {
    const samples = [];
    for (let i = 0; i < runs; i++) {
      log(`  signal-load ${[...size, ...flags].join(' ')} (run ${i + 1})`);
      const { stdout } = await run(load, [...size, ...flags, '--server', server], { timeoutS: 600 });
      const s = JSON.parse(stdout.trim().split('\n').pop());
      if (s.joined !== s.clients || s.signals_delivered !== s.signals_sent) {
        throw new Error(`signal-load ${mode}: ${s.joined}/${s.clients} joined, ${s.signals_delivered}/${s.signals_sent} signals delivered`);
      }
      samples.push(s);
    }
    const pick = (f) => stats(samples.map(f));
    result[mode] = {
      instances: samples[0].instances,
      join_ms_p50: pick((s) => s.join_ms.p50),
      join_ms_p99: pick((s) => s.join_ms.p99),
      join_wall_s: pick((s) => s.join_wall_s),
      relay_ms_p50: pick((s) => s.relay_ms.p50),
      relay_ms_p99: pick((s) => s.relay_ms.p99),
      signal_rate: samples[0].signal_rate,
      server_rss_bytes_per_client: pick((s) => s.server_rss_bytes_per_client),
      redis_rss_bytes_per_client: pick((s) => s.redis_rss_bytes_per_client),
      cpu_s_per_1000_signals: pick((s) => s.cpu_s_per_1000_signals),
    };
    log(`  ${mode}: join p50 ${result[mode].join_ms_p50.median} ms, relay p50 ${result[mode].relay_ms_p50.median} ms, ${result[mode].server_rss_bytes_per_client.median} B/client, ${result[mode].cpu_s_per_1000_signals.median} CPU s per 1,000 signals`);
  }
  return result;
}

// 6. Scale (crates/ppspp-cli/examples/seeder-load.rs; ppspp-sim swarm): how far one native
// seeder and the engine go.
//   webrtc  page-like peers (each downloads at most twice the bench video's bitrate, as a
//           page filling its read-ahead) offering to the seeder alone, at several counts:
//           each peer's rate (content ÷ first to last chunk), the seeder's CPU per MB and its
//           resident memory per connected peer;
//   udp     1,000 fetchers at once, as `ppspp fetch` runs (peer exchange on), and 1,000
//           fetching from the seeder alone;
//   sim     the simulator's swarm with 1,000 leechers (RTT 0): run time, peak RSS, upload.
// Smoke: the test build's binaries and a handful of peers.
const VIDEO_BYTES_PER_S = 19.8e6 / 60; // the swarm part's video: 19.8 MB, 60 s
async function scale(target) {
  const profile = smoke ? 'debug' : 'release';
  if (smoke) {
    log('scale: the test build\'s examples/seeder-load, ppspp, ppspp-signal and ppspp-sim');
    await testBuild();
  } else {
    const argv = ['build', '--release', '--locked', '-p', 'ppspp-cli', '-p', 'ppspp-signal', '-p', 'ppspp-linkem', '--features', 'ppspp-cli/webrtc-rs', '--bins', '--example', 'seeder-load'];
    log(`scale: cargo ${argv.join(' ')}`);
    await run('cargo', argv, { timeoutS: 3600 });
    log('scale: cargo build --release --locked -p ppspp-sim');
    await run('cargo', ['build', '--release', '--locked', '-p', 'ppspp-sim'], { timeoutS: 3600 });
  }
  const bin = (name) => join(target, profile, name);
  const load = async (flags) => {
    const argv = [...flags, '--ppspp', bin('ppspp'), '--signal-bin', bin('ppspp-signal')];
    log(`  seeder-load ${flags.join(' ')}`);
    const { stdout } = await run(bin(join('examples', 'seeder-load')), argv, { timeoutS: 900 });
    return JSON.parse(stdout.trim().split('\n').pop());
  };
  const runs = smoke ? 1 : 3;
  const rate = Math.round(2 * VIDEO_BYTES_PER_S);
  const result = { video_bytes_per_s: VIDEO_BYTES_PER_S, peer_rate_limit_bytes_per_s: rate, runs };
  // WebRTC: 8 KiB chunks (the browser's), 4 MiB each (about 13 s of the video).
  const counts = smoke ? [3] : [50, 100, 150, 200];
  const content = smoke ? 256 * 1024 : 4 << 20;
  result.webrtc = { content_bytes: content, by_peers: {} };
  for (const n of counts) {
    const samples = [];
    for (let i = 0; i < runs; i++) {
      samples.push(await load(['--transport', 'webrtc', '--peers', `${n}`, '--content-bytes', `${content}`, '--chunk-size', '8192', '--rate', `${rate}`, '--arrival-ms', '20', '--max-peers', '1000']));
    }
    const pick = (f) => stats(samples.map(f));
    const mb = (b) => round(b / 1e6);
    result.webrtc.by_peers[n] = {
      peer_mbps_min: pick((s) => mb(s.peer_rate_bytes_per_s_min)),
      peer_mbps_p10: pick((s) => mb(s.peer_rate_bytes_per_s_p10)),
      peer_mbps_p50: pick((s) => mb(s.peer_rate_bytes_per_s_p50)),
      first_chunk_ms_p50: pick((s) => s.first_chunk_ms_p50),
      first_chunk_ms_p99: pick((s) => s.first_chunk_ms_p99),
      seeder_mbps: pick((s) => mb(s.seeder_upload_bytes_per_s)),
      seeder_cpu_s_per_mb: pick((s) => s.seeder_cpu_s_per_mb),
      seeder_rss_bytes_per_peer: pick((s) => s.seeder_rss_bytes_per_peer),
      load_cpu_s: pick((s) => s.load_cpu_s),
      wall_s: pick((s) => s.wall_s),
    };
    const r = result.webrtc.by_peers[n];
    log(`  webrtc ${n} peers: per peer p10 ${r.peer_mbps_p10.median} / p50 ${r.peer_mbps_p50.median} MB/s (the video: ${mb(VIDEO_BYTES_PER_S)}), seeder ${r.seeder_cpu_s_per_mb.median} CPU s/MB, ${r.seeder_rss_bytes_per_peer.median} B per peer`);
  }
  // The most peers each served at least the video's bitrate (the 10th percentile peer).
  result.webrtc.peers_at_bitrate = Math.max(0, ...counts.filter((n) => result.webrtc.by_peers[n].peer_mbps_p10.median >= VIDEO_BYTES_PER_S / 1e6));
  // UDP: 1 KiB chunks (`ppspp seed`'s default), 256 KiB, everyone at once.
  const fetchers = smoke ? 20 : 1000;
  result.udp = { fetchers, content_bytes: 256 * 1024 };
  for (const [mode, flags] of [['pex', ['--pex']], ['seeder_only', []]]) {
    const samples = [];
    for (let i = 0; i < runs; i++) {
      samples.push(await load(['--transport', 'udp', '--peers', `${fetchers}`, '--content-bytes', `${256 * 1024}`, '--chunk-size', '1024', '--arrival-ms', '0', ...flags]));
    }
    const pick = (f) => stats(samples.map(f));
    result.udp[mode] = {
      complete: pick((s) => s.complete),
      wall_s: pick((s) => s.wall_s),
      first_chunk_ms_p50: pick((s) => s.first_chunk_ms_p50),
      seeder_upload_ratio: pick((s) => s.seeder_upload_ratio),
      seeder_cpu_s: pick((s) => s.seeder_cpu_s),
      load_cpu_s: pick((s) => s.load_cpu_s),
    };
    log(`  udp ${fetchers} fetchers (${mode}): all complete in ${result.udp[mode].wall_s.median} s, seeder upload ${result.udp[mode].seeder_upload_ratio.median}× content`);
  }
  // The simulator (deterministic: one run), timed with /usr/bin/time for its peak RSS.
  const leechers = smoke ? 20 : 1000;
  const dir = join(target, 'sim', 'swarm-scale');
  log(`  ppspp-sim swarm --leechers ${leechers} --cases rtt0`);
  const { stdout, stderr } = await run('/usr/bin/time', ['-v', bin('ppspp-sim'), 'swarm', '--leechers', `${leechers}`, '--cases', 'rtt0', '--out', dir], { timeoutS: 3600, quiet: true });
  const s = JSON.parse(stdout.trim().split('\n').pop());
  const kb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1]);
  result.sim = {
    leechers,
    complete: s.complete,
    wall_s: s.wall_s,
    rss_bytes: kb * 1024,
    seeder_upload_ratio: s.cases.rtt0.seeder_upload_ratio,
    mean_completion_s: s.cases.rtt0.mean_s,
    max_completion_s: s.cases.rtt0.max_s,
  };
  if (s.complete !== leechers) throw new Error(`ppspp-sim swarm: ${s.complete} of ${leechers} leechers completed`);
  log(`  sim: ${leechers} leechers complete in ${s.wall_s} s of run time, ${round(kb / 1024)} MiB`);
  return result;
}

const started = new Date();
const result = {
  schema: 1,
  mode: smoke ? 'smoke' : 'full',
  started_at: started.toISOString(),
  units: { mbps: 'MB/s (10^6 bytes per second)', mbit_s: 'Mbit/s (10^6 bits per second)', rss_kb: 'KiB (peak RSS from /usr/bin/time -v)', cpu_s: 'user + system CPU seconds' },
  machine: await machine(),
};
const errors = {};
let target;
try {
  target = await targetDir();
} catch (e) {
  target = join(root, 'target');
  log(`cargo metadata failed (${e.message}); assuming ${target}`);
}
const durations = {};
const steps = { udp: () => udp(), binmap: () => binmap(target), verify: () => verify(), sim: () => sim(target), signal: () => signal(target), scale: () => scale(target) };
const keys = { udp: 'udp', binmap: 'binmap', verify: 'verify_native', sim: 'sim', signal: 'signal', scale: 'scale' };
for (const part of PARTS) {
  if (!only.includes(part)) continue;
  const t = Date.now();
  try {
    result[keys[part]] = await steps[part]();
  } catch (e) {
    errors[keys[part]] = e.message;
    log(`${part} failed: ${e.message}`);
  }
  durations[keys[part]] = Math.round((Date.now() - t) / 100) / 10;
}
result.finished_at = new Date().toISOString();
result.duration_s = { total: Math.round((Date.now() - started.getTime()) / 100) / 10, ...durations };
if (Object.keys(errors).length) result.errors = errors;
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
log(`wrote ${out} in ${result.duration_s.total} s${result.errors ? ` (failed: ${Object.keys(errors).join(', ')})` : ''}`);
process.exit(result.errors ? 1 : 0);
