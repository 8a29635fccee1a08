/**
 * docs/DEPLOY.md, followed inside the emulated internet (scripts/wan.sh): the public
 * segment is the host (198.51.100.10, `video.example.com` in every namespace's hosts), and
 * coturn, the signaling server, nginx, the seeder and the page run from the files in
 * docs/deploy/ as they are, with only what DEPLOY.md's "Checked" lists changed: addresses
 * and paths, a self-signed certificate the browsers and the seeder are told to trust, and
 * the seeder's upload limit (so that the pages must trade). Two pages in NATed homes play
 * over https:// and wss://, from the seeder and from each other, while Prometheus, with
 * prometheus.yml, scrapes the signaling server and the seeder (the pages report their
 * offload through the signaling server), and every query of the Grafana dashboard answers.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { BIN, ROOT, VIDEO, VIDEO_SECONDS, makeVideo } from './swarm.js';
import { PUBLIC_IP, waitStunAnswers } from './wan.js';
import { expect, test } from './wan-fixture.js';

const DOCS = join(ROOT, 'docs', 'deploy');
const HOST = 'video.example.com';
/** The guide's example public address, and the emulated host's. */
const EXAMPLE_IP = '192.0.2.10';

/** `file` from docs/deploy/ with the guide's address and each of `replace` (which it must hold) replaced. */
function fromGuide(file: string, replace: [string, string][] = []): string {
  let text = readFileSync(join(DOCS, file), 'utf8').split(EXAMPLE_IP).join(PUBLIC_IP);
  for (const [from, to] of replace) {
    expect(text.includes(from), `${file} has ${from}`).toBe(true);
    text = text.split(from).join(to);
  }
  return text;
}

/** `url` fetched from inside the namespace `ns` (where Prometheus listens on loopback). */
function getIn(ns: string, url: string): string {
  const got = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e',
    'fetch(process.argv[1], { signal: AbortSignal.timeout(5000) }).then((r) => r.text()).then((t) => process.stdout.write(t), (e) => { console.error(String(e)); process.exit(1); })', url],
  { encoding: 'utf8', timeout: 10_000 });
  if (got.status !== 0) throw new Error(`GET ${url}: ${got.stderr}`);
  return got.stdout;
}

interface PromAnswer { status: string; error?: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] } }

/** An instant PromQL query of the Prometheus at 127.0.0.1:9090 in `ns`. */
function promQuery(ns: string, query: string): PromAnswer {
  return JSON.parse(getIn(ns, `http://127.0.0.1:9090/api/v1/query?query=${encodeURIComponent(query)}`)) as PromAnswer;
}

/** The value of a query whose answer is one number (NaN when it has none). */
function promValue(ns: string, query: string): number {
  const answer = promQuery(ns, query);
  expect(answer.status, `${query}: ${answer.error ?? ''}`).toBe('success');
  const first = answer.data?.result[0];
  return first ? Number(first.value[1]) : NaN;
}

/** KEY=VALUE lines (a systemd EnvironmentFile). */
function envFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}

/** A unit's ExecStart as argv, its ${VAR}s expanded from `env` (as systemd does). */
function execStart(unit: string, env: Record<string, string>): string[] {
  const line = unit.split('\n').find((l) => l.startsWith('ExecStart='));
  expect(line, 'the unit has an ExecStart').toBeDefined();
  return line!
    .slice('ExecStart='.length)
    .trim()
    .split(/\s+/)
    .map((w) => w.replace(/\$\{(\w+)\}/g, (_, k: string) => {
      expect(env[k], `the environment file sets ${k}`).toBeDefined();
      return env[k]!;
    }));
}

test.describe('docs/DEPLOY.md', () => {
  test('followed on the emulated internet: pages in two homes play from the seeder and from each other', async ({ run }) => {
    test.setTimeout(180_000);
    await makeVideo();
    const wan = run.up('g', ['--host', `${HOST}=${PUBLIC_IP}`]);
    const dir = join(ROOT, 'target', 'e2e', 'deploy', wan.name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(join(dir, 'www'), { recursive: true });

    // 2. The shared secret.
    const secret = execFileSync('openssl', ['rand', '-hex', '32'], { encoding: 'utf8' }).trim();
    writeFileSync(join(dir, 'turn-secret'), `${secret}\n`, { mode: 0o600 });

    // 3. coturn (its pid file and database in the test's directory).
    writeFileSync(join(dir, 'turnserver.conf'), fromGuide('turnserver.conf', [['CHANGE-ME', secret]]));
    const coturn = run.keep('coturn', wan.exec('pub', 'turnserver', ['-c', join(dir, 'turnserver.conf'), '--log-file=stdout', '--simple-log',
      `--pidfile=${join(dir, 'turnserver.pid')}`, `--db=${join(dir, 'turnserver.sqlite')}`]));
    await coturn.waitLine((l) => l.includes('Total General servers'), 15_000);
    await waitStunAnswers(wan);

    // 4. The signaling server: its unit's command with signal.env and the secret file.
    const signalUnit = readFileSync(join(DOCS, 'ppspp-signal.service'), 'utf8');
    // Pages report every 5 s instead of 30, so that reports come while they play.
    const signalEnv = { ...envFile(fromGuide('signal.env', [['PPSPP_SIGNAL_REPORT_EVERY=30', 'PPSPP_SIGNAL_REPORT_EVERY=5']])), PPSPP_SIGNAL_TURN_SECRET_FILE: join(dir, 'turn-secret') };
    expect(signalUnit).toContain('Environment=PPSPP_SIGNAL_TURN_SECRET_FILE=%d/turn-secret');
    const signalArgv = execStart(signalUnit, signalEnv).map((w) => w.replace('/usr/local/bin/', `${BIN}/`));
    const signal = run.keep('signal', wan.exec('pub', 'env', [...Object.entries(signalEnv).map(([k, v]) => `${k}=${v}`), ...signalArgv]));
    await signal.waitLine((l) => l.includes('listening on '));

    // 5. nginx with the site, a self-signed certificate, the page and the package.
    // A test CA (what the seeder is told to trust) and the host's certificate from it.
    const ssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    ssl(['req', '-x509', ...ec, '-days', '1', '-subj', '/CN=ppspp e2e CA', '-keyout', join(dir, 'ca-key.pem'), '-out', join(dir, 'ca.pem')]);
    ssl(['req', ...ec, '-subj', `/CN=${HOST}`, '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'host.csr')]);
    writeFileSync(join(dir, 'host.ext'), `subjectAltName=DNS:${HOST}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
    ssl(['x509', '-req', '-in', join(dir, 'host.csr'), '-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca-key.pem'),
      '-CAcreateserial', '-days', '1', '-extfile', join(dir, 'host.ext'), '-out', join(dir, 'cert.pem')]);
    const site = fromGuide('nginx.conf', [
      [`/etc/letsencrypt/live/${HOST}/fullchain.pem`, join(dir, 'cert.pem')],
      [`/etc/letsencrypt/live/${HOST}/privkey.pem`, join(dir, 'key.pem')],
      ['/srv/www', join(dir, 'www')],
    ]);
    writeFileSync(join(dir, 'nginx.conf'), [
      // Workers as root: the checkout may sit where nginx's usual user cannot read (a
      // private temporary directory, as CI's fresh clones).
      'user root;', `pid ${join(dir, 'nginx.pid')};`, `error_log ${join(dir, 'nginx-error.log')};`, 'daemon off;', 'events {}',
      'http {', `access_log off; client_body_temp_path ${dir}/t-body; proxy_temp_path ${dir}/t-proxy;`,
      `fastcgi_temp_path ${dir}/t-fcgi; uwsgi_temp_path ${dir}/t-uwsgi; scgi_temp_path ${dir}/t-scgi;`, site, '}',
    ].join('\n'));
    mkdirSync(join(dir, 'www', 'ppspp-web'));
    for (const d of ['dist', 'wasm']) symlinkSync(join(ROOT, 'web', d), join(dir, 'www', 'ppspp-web', d));
    writeFileSync(join(dir, 'www', 'index.html'), readFileSync(join(DOCS, 'index.html')));
    run.keep('nginx', wan.exec('pub', 'nginx', ['-c', join(dir, 'nginx.conf')]));
    const listening = spawnSync('ip', ['netns', 'exec', `${wan.name}-pub`, 'sh', '-c',
      'for i in $(seq 100); do ss -ltn | grep -q ":443 " && exit 0; sleep 0.1; done; exit 1']);
    expect(listening.status, 'nginx listens on 443').toBe(0);

    // 6. The seeder: its unit's command with seed.env (trusting the test's certificate).
    const seedEnv = envFile(fromGuide('seed.env', [['/srv/video/film.webm', VIDEO], ['12500000', '100000']]));
    const seedArgv = execStart(readFileSync(join(DOCS, 'ppspp-seed@.service'), 'utf8'), seedEnv).map((w) => w.replace('/usr/local/bin/', `${BIN}/`));
    const seeder = run.keep('seeder', wan.exec('pub', 'env', [`SSL_CERT_FILE=${join(dir, 'ca.pem')}`, ...seedArgv]));
    const uri = await seeder.waitLine((l) => l.startsWith('ppspp://'), 30_000);
    expect(uri).toContain(`signal=wss://${HOST}/ws`);
    expect(seedEnv.PPSPP_SEED_METRICS, 'seed.env gives the metrics an address').toBeDefined();

    // 10. Monitoring: Prometheus with prometheus.yml (scraping every second here), from now on.
    const pub = `${wan.name}-pub`;
    writeFileSync(join(dir, 'prometheus.yml'), fromGuide('prometheus.yml', [['scrape_interval: 15s', 'scrape_interval: 1s']]));
    run.keep('prometheus', wan.exec('pub', 'prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'prometheus-data')}`, '--web.listen-address=127.0.0.1:9090']));

    // 7. The page, in two homes behind port-keeping NATs.
    const pages: Page[] = [];
    for (const home of [1, 2]) {
      const url = `https://${HOST}/index.html?uri=${encodeURIComponent(uri)}`;
      pages.push(await run.page(home, url, { browserArgs: ['--ignore-certificate-errors'], ignoreHttpsErrors: true }));
    }
    for (const page of pages) {
      await expect
        .poll(() => page.evaluate(() => document.querySelector('video')!.currentTime), {
          timeout: 90_000,
          message: 'the page plays',
        })
        .toBeGreaterThan(VIDEO_SECONDS - 3);
    }
    const stats = await Promise.all(
      pages.map((p) => p.evaluate(() => (window as unknown as { player: { stats(): { bytesDownloaded: number; bytesFromSeeders: number; bytesFromPeers: number } } }).player.stats())),
    );
    // Nothing went wrong that the page shows (errors, STUN or TURN failing among them).
    for (const page of pages) expect(await page.evaluate(() => document.getElementById('status')!.textContent)).toBe('');
    for (const s of stats) expect(s.bytesFromSeeders, 'each page got data from the seeder').toBeGreaterThan(0);
    expect(stats.reduce((a, s) => a + s.bytesFromPeers, 0), 'the pages got data from each other').toBeGreaterThan(0);

    // What the operator sees: both processes scraped, the swarm's figures in them.
    const figures: [string, string, number][] = [
      ['the signaling server is scraped', 'up{job="ppspp-signal"}', 1],
      ['the seeder is scraped', 'up{job="ppspp-seed"}', 1],
      ['the pages and the seeder joined', 'sum(ppspp_signal_joins_total{outcome="welcome"})', 3],
      ['they are in the room', 'sum(ppspp_signal_peers)', 3],
      ['offers and answers were relayed', 'sum(ppspp_signal_signals_total{outcome="delivered"})', 1],
      ['each join got a TURN credential', 'sum(ppspp_signal_turn_credentials_total)', 3],
      ['the seeder sent video', 'sum(ppspp_seed_bytes_sent_total)', 1],
      ['both pages reported', 'sum(ppspp_signal_reporting_peers)', 2],
      ['the pages reported bytes from the seeder', 'sum(ppspp_signal_reported_bytes_total{source="seeders"})', 1],
      ['the pages reported bytes from each other', 'sum(ppspp_signal_reported_bytes_total{source="peers"})', 1],
    ];
    for (const [what, query, atLeast] of figures) {
      await expect.poll(() => promValue(pub, query), { timeout: 20_000, message: `${what}: ${query}` }).toBeGreaterThanOrEqual(atLeast);
    }
    // Every query of the dashboard is valid PromQL over these metrics, and the main ones have data.
    const dashboard = JSON.parse(readFileSync(join(DOCS, 'grafana-dashboard.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    const mustShow = ['Offload', 'Bytes received by source', 'Viewers', 'Joins', 'Signals relayed', 'TURN credentials', 'Seeder upload', 'Seeder peers'];
    for (const panel of dashboard.panels) {
      for (const { expr } of panel.targets) {
        const answer = promQuery(pub, expr);
        expect(answer.status, `${panel.title}: ${expr}: ${answer.error ?? ''}`).toBe('success');
        if (mustShow.includes(panel.title)) expect(answer.data!.result.length, `${panel.title} shows data: ${expr}`).toBeGreaterThan(0);
      }
    }
    for (const title of mustShow) expect(dashboard.panels.map((p) => p.title)).toContain(title);
  });
});
