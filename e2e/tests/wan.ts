/**
 * The emulated internet for browser tests (scripts/wan.sh): namespaces for a public
 * segment and three NATed homes, servers started inside the public one, and Chromium
 * launched inside a home through a wrapper that enters its namespace first.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from '@playwright/test';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../playwright.config.js';
import { BIN, type Proc, ROOT, run } from './swarm.js';

const SCRIPT = join(ROOT, 'scripts', 'wan.sh');
/** Where scripts/wan.sh keeps its link emulators' pids and logs. */
const RUN_DIR = '/run/ppspp-wan';
/** Where the public services listen. */
export const PUBLIC_IP = '198.51.100.10';

export interface Wan {
  name: string;
  /** `cmd args…` inside node `node` (pub, home1, home2, home3). */
  exec(node: string, cmd: string, args: string[]): Proc;
  /** Chromium inside home `n` (with `args` added to the tests' flags). */
  browser(home: number, args?: string[]): Promise<Browser>;
  /** Each link emulator's priority, how many packets it released late, and its errors. */
  linkLines(): string[];
  /** Closes its browsers, then removes it with whatever still runs inside. */
  down(): Promise<void>;
}

/**
 * Builds the emulated internet, or returns why it cannot be built here (not root, no
 * namespaces): the caller skips with that reason.
 */
export function wanUp(tag: string, link: string[] = []): Wan | string {
  const name = `pe${tag}${process.pid % 10000}`;
  const up = spawnSync(SCRIPT, ['up', name, ...link], {
    encoding: 'utf8',
    env: { ...process.env, PPSPP_LINKEM: process.env.PPSPP_LINKEM ?? join(ROOT, 'target', 'release', 'ppspp-linkem') },
  });
  if (up.status === 3) return up.stderr.trim();
  if (up.status !== 0) throw new Error(`scripts/wan.sh up failed:\n${up.stderr}`);
  const dir = join(ROOT, 'target', 'e2e', 'wan');
  mkdirSync(dir, { recursive: true });
  const browsers: Browser[] = [];
  return {
    name,
    exec: (node, cmd, args) => run('ip', ['netns', 'exec', `${name}-${node}`, cmd, ...args]),
    async browser(home, args = []) {
      const wrapper = join(dir, `chromium-${name}-home${home}.sh`);
      writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${name}-home${home} ${CHROMIUM_PATH} "$@"\n`);
      chmodSync(wrapper, 0o755);
      const b = await chromium.launch({ executablePath: wrapper, headless: true, args: [...CHROMIUM_ARGS, ...args] });
      browsers.push(b);
      return b;
    },
    linkLines() {
      return [1, 2, 3].flatMap((r) => {
        const log = join(RUN_DIR, `${name}-r${r}.log`);
        if (!existsSync(log)) return [];
        const lines = readFileSync(log, 'utf8').split('\n');
        // The priority line, the last total of late releases, and any error.
        const late = [...lines].reverse().find((l) => l.startsWith('linkem: ') && l.includes(' late '))?.slice('linkem: '.length) ?? 'nothing late';
        const errors = lines.filter((l) => l.startsWith('ppspp-linkem: '));
        return [`r${r}: ${lines[0]}; ${late}`, ...errors];
      });
    },
    async down() {
      for (const b of browsers.splice(0)) await b.close().catch(() => {});
      spawnSync(SCRIPT, ['down', name]);
    },
  };
}

/**
 * Waits until coturn in the public segment answers a STUN binding request from home 1
 * (through its NAT): its log line comes before its UDP listener is sure to be up, and a
 * page that finds no STUN server answering says so with an error.
 */
export async function waitStunAnswers(wan: Wan): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const probe = spawnSync('ip', ['netns', 'exec', `${wan.name}-home1`, 'timeout', '2', 'turnutils_stunclient', '-p', '3478', PUBLIC_IP]);
    if (probe.status === 0) return;
    if (Date.now() > deadline) throw new Error(`coturn at ${PUBLIC_IP}:3478 answered no STUN request within 15 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** STUN on coturn in the public segment (port 3478). */
export async function startStun(wan: Wan): Promise<Proc> {
  const dir = join(ROOT, 'target', 'e2e', 'wan');
  // Its own pid file and database, so it shares nothing with a system coturn.
  const p = wan.exec('pub', 'turnserver', [
    '-n', '--stun-only', '--no-cli', '--no-tls', '--no-dtls', `--listening-ip=${PUBLIC_IP}`,
    '--listening-port=3478', '--log-file=stdout', '--simple-log',
    `--pidfile=${join(dir, `turn-${wan.name}.pid`)}`, `--db=${join(dir, `turn-${wan.name}.sqlite`)}`,
  ]);
  await p.waitLine((l) => l.includes('Total General servers'), 15_000);
  await waitStunAnswers(wan);
  return p;
}

/** The TURN shared secret of the tests' coturn and signaling server (TURN REST scheme). */
export const TURN_SECRET = 'ppspp-e2e-turn-secret';

/**
 * STUN and TURN on coturn in the public segment (port 3478), with time-limited
 * credentials derived from `TURN_SECRET` (`use-auth-secret`), relaying from the public
 * address.
 */
export async function startTurn(wan: Wan): Promise<Proc> {
  const dir = join(ROOT, 'target', 'e2e', 'wan');
  const p = wan.exec('pub', 'turnserver', [
    '-n', '--no-cli', '--no-tls', '--no-dtls', `--listening-ip=${PUBLIC_IP}`, `--relay-ip=${PUBLIC_IP}`,
    '--listening-port=3478', '--min-port=49152', '--max-port=49999', '--fingerprint',
    '--use-auth-secret', `--static-auth-secret=${TURN_SECRET}`, '--realm=ppspp.test',
    '--log-file=stdout', '--simple-log', '--verbose',
    `--pidfile=${join(dir, `turn-${wan.name}.pid`)}`, `--db=${join(dir, `turn-${wan.name}.sqlite`)}`,
  ]);
  await p.waitLine((l) => l.includes('Total General servers'), 15_000);
  await waitStunAnswers(wan);
  return p;
}

/**
 * The signaling server, the static web server and `ppspp seed FILE` in the public
 * segment (the seeder in home `seederHome` instead, if given; `seederArgs` added to its
 * command line). With `turn`, the signaling server hands every client STUN and TURN
 * servers with credentials valid for `ttl` seconds in its welcome.
 */
export async function startPublicSwarm(
  wan: Wan,
  file: string,
  uploadLimit?: number,
  turn?: { ttl?: number },
  seederHome?: number,
  seederArgs: string[] = [],
): Promise<{ signal: string; web: string; uri: string; seeder: Proc; named: Record<string, Proc> }> {
  const turnArgs = turn
    ? [`PPSPP_SIGNAL_TURN_SECRET=${TURN_SECRET}`, join(BIN, 'ppspp-signal'), '--stun-url', `stun:${PUBLIC_IP}:3478`,
      '--turn-url', `turn:${PUBLIC_IP}:3478?transport=udp`, '--turn-ttl', String(turn.ttl ?? 3600)]
    : [join(BIN, 'ppspp-signal')];
  const signal = wan.exec('pub', 'env', [...turnArgs, '--bind', `${PUBLIC_IP}:0`]);
  const signalUrl = (await signal.waitLine((l) => l.includes('listening on '))).replace(/^.*(ws:\/\/\S+).*$/, '$1');
  const web = wan.exec('pub', 'node', [join(ROOT, 'web', 'scripts', 'serve.mjs'), '--host', PUBLIC_IP, '--mount', `/e2e/=${join(ROOT, 'e2e', 'pages')}`]);
  const webUrl = (await web.waitLine((l) => l.startsWith('serving '))).slice('serving '.length).replace(/\/$/, '');
  const [node, bind] = seederHome === undefined ? ['pub', PUBLIC_IP] : [`home${seederHome}`, `192.168.${seederHome}.2`];
  const seeder = wan.exec(node, join(BIN, 'ppspp'), ['seed', file, '--signal', signalUrl, '--bind', `${bind}:0`,
    '--stats-json', '--chunk-size', '8192', '--hash', 'sha256', ...(uploadLimit ? ['--upload-limit', String(uploadLimit)] : []), ...seederArgs]);
  const uri = await seeder.waitLine((l) => l.startsWith('ppspp://'));
  return { signal: signalUrl, web: webUrl, uri, seeder, named: { signal, web, seeder } };
}
