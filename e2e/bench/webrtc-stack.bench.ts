/**
 * The native WebRTC stack, chosen on figures (docs/ARCHITECTURE.md, Native WebRTC): the native
 * seeder on str0m and on webrtc-rs (`ppspp seed --webrtc-stack`) sends one 50 MB file to one
 * Chromium page (peer.html, `Peer.fetch`) over three paths of the emulated internet
 * (scripts/wan.sh): direct (a home behind a port-preserving NAT, no added delay or loss),
 * relayed (the seeder offers only a TURN relay on coturn, the page behind the symmetric
 * NAT), and lossy (20 ms each way and 1 % loss each way on the home's path; 10 MB, as SCTP's
 * congestion control holds every stack near 0.3 MB/s there). Per fetch: the page's MB/s
 * (content ÷ the fetch's time, connection set-up included), the seeder's CPU seconds (from
 * /proc) and its upload ÷ content. The stacks alternate within each round, so both see the
 * same machine load; a round's two fetches share its internet and browser, each with a
 * seeder, servers and browser context of its own. Writes target/bench/webrtc-stack.json
 * (BENCH_SMOKE=1: 1 MB, a quarter of it on the lossy path, one round,
 * webrtc-stack-smoke.json).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../tests/swarm.js';
import { startTurn } from '../tests/wan.js';
import { WanRun, expect, test, trackRuns } from '../tests/wan-fixture.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROUNDS = SMOKE ? 1 : 5;
const STACKS = ['str0m', 'webrtc-rs'] as const;
const OUT = join(ROOT, 'target', 'bench', SMOKE ? 'webrtc-stack-smoke.json' : 'webrtc-stack.json');

interface Path {
  name: string;
  link: string[];
  home: number;
  relay: boolean;
  /** Content bytes. */
  size: number;
}
const MB = 1 << 20;
const PATHS: Path[] = [
  { name: 'direct', link: [], home: 1, relay: false, size: SMOKE ? MB : 50 * MB },
  { name: 'relay', link: [], home: 3, relay: true, size: SMOKE ? MB : 50 * MB },
  // The lossy path fetches at a fraction of a MB/s: the smoke takes a quarter MB.
  { name: 'loss', link: ['--delay', '20', '--loss', '1'], home: 1, relay: false, size: SMOKE ? MB / 4 : 10 * MB },
];

/** A file of `size` random bytes under target/bench. */
function content(size: number): string {
  const file = join(ROOT, 'target', 'bench', `stack-${size}.bin`);
  if (!existsSync(file) || statSync(file).size !== size) writeFileSync(file, randomBytes(size));
  return file;
}

/** CPU seconds (user + system) process `pid` has used so far. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime; USER_HZ is 100
}

interface Fetch {
  path: string;
  stack: string;
  round: number;
  mb_per_s: number;
  seeder_cpu_s_per_mb: number;
  seeder_upload_ratio: number;
}

/**
 * One fetch by a page from a seeder on `stack` over `path`, in `wanRun`'s internet (built
 * for the path, with its TURN server where the path is relayed). The seeder and its servers
 * are stopped after the fetch, so that the next stack's fetch has the internet to itself.
 */
async function fetchOnce(wanRun: WanRun, path: Path, stack: string, round: number): Promise<Fetch> {
  const seederArgs = ['--webrtc-stack', stack, ...(path.relay ? ['--relay-only'] : [])];
  const swarm = await wanRun.swarm(content(path.size), undefined, path.relay ? {} : undefined, undefined, seederArgs);
  try {
    const pid = swarm.seeder.child.pid!;
    expect(readFileSync(`/proc/${pid}/comm`, 'utf8').trim()).toBe('ppspp');
    const page = await wanRun.page(path.home, `${swarm.web}/e2e/peer.html`, { label: `${stack} ${path.name}` });
    await page.waitForFunction(() => (window as unknown as { peerApiReady?: boolean }).peerApiReady === true, null, { timeout: 15_000 });
    const cpuBefore = cpuSeconds(pid);
    const got = await page.evaluate((uri) => (window as unknown as {
      peerApi: { fetch(uri: string): Promise<{ length: number; fetchMs: number }> };
    }).peerApi.fetch(uri), swarm.uri);
    const cpu = cpuSeconds(pid) - cpuBefore;
    expect(got.length).toBe(path.size);
    // The path is the one meant: through the relay, or not.
    const pairs = await page.evaluate(() => (window as unknown as {
      peer: { selectedPairs(): Promise<{ localType: string; remoteType: string }[]> };
    }).peer.selectedPairs());
    expect(pairs.length, 'one selected pair').toBe(1);
    expect(pairs[0]!.remoteType === 'relay', `selected pair ${JSON.stringify(pairs)}`).toBe(path.relay);
    await new Promise((r) => setTimeout(r, 1200)); // one more seeder stats line
    const last = [...swarm.seeder.lines].reverse().find((l) => l.startsWith('{'));
    const uploaded = (JSON.parse(last!) as { bytes_uploaded: number }).bytes_uploaded;
    await page.context().close();
    const f = {
      path: path.name,
      stack,
      round,
      mb_per_s: path.size / 1e6 / (got.fetchMs / 1000),
      seeder_cpu_s_per_mb: cpu / (path.size / 1e6),
      seeder_upload_ratio: uploaded / path.size,
    };
    console.log(`${path.name} ${stack} round ${round + 1}: ${f.mb_per_s.toFixed(2)} MB/s, seeder ${cpu.toFixed(2)} CPU s (${f.seeder_cpu_s_per_mb.toFixed(3)}/MB), upload ${f.seeder_upload_ratio.toFixed(3)}× content`);
    return f;
  } finally {
    // Stopped twice at the run's end if a check failed: a stopped process stays stopped.
    for (const proc of Object.values(swarm.named)) await proc.stop();
  }
}

/** Both stacks' fetches over `path` in one internet (one per round: the round seeds its losses). */
async function fetchRound(path: Path, round: number): Promise<Fetch[]> {
  const wanRun = live(new WanRun());
  try {
    const wan = wanRun.up(`s${round}${path.name[0]}`, [...path.link, '--seed', String(round + 1)]);
    if (path.relay) wanRun.keep('turn', await startTurn(wan));
    const order = round % 2 ? [...STACKS].reverse() : STACKS;
    const fetches: Fetch[] = [];
    for (const stack of order) fetches.push(await fetchOnce(wanRun, path, stack, round));
    return fetches;
  } finally {
    await wanRun.end(test.info());
  }
}

// Internets still up when a test times out are removed after it (tests/wan-fixture.ts).
const live = trackRuns();

function stats(v: number[]): { min: number; median: number; max: number } {
  const s = [...v].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return { min: s[0]!, median, max: s[s.length - 1]! };
}

test('native WebRTC stacks: seeder → one page, direct, relayed and lossy paths', async () => {
  test.setTimeout(40 * 60_000);
  mkdirSync(join(ROOT, 'target', 'bench'), { recursive: true });
  const fetches: Fetch[] = [];
  for (const path of PATHS) {
    for (let round = 0; round < ROUNDS; round++) fetches.push(...await fetchRound(path, round));
  }
  const summary: Record<string, Record<string, Record<string, ReturnType<typeof stats>>>> = {};
  for (const path of PATHS) {
    summary[path.name] = {};
    for (const stack of STACKS) {
      const mine = fetches.filter((f) => f.path === path.name && f.stack === stack);
      summary[path.name]![stack] = {
        mb_per_s: stats(mine.map((f) => f.mb_per_s)),
        seeder_cpu_s_per_mb: stats(mine.map((f) => f.seeder_cpu_s_per_mb)),
        seeder_upload_ratio: stats(mine.map((f) => f.seeder_upload_ratio)),
      };
    }
  }
  const result = {
    smoke: SMOKE,
    date: new Date().toISOString(),
    rounds: ROUNDS,
    paths: PATHS.map((p) => ({ name: p.name, link: p.link, home: p.home, relay: p.relay, content_bytes: p.size })),
    stacks: summary,
    fetches,
  };
  writeFileSync(OUT, JSON.stringify(result, null, 2) + '\n');
  console.log(JSON.stringify(summary, null, 2));
  console.log(`wrote ${OUT}`);
});
