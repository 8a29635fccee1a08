/**
 * What a failed test leaves for whoever reads only the end of CI's log: each page's own
 * complaints (console errors, uncaught exceptions, failed requests) and its state at the
 * end, with the servers' last lines, appended to target/e2e/failures.log, which
 * `make test-e2e` prints when the suite fails; each server's whole output goes to
 * target/e2e/logs/.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type Page, type TestInfo, test } from '@playwright/test';
import { ROOT, type Proc } from './swarm.js';

const LOG = join(ROOT, 'target', 'e2e', 'failures.log');
/** Per page, at most this many complaints are kept (the first ones say the most). */
const MAX_NOTES = 20;
/** Per page, the last this many peer-connection state changes are kept. */
const MAX_TRACES = 30;
const TRACE = '[pc] ';

/** Records what `page` complains of from now on, under `label`. */
export class PageWatch {
  private readonly notes: string[] = [];
  private readonly traces: string[] = [];
  private readonly started = Date.now();

  /** Starts watching `page`; call before its first navigation, so its peer connections are traced. */
  static async start(page: Page, label: string): Promise<PageWatch> {
    // Each peer connection's ICE and connection states, with its ICE servers' URLs.
    await page.addInitScript((prefix: string) => {
      const Native = window.RTCPeerConnection;
      let n = 0;
      window.RTCPeerConnection = new Proxy(Native, {
        construct(target, args: [RTCConfiguration?]) {
          const pc = Reflect.construct(target, args) as RTCPeerConnection;
          const id = ++n;
          const t0 = performance.now();
          const log = (what: string) => console.debug(`${prefix}#${id} ${what} @${Math.round(performance.now() - t0)} ms`);
          log(`new ${JSON.stringify(args[0]?.iceServers?.map((s) => s.urls) ?? [])}`);
          pc.addEventListener('iceconnectionstatechange', () => log(`ice ${pc.iceConnectionState}`));
          pc.addEventListener('connectionstatechange', () => log(`conn ${pc.connectionState}`));
          pc.addEventListener('icecandidateerror', (ev) => {
            const e = ev as RTCPeerConnectionIceErrorEvent;
            log(`candidate error ${e.errorCode} ${e.url} from ${e.address ?? '?'}:${e.port ?? '?'}`);
          });
          pc.addEventListener('icecandidate', (e) => log(e.candidate ? `candidate ${e.candidate.type} ${e.candidate.address}:${e.candidate.port}` : 'candidates end'));
          pc.addEventListener('icegatheringstatechange', () => log(`gathering ${pc.iceGatheringState}`));
          return pc;
        },
      });
    }, TRACE);
    return new PageWatch(page, label);
  }

  private constructor(
    readonly page: Page,
    readonly label: string,
  ) {
    page.on('console', (m) => {
      if (m.type() === 'debug' && m.text().startsWith(TRACE)) {
        this.traces.push(`+${((Date.now() - this.started) / 1000).toFixed(1)} s ${m.text().slice(TRACE.length)}`);
        if (this.traces.length > MAX_TRACES) this.traces.shift();
        return;
      }
      // The favicon nobody serves is the one expected complaint.
      const favicon = m.location().url.endsWith('/favicon.ico');
      if ((m.type() === 'error' || m.type() === 'warning') && !favicon) this.note(`console.${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => this.note(`uncaught: ${e.message}`));
    page.on('requestfailed', (r) => this.note(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
    page.on('response', (r) => {
      if (r.status() >= 400 && !r.url().endsWith('/favicon.ico')) this.note(`HTTP ${r.status()}: ${r.url()}`);
    });
    page.on('crash', () => this.note('renderer crashed'));
  }

  private note(text: string): void {
    if (this.notes.length < MAX_NOTES) this.notes.push(`+${((Date.now() - this.started) / 1000).toFixed(1)} s ${text.slice(0, 300)}`);
  }

  /** The page's complaints and its player's state now, a few lines. */
  async describe(): Promise<string> {
    const state = await this.page
      .evaluate(() => {
        const t = (window as unknown as { __t?: Record<string, unknown> & { player: { stats(): Record<string, unknown> } | null } }).__t;
        const v = document.querySelector('video');
        const where = `${location.href.slice(0, 120)} readyState=${document.readyState}`;
        if (!t) return `${where}; no test state (the page's script did not run): ${document.body?.innerText.slice(0, 200) ?? ''}`;
        const stats = t.player?.stats();
        return JSON.stringify({
          where,
          error: t.error,
          errors: t.errors,
          left: t.left,
          peersJoined: t.peersJoined,
          currentTime: v?.currentTime,
          buffered: v && Array.from({ length: v.buffered.length }, (_, i) => [v.buffered.start(i), v.buffered.end(i)]),
          videoReadyState: v?.readyState,
          videoError: v?.error?.message ?? null,
          // A live page: its first edges, and where it joined ([ms, chunk, edge, chunks/s or null: guessed]).
          firstEdges: Array.isArray(t.edgeLog) && t.edgeLog.length > 0 ? t.edgeLog : undefined,
          joins: Array.isArray(t.liveJoins) && t.liveJoins.length > 0 ? t.liveJoins : undefined,
          stats: stats && {
            connections: stats.connections,
            chunksHave: stats.chunksHave,
            chunkCount: stats.chunkCount,
            bytesFromSeeders: stats.bytesFromSeeders,
            bytesFromPeers: stats.bytesFromPeers,
            bytesFromHttp: stats.bytesFromHttp,
            chunksEvicted: stats.chunksEvicted,
          },
        });
      })
      .catch((e: Error) => `state unreadable: ${e.message.split('\n')[0]}`);
    return [`${this.label}: ${state}`, ...this.notes.map((n) => `  ${n}`), ...this.traces.map((t) => `  pc ${t}`)].join('\n');
  }
}

/**
 * When `info`'s test failed (or always, with E2E_DIAGNOSE=1): appends `notes` (the
 * harness's own lines, such as the link emulators'), the pages' descriptions and the last
 * lines of each server (stdout and stderr) to the failures log, and prints them.
 */
export async function reportIfFailed(info: TestInfo, watches: PageWatch[], procs: Record<string, Proc>, notes: string[] = []): Promise<void> {
  if (info.status === info.expectedStatus && !process.env.E2E_DIAGNOSE) return;
  const parts = [`=== ${info.titlePath.join(' › ')} (${info.status})`, ...notes];
  for (const w of watches) parts.push(await w.describe());
  const logs = join(dirname(LOG), 'logs');
  mkdirSync(logs, { recursive: true });
  for (const [name, p] of Object.entries(procs)) {
    // The whole of each server's output, for a closer look where the run was.
    writeFileSync(join(logs, `${info.testId}-${name}.log`), `${p.lines.join('\n')}\n--- stderr (tail) ---\n${p.stderrTail()}`);
    const tail = [...p.lines.slice(-2), ...p.stderrTail().split('\n').slice(-8)].filter((l) => l.trim() !== '');
    parts.push(`${name}:`, ...tail.map((l) => `  ${l.slice(0, 300)}`));
  }
  const text = parts.join('\n') + '\n';
  mkdirSync(dirname(LOG), { recursive: true });
  appendFileSync(LOG, text);
  console.log(text);
}

/** The spec file's reports: {@link reportPagesNow} writes them before pages close. */
const OPEN_REPORTS = new Set<FailureReport>();

/**
 * Reports the running test's pages now, while they are open: a hook that closes the
 * browser contexts calls this first (afterEach hooks run in the order they were declared,
 * and a page closed says nothing of where it stopped).
 */
export async function reportPagesNow(info: TestInfo): Promise<void> {
  for (const r of OPEN_REPORTS) await r.report(info);
}

/**
 * The pages and servers of a spec file's running test, reported ({@link reportIfFailed})
 * after it; create one at the top of the file.
 */
export class FailureReport {
  private watches: PageWatch[] = [];
  private procs: Record<string, Proc> = {};

  constructor() {
    OPEN_REPORTS.add(this);
    test.afterEach(async ({}, info) => this.report(info));
  }

  /** Reports the running test's pages and servers if it failed, once; then forgets them. */
  async report(info: TestInfo): Promise<void> {
    const [watches, procs] = [this.watches, this.procs];
    if (watches.length === 0 && Object.keys(procs).length === 0) return;
    this.watches = [];
    this.procs = {};
    await reportIfFailed(info, watches, procs);
  }

  /** Watches a page under `label` (numbered): pass to `openPages`, which calls it before the page loads. */
  watch(label: string): (page: Page) => Promise<void> {
    return async (page) => {
      this.watches.push(await PageWatch.start(page, `${label} ${this.watches.length}`));
    };
  }

  /** Reports `proc`'s last lines under `name`. */
  keep(name: string, proc: Proc): void {
    this.procs[name] = proc;
  }
}
