// @ts-check
// The demo page: plays ?uri= from the swarm and charts what the peer does, once a second.
import uPlot from '/vendor/uplot/uPlot.esm.js';
import { Player } from '/dist/index.js';

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const video = /** @type {HTMLVideoElement} */ ($('video'));
const status = $('status');
const uri = new URLSearchParams(location.search).get('uri');
const WINDOW = 120; // seconds of history in the charts

const kb = (/** @type {number} */ n) => (n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${(n / 1e3).toFixed(0)} kB`);

/** @type {number[][]} */ const rates = [[], [], []];
/** @type {number[][]} */ const peers = [[], [], []];
/** @type {number[][]} */ const cc = [[], [], []];

function chart(/** @type {string} */ id, /** @type {string} */ title, /** @type {any[]} */ series, /** @type {any[]} */ axes, /** @type {number[][]} */ data) {
  const el = $(id);
  return new uPlot({ title, width: Math.max(300, el.clientWidth - 16), height: 200, series: [{}, ...series], axes, scales: { x: { time: false } } }, data, el);
}

const rateChart = chart('chart-rates', 'download / upload (kB/s)',
  [{ label: 'download', stroke: '#1565c0', width: 2 }, { label: 'upload', stroke: '#2e7d32', width: 2 }],
  [{ label: 's' }, {}], rates);
const peerChart = chart('chart-peers', 'peers and offload',
  [{ label: 'peers', stroke: '#6a1b9a', width: 2, scale: 'n' }, { label: 'offload %', stroke: '#ef6c00', width: 2, scale: '%' }],
  [{ label: 's' }, { scale: 'n' }, { scale: '%', side: 1 }], peers);
const ccChart = chart('chart-cc', 'congestion window and one-way queuing delay',
  [{ label: 'cwnd (datagrams, mean)', stroke: '#00838f', width: 2, scale: 'w' }, { label: 'queuing delay (ms, max)', stroke: '#c62828', width: 2, scale: 'ms' }],
  [{ label: 's' }, { scale: 'w' }, { scale: 'ms', side: 1 }], cc);

function push(/** @type {number[][]} */ data, /** @type {number[]} */ values) {
  values.forEach((v, i) => data[i]?.push(v));
  if ((data[0]?.length ?? 0) > WINDOW) data.forEach((d) => d.shift());
}

function drawHave(/** @type {[number, number][]} */ ranges, /** @type {number} */ total) {
  const canvas = /** @type {HTMLCanvasElement} */ ($('have-canvas'));
  canvas.width = canvas.clientWidth || 600;
  const ctx = canvas.getContext('2d');
  if (!ctx || total === 0) return;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = '#2e7d32';
  for (const [a, b] of ranges) ctx.fillRect((a / total) * canvas.width, 0, Math.max(1, ((b - a) / total) * canvas.width), canvas.height);
  ctx.fillStyle = '#1d2330';
  ctx.fillRect((video.currentTime / (video.duration || 1)) * canvas.width, 0, 2, canvas.height);
}

/** What the headless demo reads back (scripts/demo-headless.mjs). */
const demo = { player: /** @type {Player | null} */ (null), error: /** @type {string | null} */ (null), errors: /** @type {string[]} */ ([]), rejected: 0 };
Object.assign(window, { demo });

if (!uri) {
  status.textContent = 'no ?uri= in the address: start `make demo` and open the URL it prints';
  status.classList.add('error');
} else {
  try {
    const player = await Player.attach(video, uri, { statsIntervalMs: 1000 });
    demo.player = player;
    status.textContent = `joined swarm ${player.content.root.slice(0, 12)}… (${kb(player.content.length)}, chunks of ${player.content.chunkSize} bytes)`;
    player.on('first-frame', (e) => { $('ttff').textContent = `${e.ms.toFixed(0)} ms`; });
    player.on('chunk-rejected', (e) => {
      demo.rejected++;
      status.textContent = `rejected chunk ${e.chunk} from peer ${e.peer}: ${e.reason}`;
    });
    player.on('error', (e) => {
      demo.errors.push(`${e.code}: ${e.message}`);
      status.textContent = `${e.code}: ${e.message}`;
      status.classList.add('error');
    });
    player.on('complete', () => { status.textContent = 'all chunks verified; seeding to others'; });
    player.on('stats', (s) => {
      const t = s.elapsedMs / 1000;
      const channels = s.channels.filter((c) => c.established);
      const meanCwnd = channels.length ? channels.reduce((a, c) => a + c.cwnd, 0) / channels.length : 0;
      const delays = channels.map((c) => c.queuingDelayMs).filter((d) => d !== null);
      push(rates, [t, s.downloadBps / 1000, s.uploadBps / 1000]);
      push(peers, [t, s.connections, s.offload * 100]);
      push(cc, [t, meanCwnd, delays.length ? Math.max(...delays) : 0]);
      rateChart.setData(rates);
      peerChart.setData(peers);
      ccChart.setData(cc);
      $('peers').textContent = String(s.connections);
      $('from-seeders').textContent = kb(s.bytesFromSeeders);
      $('from-peers').textContent = `${kb(s.bytesFromPeers)} (${(s.offload * 100).toFixed(0)} %)`;
      $('uploaded').textContent = kb(s.bytesUploaded);
      $('chunks').textContent = `${s.chunksVerified} / ${s.chunksRejected}`;
      drawHave(player.have(), s.chunkCount);
    });
  } catch (e) {
    const err = /** @type {{code?: string, message: string}} */ (e);
    demo.error = `${err.code ?? 'error'}: ${err.message}`;
    status.textContent = demo.error;
    status.classList.add('error');
  }
}
