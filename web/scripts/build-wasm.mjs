// Builds the engine's WebAssembly module into web/wasm/ with wasm-pack (and, with
// --poison, the test-only poisoning build into web/wasm-poison/ for the e2e suite; with
// --bench, the build with the benchmark's verification workload into web/wasm-bench/).
// `--mode no-install` makes wasm-pack fail instead of downloading a wasm-bindgen CLI: the
// setup script installs the exact version the crate pins.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

const web = dirname(dirname(fileURLToPath(import.meta.url)));
const crate = join(web, '..', 'crates', 'ppspp-wasm');

function build(outDir, features) {
  const args = ['build', crate, '--target', 'web', '--release', '--mode', 'no-install', '--no-pack',
    '--out-dir', outDir, '--out-name', 'ppspp_wasm'];
  if (features) args.push('--', '--features', features);
  console.log(`build-wasm: wasm-pack ${args.join(' ')}`);
  const r = spawnSync('wasm-pack', args, { stdio: 'inherit' });
  if (r.error) {
    console.error(`build-wasm: cannot run wasm-pack (${r.error.message}); run scripts/setup.sh web`);
    process.exit(1);
  }
  if (r.status !== 0) process.exit(r.status ?? 1);
  declareDisposable(join(outDir, 'ppspp_wasm.d.ts'));
}

// wasm-bindgen's declarations use `Symbol.dispose`, which TypeScript knows only from the
// `esnext.disposable` library: an app checking the package's types (skipLibCheck: false)
// with lib ES2023 or older failed on them. The reference brings that library in for this
// file, whatever the app's lib setting.
const DISPOSABLE = '/// <reference lib="esnext.disposable" />\n';
function declareDisposable(file) {
  const text = readFileSync(file, 'utf8');
  if (text.includes('Symbol.dispose') && !text.startsWith(DISPOSABLE)) writeFileSync(file, DISPOSABLE + text);
}

build(join(web, 'wasm'));
if (process.argv.includes('--poison')) build(join(web, 'wasm-poison'), 'poison');
if (process.argv.includes('--bench')) build(join(web, 'wasm-bench'), 'bench');
// wasm-pack writes a .gitignore of '*' that would also keep the files out of `npm pack`.
for (const dir of ['wasm', 'wasm-poison', 'wasm-bench']) rmSync(join(web, dir, '.gitignore'), { force: true });
