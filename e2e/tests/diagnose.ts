/**
 * What a failed test leaves for whoever reads only the end of CI's log: each page's own
 * complaints (console errors, uncaught exceptions, failed requests) and its state at the
 * end, with the servers' last lines, appended to target/e2e/failures.log, which
 * `make test-e2e` prints when the suite fails.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Page, TestInfo } from '@playwright/test';
import { ROOT, type Proc } from './swarm.js';

const LOG = join(ROOT, 'target', 'e2e', 'failures.log');
/** Per page, at most this many complaints are kept (the first ones say the most). */
const MAX_NOTES = 20;

/** Records what `page` complains of from now on, under `label`. */
export class PageWatch {
  private readonly notes: string[] = [];
  private readonly started = Date.now();

  constructor(
    readonly page: Page,
    readonly label: string,
  ) {
    page.on('console', (m) => {
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
          videoError: v?.error?.message ?? null,
          stats: stats && {
            connections: stats.connections,
            chunksHave: stats.chunksHave,
            chunkCount: stats.chunkCount,
            bytesFromSeeders: stats.bytesFromSeeders,
            bytesFromPeers: stats.bytesFromPeers,
          },
        });
      })
      .catch((e: Error) => `state unreadable: ${e.message.split('\n')[0]}`);
    return [`${this.label}: ${state}`, ...this.notes.map((n) => `  ${n}`)].join('\n');
  }
}

/**
 * When `info`'s test failed: appends the pages' descriptions and the last lines of each
 * server (stdout and stderr) to the failures log, and prints them.
 */
export async function reportIfFailed(info: TestInfo, watches: PageWatch[], procs: Record<string, Proc>): Promise<void> {
  if (info.status === info.expectedStatus) return;
  const parts = [`=== ${info.titlePath.join(' › ')} (${info.status})`];
  for (const w of watches) parts.push(await w.describe());
  for (const [name, p] of Object.entries(procs)) {
    const tail = [...p.lines.slice(-2), ...p.stderrTail().split('\n').slice(-8)].filter((l) => l.trim() !== '');
    parts.push(`${name}:`, ...tail.map((l) => `  ${l.slice(0, 300)}`));
  }
  const text = parts.join('\n') + '\n';
  mkdirSync(dirname(LOG), { recursive: true });
  appendFileSync(LOG, text);
  console.log(text);
}
