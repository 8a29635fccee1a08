// @ts-check
// The demo page: plays ?uri= from the swarm and charts what the peer does, once a second; a
// live URI also gets a chart of how far playback is behind the source.
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
/** @type {number[][]} */ const lag = [[], []];
const live = uri?.startsWith('ppspp://live/') ?? false;
/** How far playback is behind the source, from the last `live-edge` event (seconds). */
let latency = /** @type {number | null} */ (null);

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

$('chart-latency').hidden = !live;
$('latency-figure').hidden = !live;
const latencyChart = live
  ? chart('chart-latency', 'behind the source (s)', [{ label: 'latency', stroke: '#5d4037', width: 2 }], [{ label: 's' }, {}], lag)
  : null;

function push(/** @type {number[][]} */ data, /** @type {number[]} */ values) {
  values.forEach((v, i) => data[i]?.push(v));
  if ((data[0]?.length ?? 0) > WINDOW) data.forEach((d) => d.shift());
}

/** Chunks held, from `first` to `end` (a file: all of it; live: the discard window). */
function drawHave(/** @type {[number, number][]} */ ranges, /** @type {number} */ first, /** @type {number} */ end) {
  const canvas = /** @type {HTMLCanvasElement} */ ($('have-canvas'));
  canvas.width = canvas.clientWidth || 600;
  const ctx = canvas.getContext('2d');
  const total = end - first;
  if (!ctx || total <= 0) return;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = '#2e7d32';
  for (const [a, b] of ranges) {
    const from = Math.max(a, first) - first;
    if (b > first) ctx.fillRect((from / total) * canvas.width, 0, Math.max(1, ((b - first - from) / total) * canvas.width), canvas.height);
  }
  if (live) return;
  ctx.fillStyle = '#1d2330';
  ctx.fillRect((video.currentTime / (video.duration || 1)) * canvas.width, 0, 2, canvas.height);
}

/** What the headless demo reads back (scripts/demo-headless.mjs). */
const demo = {
  player: /** @type {Player | null} */ (null),
  error: /** @type {string | null} */ (null),
  errors: /** @type {string[]} */ ([]),
  rejected: 0,
  /** Live: the last latency estimate (seconds), and whether the stream ended. */
  latency: /** @type {number | null} */ (null),
  liveEnded: false,
};
Object.assign(window, { demo });

if (!uri) {
  status.textContent = 'no ?uri= in the address: start `make demo` and open the URL it prints';
  status.classList.add('error');
} else {
  try {
    const player = await Player.attach(video, uri, { statsIntervalMs: 1000 });
    demo.player = player;
    status.textContent = live
      ? `joined live stream ${player.content.live?.swarmId.slice(0, 12)}… (chunks of ${player.content.chunkSize} bytes, every one signed by the source)`
      : `joined swarm ${player.content.root.slice(0, 12)}… (${kb(player.content.length)}, chunks of ${player.content.chunkSize} bytes)`;
    player.on('live-edge', (e) => {
      if (e.latencySeconds === null) return;
      latency = e.latencySeconds;
      demo.latency = latency;
      $('latency').textContent = `${latency.toFixed(1)} s`;
    });
    player.on('behind', (e) => { status.textContent = `${e.latencySeconds.toFixed(1)} s behind the source: catching up (${e.catchUp})`; });
    player.on('caught-up', (e) => { status.textContent = `back at ${e.latencySeconds.toFixed(1)} s behind the source`; });
    player.on('live-ended', () => {
      demo.liveEnded = true;
      status.textContent = 'the live stream ended';
    });
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
      if (latencyChart && latency !== null) {
        push(lag, [t, latency]);
        latencyChart.setData(lag);
      }
      $('peers').textContent = String(s.connections);
      $('from-seeders').textContent = kb(s.bytesFromSeeders);
      $('from-peers').textContent = `${kb(s.bytesFromPeers)} (${(s.offload * 100).toFixed(0)} %)`;
      $('uploaded').textContent = kb(s.bytesUploaded);
      $('chunks').textContent = `${s.chunksVerified} / ${s.chunksRejected}`;
      const span = player.content.live?.window ?? s.chunkCount;
      drawHave(player.have(), live ? Math.max(0, s.chunkCount - span) : 0, s.chunkCount);
    });
  } catch (e) {
    const err = /** @type {{code?: string, message: string}} */ (e);
    demo.error = `${err.code ?? 'error'}: ${err.message}`;
    status.textContent = demo.error;
    status.classList.add('error');
  }
}
