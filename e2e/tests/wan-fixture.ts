/**
 * The `run` fixture of tests in the emulated internet: it builds the internet, keeps the
 * servers and pages a test starts, and after the test reports what they saw if it failed
 * (tests/diagnose.ts), stops the servers and removes the internet.
 */
import { type Browser, type Page, test as base } from '@playwright/test';
import { PageWatch, reportIfFailed } from './diagnose.js';
import type { Proc } from './swarm.js';
import { type Wan, startPublicSwarm, wanUp } from './wan.js';

export class WanRun {
  private wanValue: Wan | null = null;
  private readonly procs: Proc[] = [];
  /** The servers by name, for the failure report and for tests that read their output. */
  readonly named: Record<string, Proc> = {};
  private readonly watches: PageWatch[] = [];
  private readonly browsers = new Map<string, Browser>();

  /** The internet, built with `link` options (scripts/wan.sh); skips the test where it cannot be. */
  up(tag: string, link: string[] = []): Wan {
    const up = wanUp(tag, link);
    base.skip(typeof up === 'string', `emulated internet unavailable: ${String(up)}`);
    this.wanValue = up as Wan;
    return this.wanValue;
  }

  get wan(): Wan {
    if (!this.wanValue) throw new Error('run.up() first');
    return this.wanValue;
  }

  /** Keeps `proc` under `name`: reported on failure, stopped after the test. */
  keep(name: string, proc: Proc): Proc {
    this.named[name] = proc;
    this.procs.push(proc);
    return proc;
  }

  /** {@link startPublicSwarm}, its servers kept. */
  async swarm(...args: Parameters<typeof startPublicSwarm> extends [Wan, ...infer R] ? R : never): ReturnType<typeof startPublicSwarm> {
    const swarm = await startPublicSwarm(this.wan, ...args);
    for (const [name, proc] of Object.entries(swarm.named)) this.keep(name, proc);
    return swarm;
  }

  /**
   * A page in home `home` at `url`, in its own browser context (one browser per home and
   * flag set), watched under `label`.
   */
  async page(home: number, url: string, options: { label?: string; browserArgs?: string[]; ignoreHttpsErrors?: boolean } = {}): Promise<Page> {
    const browser = await this.browser(home, options.browserArgs);
    const context = await browser.newContext({ permissions: ['camera', 'microphone'], ignoreHTTPSErrors: options.ignoreHttpsErrors ?? false });
    const page = await context.newPage();
    this.watches.push(await PageWatch.start(page, options.label ?? `page in home${home}`));
    await page.goto(url);
    return page;
  }

  /**
   * Home `home`'s browser for flag set `args`, launched on first use. A test whose pages
   * must not share the CPU with browser launches starts them all first.
   */
  async browser(home: number, args: string[] = []): Promise<Browser> {
    const key = `${home} ${args.join(' ')}`;
    let browser = this.browsers.get(key);
    if (!browser) {
      browser = await this.wan.browser(home, args);
      this.browsers.set(key, browser);
    }
    return browser;
  }

  private ended = false;

  /** After the test: the report if it failed, then everything stopped and removed. Once. */
  async end(info: Parameters<typeof reportIfFailed>[0]): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    await reportIfFailed(info, this.watches.splice(0), this.named, this.wanValue?.linkLines());
    for (const p of this.procs.splice(0).reverse()) await p.stop();
    await this.wanValue?.down();
    this.wanValue = null;
  }
}

/**
 * For tests that build several internets in turn (the benchmarks), each ended in its own
 * `finally`: a test that times out never gets there, so every run passed to the returned
 * function is also ended after each test (Playwright runs afterEach hooks after a timeout).
 */
export function trackRuns(): (run: WanRun) => WanRun {
  const running = new Set<WanRun>();
  base.afterEach(async ({}, info) => {
    for (const run of running) await run.end(info);
    running.clear();
  });
  return (run) => {
    running.add(run);
    return run;
  };
}

/** Playwright's `test` with a fresh {@link WanRun} as `run`. */
export const test = base.extend<{ run: WanRun }>({
  run: async ({}, use, info) => {
    const run = new WanRun();
    await use(run);
    await run.end(info);
  },
});
export { expect } from '@playwright/test';
