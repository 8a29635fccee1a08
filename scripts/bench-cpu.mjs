// Where the CPU went, for `make bench` (scripts/bench-browser.mjs): CPU profiles of a page's
// main thread and of its Workers (CDP) summed into the shares BENCHMARKS.md discusses, and
// the CPU of every thread of the browser and of our processes from /proc, summed by
// process type and thread name.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** Starts sampling `p`'s main thread every 200 µs (CDP Profiler). */
export async function profileStart(p) {
  const cdp = await p.context().newCDPSession(p);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
  await cdp.send('Profiler.start');
  return cdp;
}

/** Stops the profile and returns the self time (ms) of each function, largest first. */
export async function profileStop(cdp) {
  const { profile } = await cdp.send('Profiler.stop');
  await cdp.detach();
  return selfTimes([profile]);
}

/** How long a Worker may take to answer one DevTools command while profiled. */
const WORKER_CALL_MS = 10_000;

/**
 * Starts sampling every 200 µs in each dedicated Worker of `p`: those running now and
 * those it starts while profiled, each held at its start until its profile runs. The
 * workers' DevTools sessions go through the page's (`Target.sendMessageToTarget`), as
 * Playwright opens CDP sessions on pages only.
 */
export async function workerProfileStart(p) {
  const cdp = await p.context().newCDPSession(p);
  const sessions = new Map();
  const waiting = new Map();
  let nextId = 1;
  const call = (sessionId, method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      const key = `${sessionId}/${id}`;
      const timer = setTimeout(() => {
        waiting.delete(key);
        reject(new Error(`the Worker did not answer ${method} within ${WORKER_CALL_MS / 1000} s`));
      }, WORKER_CALL_MS);
      waiting.set(key, { sessionId, resolve, reject, timer });
      cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params }) }).catch(reject);
    });
  const settle = (key, f) => {
    const w = waiting.get(key);
    if (!w) return;
    waiting.delete(key);
    clearTimeout(w.timer);
    f(w);
  };
  cdp.on('Target.receivedMessageFromTarget', ({ sessionId, message }) => {
    const m = JSON.parse(message);
    if (m.id === undefined) return;
    settle(`${sessionId}/${m.id}`, (w) => (m.error ? w.reject(new Error(m.error.message)) : w.resolve(m.result)));
  });
  cdp.on('Target.detachedFromTarget', ({ sessionId }) => {
    const s = sessions.get(sessionId);
    if (s) s.gone = true;
    for (const [key, w] of waiting) if (w.sessionId === sessionId) settle(key, (x) => x.reject(new Error('the Worker ended')));
  });
  cdp.on('Target.attachedToTarget', ({ sessionId, targetInfo, waitingForDebugger }) => {
    if (targetInfo.type !== 'worker') return;
    const s = { url: targetInfo.url, gone: false };
    s.started = (async () => {
      try {
        await call(sessionId, 'Profiler.enable');
        await call(sessionId, 'Profiler.setSamplingInterval', { interval: 200 });
        await call(sessionId, 'Profiler.start');
      } finally {
        if (waitingForDebugger) await call(sessionId, 'Runtime.runIfWaitingForDebugger').catch(() => {});
      }
    })();
    s.started.catch(() => {});
    sessions.set(sessionId, s);
  });
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: false });
  return { cdp, sessions, call };
}

/**
 * Stops the Workers' profiles of {@link workerProfileStart}; returns the self time (ms) of
 * each function summed over them, largest first, and how many Workers were profiled
 * (those that ended before the stop are lost: keep them running until then).
 */
export async function workerProfileStop({ cdp, sessions, call }) {
  const profiles = [];
  for (const [sessionId, s] of sessions) {
    if (s.gone) continue;
    try {
      await s.started;
      profiles.push((await call(sessionId, 'Profiler.stop')).profile);
    } catch {
      // Ended while profiled: nothing to add.
    }
  }
  await cdp.send('Target.setAutoAttach', { autoAttach: false, waitForDebuggerOnStart: false, flatten: false }).catch(() => {});
  await cdp.detach();
  return { functions: selfTimes(profiles), workers: profiles.length };
}

/** The self time (ms) of each function over `profiles`, largest first. */
function selfTimes(profiles) {
  const self = new Map();
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    for (let i = 0; i < profile.samples.length; i++) {
      const f = byId.get(profile.samples[i]);
      const key = JSON.stringify([f.functionName, f.url.split('/').pop(), f.lineNumber]);
      self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
    }
  }
  return [...self.entries()]
    .map(([key, ms]) => {
      const [name, file, line] = JSON.parse(key);
      return { name, file, line, ms };
    })
    .sort((a, b) => b.ms - a.ms);
}

/**
 * The share of the sampled time in each part of a page's thread (its main thread or a
 * Worker): idle; the browser's own work (`(program)`: event dispatch, IPC); garbage
 * collection; the Wasm engine's hashing, its allocator and the rest of it;
 * `RTCDataChannel.send`; the package's JavaScript and the Wasm bindings; other browser APIs.
 */
export function profileShares(functions) {
  const shares = { idle: 0, browser: 0, gc: 0, wasm_hash: 0, wasm_alloc: 0, wasm_engine: 0, channel_send: 0, js: 0, other: 0 };
  let total = 0;
  for (const { name, file, ms } of functions) {
    total += ms;
    shares[partOf(name, file)] += ms;
  }
  for (const k of Object.keys(shares)) shares[k] = total > 0 ? shares[k] / total : 0;
  return { sampled_ms: total, ...shares };
}

function partOf(name, file) {
  if (name === '(idle)') return 'idle';
  if (name === '(program)') return 'browser';
  if (name === '(garbage collector)') return 'gc';
  if (file.endsWith('.wasm')) {
    if (/sha1::|sha2::|sha256|sha1_|compress/i.test(name)) return 'wasm_hash';
    if (/dlmalloc|__rdl_|__rust_(alloc|dealloc|realloc)|\bmalloc\b|\bfree\b/.test(name)) return 'wasm_alloc';
    if (/^(js-to-wasm|wasm-to-js)/.test(name)) return 'js';
    return 'wasm_engine';
  }
  // In a Worker the profile puts `RTCDataChannel.send` in the package's function that calls it.
  if ((name === 'send' && file === '') || name === 'transmit') return 'channel_send';
  if (/\.m?js$/.test(file) || /^(js-to-wasm|wasm-to-js)/.test(name)) return 'js';
  return 'other';
}

/** CPU seconds of every thread of `rootPid`'s descendants, keyed `pid/tid`, with labels. */
export function threadCpuSnapshot(rootPid) {
  const parent = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const stat = readStat(`/proc/${d}/stat`);
    if (stat) parent.set(Number(d), stat.ppid);
  }
  const mine = (pid) => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = parent.get(p) ?? 0, hops++) {
      if (p === rootPid) return true;
    }
    return false;
  };
  const threads = new Map();
  for (const pid of parent.keys()) {
    if (pid === rootPid || !mine(pid)) continue;
    const process = processLabel(pid);
    if (!process) continue;
    let tasks;
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      const s = readStat(`/proc/${pid}/task/${tid}/stat`);
      if (s) threads.set(`${pid}/${tid}`, { process, thread: tid === String(pid) ? 'main thread' : s.comm, cpu_s: s.cpu_s });
    }
  }
  return threads;
}

/**
 * The CPU each (process type, thread name) spent between two snapshots, largest first
 * (threads that ended between them are not counted).
 */
export function threadCpuBetween(before, after) {
  const groups = new Map();
  for (const [key, t] of after) {
    const spent = t.cpu_s - (before.get(key)?.cpu_s ?? 0);
    const g = `${t.process}\u0000${t.thread}`;
    groups.set(g, (groups.get(g) ?? 0) + spent);
  }
  return [...groups.entries()]
    .map(([g, cpu_s]) => {
      const [process, thread] = g.split('\u0000');
      return { process, thread, cpu_s };
    })
    .filter((g) => g.cpu_s > 0)
    .sort((a, b) => b.cpu_s - a.cpu_s);
}

/**
 * The browser's CPU per MB delivered over a set of transfers (every thread of every page
 * and of the browser, /proc, from just before each transfer to its end): in all, by thread
 * (the largest), and how many cores were busy while they ran.
 */
export class CpuPerMb {
  groups = new Map();
  seconds = 0;
  bytes = 0;

  /** For the threads of `rootPid`'s descendants (the browser's, from the bench's pid). */
  constructor(rootPid) {
    this.rootPid = rootPid;
  }

  /** One transfer: CPU since `before`, `seconds` long, `bytes` delivered. */
  add(before, seconds, bytes) {
    for (const g of threadCpuBetween(before, threadCpuSnapshot(this.rootPid))) {
      const key = `${g.process}\u0000${g.thread}`;
      this.groups.set(key, (this.groups.get(key) ?? 0) + g.cpu_s);
    }
    this.seconds += seconds;
    this.bytes += bytes;
  }

  result() {
    const mb = this.bytes / 1e6;
    const threads = [...this.groups.entries()].sort((a, b) => b[1] - a[1]);
    const total = threads.reduce((a, [, cpu]) => a + cpu, 0);
    return {
      cpu_s_per_mb: total / mb,
      cores_busy: this.seconds > 0 ? total / this.seconds : NaN,
      threads: threads.slice(0, 8).map(([key, cpu]) => {
        const [process, thread] = key.split('\u0000');
        return { process, thread, cpu_s_per_mb: cpu / mb };
      }),
    };
  }
}

function readStat(path) {
  let stat;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  const close = stat.lastIndexOf(')');
  const comm = stat.slice(stat.indexOf('(') + 1, close);
  // Fields after the command name: state, ppid, …; utime and stime are the 12th and 13th.
  const fields = stat.slice(close + 2).split(' ');
  return { comm, ppid: Number(fields[1]), cpu_s: (Number(fields[11]) + Number(fields[12])) / TICKS };
}

/** Chromium's process types by their command line; our programs by name. */
function processLabel(pid) {
  let exe;
  let cmd;
  try {
    exe = readlinkSync(`/proc/${pid}/exe`).split('/').pop();
    // Chromium's children rewrite their command line as one string (the process title).
    cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\u0000').join(' ');
  } catch {
    return null;
  }
  if (/^(chromium|chrome|headless_shell)/.test(exe)) {
    const type = /--type=(\S+)/.exec(cmd)?.[1];
    if (!type) return 'browser process';
    if (type === 'utility') {
      const sub = /--utility-sub-type=(\S+)/.exec(cmd)?.[1] ?? '?';
      return sub.includes('NetworkService') ? 'network service' : `utility (${sub.split('.').pop()})`;
    }
    return type === 'gpu-process' ? 'GPU process' : type;
  }
  if (exe === 'node') {
    const script = /(\S+\.m?js)\b/.exec(cmd)?.[1];
    return script ? `node ${script.split('/').pop()}` : 'node';
  }
  return exe || null;
}
