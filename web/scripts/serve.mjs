// A static file server for the demo and the e2e pages (sirv: correct MIME types, among
// them application/wasm, which streaming instantiation needs).
//   node serve.mjs [--host 127.0.0.1] [--port 0] [--mount /url/=dir]... [--isolate]
// --isolate sends COOP/COEP headers, so pages are cross-origin isolated (what
// performance.measureUserAgentSpecificMemory needs).
// Prints `serving http://HOST:PORT/` once listening; stops on SIGINT/SIGTERM.
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import sirv from 'sirv';

const web = dirname(dirname(fileURLToPath(import.meta.url)));
const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
let host = '127.0.0.1';
let port = 0;
const mounts = [];
let isolate = false;
for (let i = 0; i < args.length; i++) {
  const [flag, value] = [args[i], args[i + 1]];
  if (flag === '--isolate') {
    isolate = true;
    continue;
  }
  if (value === undefined) usage(`${flag} needs a value`);
  if (flag === '--host') host = value;
  else if (flag === '--port') port = Number(value);
  else if (flag === '--mount') {
    const eq = value.indexOf('=');
    if (eq < 1 || !value.startsWith('/')) usage(`--mount takes /url/=dir, not ${value}`);
    mounts.push([value.slice(0, eq).replace(/\/?$/, '/'), resolve(value.slice(eq + 1))]);
  } else usage(`unknown flag ${flag}`);
  i++;
}
if (!Number.isInteger(port) || port < 0 || port > 65535) usage(`bad port ${port}`);

function usage(message) {
  console.error(`serve: ${message}\nusage: node serve.mjs [--host H] [--port P] [--mount /url/=dir]... [--isolate]`);
  process.exit(2);
}

// The package itself (demo/, dist/, wasm/) and uPlot for the demo's charts.
const uplot = dirname(require.resolve('uplot/package.json'));
mounts.push(['/vendor/uplot/', join(uplot, 'dist')]);
mounts.push(['/', web]);
const handlers = mounts.map(([prefix, dir]) => [prefix, sirv(dir, { dev: true, dotfiles: false })]);

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (isolate) {
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
  }
  for (const [prefix, handler] of handlers) {
    if (url.startsWith(prefix)) {
      req.url = '/' + url.slice(prefix.length);
      handler(req, res, () => {
        res.statusCode = 404;
        res.end('not found');
      });
      return;
    }
  }
  res.statusCode = 404;
  res.end('not found');
});
server.listen(port, host, () => {
  const addr = server.address();
  console.log(`serving http://${host}:${addr.port}/`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
