// Bundles the engine's Worker (dist/engine-worker.js, after tsc) into one script in place.
// Unbundled, the Worker loads its thirteen modules a level of imports at a time before it
// can make the engine, and a page that starts on a busy machine waits for each level
// (BENCHMARKS.md, "The engine in a Worker"). Apps that bundle the package bundle the
// Worker again from this file; pages that load dist/ as it is get one request. The
// unbundled file tsc writes works the same, only later.
import { build } from 'rolldown';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';

const dist = join(dirname(dirname(fileURLToPath(import.meta.url))), 'dist');
const entry = join(dist, 'engine-worker.js');
if (!existsSync(entry)) {
  console.error('bundle-worker: dist/engine-worker.js is missing; run tsc -p tsconfig.json first');
  process.exit(1);
}
// wasm-bindgen's script finds its module beside itself by default; bundled into dist/, the
// same file is one level up. The package always passes the module, but an app's bundler
// follows the URL and warns of a file that is not there.
const wasmBeside = /new URL\((['"])ppspp_wasm_bg\.wasm\1, import\.meta\.url\)/g;
const wasmFromDist = {
  name: 'wasm-from-dist',
  transform(code, id) {
    if (!id.endsWith('/wasm/ppspp_wasm.js')) return null;
    // The same lines: the source map stays right (map: null keeps it).
    return { code: code.replace(wasmBeside, "new URL('../wasm/ppspp_wasm_bg.wasm', import.meta.url)"), map: null };
  },
};
await build({
  input: entry,
  logLevel: 'warn',
  plugins: [wasmFromDist],
  output: { file: entry, format: 'esm', sourcemap: true },
});
if (/new URL\((['"])ppspp_wasm_bg\.wasm\1/.test(readFileSync(entry, 'utf8'))) {
  console.error("bundle-worker: wasm-bindgen's default module URL changed shape; update wasmBeside");
  process.exit(1);
}
