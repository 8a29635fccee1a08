/**
 * Signaling on Redis: a page and the native seeder meet through different
 * `ppspp-signal --redis` instances, and when the seeder's instance dies the seeder joins
 * at the other one, where a new page finds it. All processes on loopback.
 */
import { expect, test } from '@playwright/test';
import { join } from 'node:path';
import { BIN, type Proc, VIDEO, VIDEO_SHA256, completeHash, expectPlayedPast, freePort, run, startWeb } from './swarm.js';

let web: { url: string; stop(): Promise<void> };
const procs: Proc[] = [];

test.beforeAll(async () => {
  web = await startWeb();
});
test.afterAll(async () => {
  await web.stop();
});
test.afterEach(async ({ browser }) => {
  for (const context of browser.contexts()) await context.close();
  for (const p of procs.splice(0).reverse()) await p.stop();
});


async function startRedis(): Promise<string> {
  const port = await freePort();
  const redis = run('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no']);
  procs.push(redis);
  await redis.waitLine((l) => l.includes('Ready to accept connections'));
  return `redis://127.0.0.1:${port}`;
}

async function startInstance(redis: string): Promise<{ url: string; proc: Proc }> {
  const proc = run(join(BIN, 'ppspp-signal'), ['--bind', '127.0.0.1:0', '--redis', redis, '--redis-peer-ttl', '3']);
  procs.push(proc);
  const line = await proc.waitLine((l) => l.includes('listening on '));
  return { url: line.slice(line.indexOf('ws://')), proc };
}

async function openPage(browser: import('@playwright/test').Browser, uri: string, signals: string[]) {
  const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
  const page = await context.newPage();
  page.on('pageerror', (e) => console.log(`page: ${e.message}`));
  const query = signals.map((s) => `&signal=${encodeURIComponent(s)}`).join('');
  await page.goto(`${web.url}/e2e/player.html?uri=${encodeURIComponent(uri)}${query}`);
  return page;
}

test('a page and the seeder meet across instances; the seeder moves on when its instance dies', async ({ browser }) => {
  const redis = await startRedis();
  const a = await startInstance(redis);
  const b = await startInstance(redis);
  const seeder = run(join(BIN, 'ppspp'), ['seed', VIDEO, '--signal', `${b.url},${a.url}`, '--bind', '127.0.0.1:0', '--chunk-size', '8192', '--hash', 'sha256']);
  procs.push(seeder);
  const uri = await seeder.waitLine((l) => l.startsWith('ppspp://'));
  expect(decodeURIComponent(uri)).toContain(`signal=${b.url}`);

  // The page is on instance A only: everything it plays came through the other instance.
  const first = await openPage(browser, uri, [a.url]);
  await expectPlayedPast(first, 5);
  expect(await completeHash(first)).toBe(VIDEO_SHA256());
  await first.context().close();

  // B dies without a word; the seeder joins again at A, and a page that tries B first
  // finds it there.
  b.proc.child.kill('SIGKILL');
  await expect.poll(() => seeder.stderrTail(), { timeout: 15_000 }).toContain(`joined again at ${a.url}`);
  const second = await openPage(browser, uri, [b.url, a.url]);
  await expectPlayedPast(second, 5);
  expect(await completeHash(second)).toBe(VIDEO_SHA256());
});
