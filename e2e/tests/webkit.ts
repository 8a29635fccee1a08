/**
 * Debian's WebKitGTK (the engine behind Safari) for the e2e tests: its MiniBrowser under a
 * virtual display (Xvfb), driven through WebKitWebDriver with plain W3C WebDriver calls.
 * This build has MediaSource and ManagedMediaSource and no WebRTC: what a page gets in a
 * browser without P2P.
 */
import { existsSync } from 'node:fs';
import { type Proc, freePort, run } from './swarm.js';

const MINIBROWSER = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';


/** Why WebKitGTK cannot run here (setup.sh installs it), or null. */
export function webkitMissing(): string | null {
  for (const f of ['/usr/bin/WebKitWebDriver', '/usr/bin/Xvfb', MINIBROWSER]) {
    if (!existsSync(f)) return `${f} is missing: run scripts/setup.sh web`;
  }
  return null;
}

export interface WebKit {
  /** Opens `url` in the browser's one window. */
  goto(url: string): Promise<void>;
  /** Runs `script` (a function body; `return` gives the value) in the page. */
  evaluate<T>(script: string): Promise<T>;
  /** The driver's and the display's last lines, for failure messages. */
  logs(): string;
  close(): Promise<void>;
}

/** Starts Xvfb, WebKitWebDriver and a MiniBrowser session; every call is bounded in time. */
export async function startWebKit(): Promise<WebKit> {
  const display = `:${90 + Math.floor(Math.random() * 900)}`;
  const xvfb = run('Xvfb', [display, '-screen', '0', '1280x720x24', '-nolisten', 'tcp']);
  const procs: Proc[] = [xvfb];
  const stopAll = async (): Promise<void> => {
    for (const p of procs.reverse()) await p.stop();
  };
  try {
    // Xvfb says nothing when ready: wait for its socket.
    const socket = `/tmp/.X11-unix/X${display.slice(1)}`;
    for (let i = 0; i < 100 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 50));
    if (!existsSync(socket)) throw new Error(`Xvfb ${display} did not start: ${xvfb.stderrTail()}`);
    const port = await freePort();
    process.env.DISPLAY = display;
    const driver = run('WebKitWebDriver', [`--port=${port}`]);
    procs.push(driver);
    const base = `http://127.0.0.1:${port}`;
    const call = async (method: string, path: string, body?: unknown, ms = 30_000): Promise<unknown> => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(ms),
      });
      const json = (await res.json()) as { value: unknown };
      if (!res.ok) throw new Error(`WebDriver ${method} ${path}: ${res.status} ${JSON.stringify(json.value).slice(0, 500)}`);
      return json.value;
    };
    // The driver takes a moment to listen.
    let session: string | null = null;
    for (let i = 0; i < 50 && session === null; i++) {
      try {
        const value = (await call('POST', '/session', {
          capabilities: { alwaysMatch: { 'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] } } },
        })) as { sessionId: string };
        session = value.sessionId;
      } catch (err) {
        if (!String(err).includes('fetch failed') && !String(err).includes('ECONNREFUSED')) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (session === null) throw new Error(`WebKitWebDriver did not answer: ${driver.stderrTail()}`);
    const s = `/session/${session}`;
    return {
      goto: async (url) => {
        await call('POST', `${s}/url`, { url });
      },
      evaluate: async <T>(script: string) => (await call('POST', `${s}/execute/sync`, { script, args: [] })) as T,
      logs: () => `driver: ${driver.stderrTail()} | xvfb: ${xvfb.stderrTail()}`,
      close: async () => {
        await call('DELETE', s, undefined, 10_000).catch(() => {});
        await stopAll();
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
