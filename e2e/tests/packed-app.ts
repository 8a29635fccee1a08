/**
 * The package as users get it: `npm pack` in web/, installed into a copy of e2e/vite-app
 * and built by Vite (both of its pages), for tests/package.spec.ts.
 *
 * npm pack runs the package's prepack, the build, which rewrites web/ in place: the files
 * every other spec's pages load (a page loading the Wasm module meanwhile got a truncated
 * file). So the app is made only where no page runs: by the global setup of the shared
 * group, before its workers start, and by package.spec itself only when it is missing or
 * older than what it is made of (a run of that spec on its own).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './swarm.js';

export const APP = join(ROOT, 'target', 'e2e', 'vite-app');
/** Written once the app is built: its time is the build's. */
const BUILT = join(APP, '.built');
/** What the app is made of: the package's build and files, and the app's own sources. */
const INPUTS = ['web/dist', 'web/wasm', 'web/package.json', 'web/README.md', 'e2e/vite-app'].map((p) => join(ROOT, p));

/** The newest modification time under `path` (a file, or a folder and all below it). */
function newest(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return readdirSync(path).reduce((m, name) => Math.max(m, newest(join(path, name))), s.mtimeMs);
}

/** Whether the app is built from what web/ and e2e/vite-app hold now. */
function fresh(): boolean {
  return existsSync(BUILT) && INPUTS.every((p) => !existsSync(p) || newest(p) < statSync(BUILT).mtimeMs);
}

/** Builds the app unless it is {@link fresh}. */
export function ensurePackedApp(): void {
  if (fresh()) return;
  rmSync(APP, { recursive: true, force: true });
  mkdirSync(join(APP, 'node_modules', 'ppspp-web'), { recursive: true });
  cpSync(join(ROOT, 'e2e', 'vite-app'), APP, { recursive: true });
  // npm pack runs the package's prepack (the build) and keeps only its `files`.
  execFileSync('npm', ['pack', '--pack-destination', APP], { cwd: join(ROOT, 'web'), stdio: ['ignore', 'ignore', 'inherit'] });
  const tarball = readdirSync(APP).find((f) => f.endsWith('.tgz'))!;
  execFileSync('tar', ['-xzf', join(APP, tarball), '-C', join(APP, 'node_modules', 'ppspp-web'), '--strip-components=1']);
  // The players come from the repository's node_modules, above the app, as a site's own
  // would from its own.
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--base', './', '--logLevel', 'warn'], { cwd: APP, stdio: 'inherit' });
  writeFileSync(BUILT, '');
}
