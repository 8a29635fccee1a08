/**
 * The package as users get it: `npm pack` in web/, installed into a fresh Vite app,
 * bundled by Vite, plays from the swarm.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from '@playwright/test';
import { ROOT, type Swarm, expectPlayedPast, startSwarm } from './swarm.js';
import { startWebWith } from './swarm.js';

const APP = join(ROOT, 'target', 'e2e', 'vite-app');
let swarm: Swarm | null = null;

test.afterEach(async () => {
  await swarm?.stop();
});

test('the packed npm package plays in a Vite-built page', async ({ browser }) => {
  test.setTimeout(180_000);
  rmSync(APP, { recursive: true, force: true });
  mkdirSync(join(APP, 'node_modules', 'ppspp-web'), { recursive: true });
  cpSync(join(ROOT, 'e2e', 'vite-app'), APP, { recursive: true });
  // npm pack runs the package's prepack (the build) and keeps only its `files`.
  execFileSync('npm', ['pack', '--pack-destination', APP], { cwd: join(ROOT, 'web'), stdio: 'ignore' });
  const tarball = readdirSync(APP).find((f) => f.endsWith('.tgz'))!;
  execFileSync('tar', ['-xzf', join(APP, tarball), '-C', join(APP, 'node_modules', 'ppspp-web'), '--strip-components=1']);
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--base', './', '--logLevel', 'warn'], { cwd: APP, stdio: 'inherit' });
  const web = await startWebWith([`/app/=${join(APP, 'dist')}`]);
  try {
    swarm = await startSwarm();
    const context = await browser.newContext({ permissions: ['camera', 'microphone'] });
    const page = await context.newPage();
    await page.goto(`${web.url}/app/index.html?uri=${encodeURIComponent(swarm.uri)}`);
    await expectPlayedPast(page, 2);
  } finally {
    await web.stop();
  }
});
