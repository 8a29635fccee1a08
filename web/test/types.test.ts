/**
 * The package's types as an app checks them: a project with `skipLibCheck: false` and an
 * older `lib` (ES2020) imports the built package (dist/ and the engine's declarations,
 * which `make web` writes) and type-checks with the repository's TypeScript.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const web = dirname(dirname(fileURLToPath(import.meta.url)));
const tsc = join(web, '..', 'node_modules', '.bin', 'tsc');

describe('the package types', () => {
  it('check in an app with skipLibCheck: false and lib ES2020', () => {
    const app = mkdtempSync(join(tmpdir(), 'ppspp-web-types-'));
    try {
      mkdirSync(join(app, 'node_modules'));
      symlinkSync(web, join(app, 'node_modules', 'ppspp-web'), 'dir');
      writeFileSync(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2020',
            lib: ['ES2020', 'DOM'],
            module: 'ES2022',
            moduleResolution: 'bundler',
            strict: true,
            skipLibCheck: false,
            noEmit: true,
          },
          include: ['main.ts'],
        }),
      );
      writeFileSync(
        join(app, 'main.ts'),
        "import { Peer, Player, type PlayerStats } from 'ppspp-web';\n" +
          'export const used: [typeof Peer, typeof Player, PlayerStats | null] = [Peer, Player, null];\n',
      );
      const r = spawnSync(tsc, ['-p', app], { encoding: 'utf8' });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.status).toBe(0);
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  }, 60_000);
});
