// Turns target/bench/native.json + browser.json into target/bench/summary.json (the
// headline figures under stable names), and, in full mode, the plots under docs/bench/
// and the generated tables of BENCHMARKS.md (between the bench:begin/end markers; the
// discussion around them is written by hand). With --smoke it only checks that every
// benchmark produced numbers and writes target/bench/summary-smoke.json.
//   node scripts/bench-report.mjs [--smoke]
import { chromium } from '@playwright/test';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const smoke = process.argv.includes('--smoke');
const bench = join(root, 'target', 'bench');
const read = (name) => JSON.parse(readFileSync(join(bench, name), 'utf8'));
const native = read(smoke ? 'native-smoke.json' : 'native.json');
const browser = read(smoke ? 'browser-smoke.json' : 'browser.json');
// The WAN part (e2e/bench/wan.bench.ts) needs network namespaces, so root.
const wan = read(smoke ? 'wan-smoke.json' : 'wan.json');
const med = (x) => (x && typeof x === 'object' ? x.median : x);
// The native WebRTC stacks compared (e2e/bench/webrtc-stack.bench.ts), also in namespaces.
const stack = read(smoke ? 'webrtc-stack-smoke.json' : 'webrtc-stack.json');
// First frames of 720p pages that start together (e2e/bench/first-frame.bench.ts).
const firstFrame = read(smoke ? 'first-frame-smoke.json' : 'first-frame.json');
// HLS through hls.js, plain and over PPSPP (e2e/bench/hls.bench.ts).
const hls = read(smoke ? 'hls-smoke.json' : 'hls.json');
// Live HLS through hls.js, plain and over PPSPP (e2e/bench/hls-live.bench.ts).
const hlsLive = read(smoke ? 'hls-live-smoke.json' : 'hls-live.json');
const firstFrameMax = (pages) => {
  const cases = (firstFrame.cases ?? []).filter((c) => pages === undefined || c.pages === pages);
  return cases.length ? Math.max(...cases.map((c) => c.first_frame_ms_max)) : null;
};
const stackFigures = Object.fromEntries(
  Object.entries(stack.stacks ?? {}).flatMap(([path, byStack]) =>
    Object.entries(byStack).flatMap(([name, s]) => {
      const key = `webrtc_stack_${path}_${name.replace('-', '_')}`;
      return [[`${key}_mbps`, med(s.mb_per_s)], [`${key}_seeder_cpu_s_per_mb`, med(s.seeder_cpu_s_per_mb)]];
    }),
  ),
);

const goodput = Object.entries(browser.goodput ?? {}).map(([cs, g]) => ({ cs: Number(cs), ...g }));
const best = goodput.reduce((a, g) => (!a || med(g.ppspp_mbps) > med(a.ppspp_mbps) ? g : a), null);
// The package's default chunk size: the browser goodput target is taken there.
const atDefault = goodput.find((g) => g.cs === 8192) ?? best;
const gp = browser.goodput_profile;
/** A profiled thread (a page's main thread or Worker): the share our code took (engine, bindings, sends). */
const ourShare = (s) => (s ? s.wasm_hash + s.wasm_alloc + s.wasm_engine + s.js + s.channel_send : null);
const cpu = browser.swarm?.cpu_by_thread;
const verifyKeys = Object.keys(browser.verify_wasm ?? {});
const verifyRatios = Object.fromEntries(
  verifyKeys.map((k) => [k, med(browser.verify_wasm[k]) / med(native.verify_native?.soft?.[k])]),
);
const ratios = Object.values(verifyRatios).sort((a, b) => a - b);
// The scale part: figures at the most WebRTC peers tried.
const sc = native.scale ?? {};
const rtcCounts = Object.keys(sc.webrtc?.by_peers ?? {}).map(Number).sort((a, b) => a - b);
const rtcTop = sc.webrtc?.by_peers?.[rtcCounts.at(-1)];
const summary = {
  date: browser.date,
  machine: native.machine,
  chromium: browser.chromium,
  browser_goodput_ratio: atDefault ? med(atDefault.ppspp_mbps) / med(atDefault.raw_mbps) : null,
  browser_goodput_mbps: atDefault ? med(atDefault.ppspp_mbps) : null,
  browser_goodput_chunk_size: atDefault ? atDefault.cs : null,
  browser_goodput_best_ratio: best ? med(best.ppspp_mbps) / med(best.raw_mbps) : null,
  browser_goodput_best_chunk_size: best ? best.cs : null,
  goodput_receiver_idle_share: gp?.receiver?.idle ?? null,
  goodput_receiver_our_share: ourShare(gp?.receiver),
  goodput_sender_idle_share: gp?.sender?.idle ?? null,
  goodput_receiver_worker_idle_share: gp?.receiver_worker?.idle ?? null,
  goodput_receiver_worker_our_share: ourShare(gp?.receiver_worker),
  goodput_raw_cpu_s_per_mb: atDefault?.raw_cpu?.cpu_s_per_mb ?? null,
  goodput_ppspp_cpu_s_per_mb: atDefault?.ppspp_cpu?.cpu_s_per_mb ?? null,
  goodput_ppspp_cores_busy: atDefault?.ppspp_cpu?.cores_busy ?? null,
  engine_worker_mbps: med(browser.engine_thread?.worker),
  engine_main_thread_mbps: med(browser.engine_thread?.main),
  engine_worker_busy_mbps: med(browser.engine_thread?.worker_busy),
  engine_main_thread_busy_mbps: med(browser.engine_thread?.main_busy),
  native_to_page_mbps: med(browser.native_to_page?.mbps),
  native_to_page_ratio: browser.native_to_page?.ratio ?? null,
  native_to_page_seeder_cpu_s_per_mb: med(browser.native_to_page?.seeder_cpu_s_per_mb),
  native_to_page_udp_drops_per_fetch: med(browser.native_to_page?.udp_rcvbuf_drops_per_fetch) ?? null,
  native_to_page_resent_ratio: browser.native_to_page?.seeder_resent_ratio ?? null,
  // The smoke run has no native software-hashing figures (bench-native.mjs).
  ...(smoke
    ? {}
    : {
        wasm_vs_native_verify_ratio: ratios.length ? ratios[Math.floor((ratios.length - 1) / 2)] : null,
        wasm_vs_native_verify_ratio_min: ratios.length ? ratios[0] : null,
      }),
  udp_mbps_1k: med(native.udp?.mbps_1k),
  udp_mbps_8k: med(native.udp?.mbps_8k),
  swarm_seeder_upload_ratio: med(browser.swarm?.seeder_upload_ratio) ?? null,
  swarm_duplicate_ratio: med(browser.swarm?.duplicate_ratio) ?? null,
  swarm_stalls_over_1s_max: browser.swarm?.stalls_over_1s_per_page?.max ?? null,
  swarm_longest_stall_ms: browser.swarm?.longest_stall_ms?.max ?? null,
  swarm_ttff_ms_median: med(browser.swarm?.ttff_ms),
  swarm_ttff_ms_max: browser.swarm?.ttff_ms?.max ?? null,
  swarm_join_ttff_ms_median: med(browser.swarm_join?.ttff_ms),
  busy_swarm_ttff_ms_median: med(browser.swarm_busy?.ttff_ms),
  busy_swarm_ttff_ms_max: browser.swarm_busy?.ttff_ms?.max ?? null,
  busy_swarm_seeder_upload_ratio: med(browser.swarm_busy?.seeder_upload_ratio) ?? null,
  swarm_wall_s: med(browser.swarm?.wall_s) ?? null,
  page_cpu_s_per_mb: med(browser.swarm?.page_cpu_s_per_mb) ?? null,
  page_main_thread_cpu_s_per_mb: med(browser.swarm?.page_main_thread_cpu_s_per_mb) ?? null,
  page_task_s_per_mb: med(browser.swarm?.page_task_s_per_mb) ?? null,
  seeder_cpu_s_per_mb: med(browser.swarm?.seeder_cpu_s_per_mb) ?? null,
  swarm_machine_busy_ratio: cpu ? cpu.total_cpu_s / (cpu.wall_s * cpu.cores) : null,
  origin_swarm_bytes_ratio: med(browser.swarm_origin?.origin_ratio) ?? null,
  origin_swarm_ttff_ms_median: med(browser.swarm_origin?.ttff_ms),
  origin_swarm_ttff_ms_max: browser.swarm_origin?.ttff_ms?.max ?? null,
  origin_swarm_wall_s: med(browser.swarm_origin?.wall_s) ?? null,
  live_latency_ms_median: med(browser.live?.latency_ms_median),
  live_latency_ms_max: browser.live?.latency_ms_max?.max ?? null,
  live_stalls_over_1s_per_page: med(browser.live?.stalls_over_1s_per_page) ?? null,
  live_seeder_upload_ratio: med(browser.live?.seeder_upload_ratio) ?? null,
  first_frame_ms_max: firstFrameMax(),
  hls_plain_origin_per_loaded: hls.plain?.origin_per_loaded ?? null,
  hls_ppspp_origin_per_loaded: hls.ppspp?.origin_per_loaded ?? null,
  hls_ppspp_no_media_origin_per_loaded: hls.ppspp_no_media?.origin_per_loaded ?? null,
  hls_plain_first_frame_ms_median: hls.plain?.first_frame_ms_median ?? null,
  hls_ppspp_first_frame_ms_median: hls.ppspp?.first_frame_ms_median ?? null,
  hls_plain_stalled_ms_total: hls.plain?.stalled_ms_total ?? null,
  hls_ppspp_stalled_ms_total: hls.ppspp?.stalled_ms_total ?? null,
  hls_live_plain_origin_per_loaded: hlsLive.plain?.origin_per_loaded ?? null,
  hls_live_ppspp_origin_per_loaded: hlsLive.ppspp?.origin_per_loaded ?? null,
  hls_live_plain_latency_ms_median: hlsLive.plain?.latency_ms_median ?? null,
  hls_live_ppspp_latency_ms_median: hlsLive.ppspp?.latency_ms_median ?? null,
  hls_live_plain_latency_ms_p95: hlsLive.plain?.latency_ms_p95 ?? null,
  hls_live_ppspp_latency_ms_p95: hlsLive.ppspp?.latency_ms_p95 ?? null,
  hls_live_plain_stalled_ms_total: hlsLive.plain?.stalled_ms_total ?? null,
  hls_live_ppspp_stalled_ms_total: hlsLive.ppspp?.stalled_ms_total ?? null,
  ...(smoke ? {} : { first_frame_3_pages_ms_max: firstFrameMax(3), first_frame_6_pages_ms_max: firstFrameMax(6) }),
  wan_ttff_ms_median: med(wan.ttff_ms),
  wan_ttff_ms_max: wan.ttff_ms?.max ?? null,
  wan_stalls_per_page: med(wan.stalls_per_page),
  wan_longest_stall_ms: wan.longest_stall_ms?.max ?? null,
  wan_offload_ratio: med(wan.offload),
  wan_seeder_upload_ratio: med(wan.seeder_upload_ratio),
  ...stackFigures,
  ...Object.fromEntries(
    ['memory', 'redis'].flatMap((mode) => {
      const s = native.signal?.[mode];
      return [
        [`signal_${mode}_join_ms_p50`, med(s?.join_ms_p50)],
        [`signal_${mode}_join_ms_p99`, med(s?.join_ms_p99)],
        [`signal_${mode}_relay_ms_p50`, med(s?.relay_ms_p50)],
        [`signal_${mode}_relay_ms_p99`, med(s?.relay_ms_p99)],
        [`signal_${mode}_rss_bytes_per_client`, med(s?.server_rss_bytes_per_client)],
        [`signal_${mode}_cpu_s_per_1000_signals`, med(s?.cpu_s_per_1000_signals)],
      ];
    }),
  ),
  scale_rtc_peers_max: rtcCounts.at(-1) ?? null,
  scale_rtc_peers_at_bitrate: sc.webrtc?.peers_at_bitrate ?? null,
  scale_rtc_peer_mbps_p10: med(rtcTop?.peer_mbps_p10),
  scale_rtc_peer_mbps_p50: med(rtcTop?.peer_mbps_p50),
  scale_rtc_seeder_cpu_s_per_mb: med(rtcTop?.seeder_cpu_s_per_mb),
  scale_rtc_seeder_rss_bytes_per_peer: med(rtcTop?.seeder_rss_bytes_per_peer),
  scale_udp_fetchers: sc.udp?.fetchers ?? null,
  scale_udp_pex_wall_s: med(sc.udp?.pex?.wall_s),
  scale_udp_seeder_only_wall_s: med(sc.udp?.seeder_only?.wall_s),
  scale_sim_leechers: sc.sim?.leechers ?? null,
  scale_sim_wall_s: sc.sim?.wall_s ?? null,
  scale_sim_rss_bytes: sc.sim?.rss_bytes ?? null,
  scale_sim_seeder_upload_ratio: sc.sim?.seeder_upload_ratio ?? null,
};
const missing = Object.entries(summary).filter(([k, v]) => k.match(/ratio|mbps|ms|_s$|_per_mb$|_share$|_per_fetch$|^signal_|^scale_/) && !Number.isFinite(v));
writeFileSync(join(bench, smoke ? 'summary-smoke.json' : 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
if (missing.length) {
  console.error(`bench-report: no figure for ${missing.map(([k]) => k).join(', ')}`);
  process.exit(1);
}
console.log(`bench-report: ${Object.keys(summary).length} headline figures in target/bench/${smoke ? 'summary-smoke' : 'summary'}.json`);
if (smoke) process.exit(0);

// Tables for BENCHMARKS.md.
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
const mmm = (x, d = 1) => (x ? `${f(x.median, d)} (${f(x.min, d)}–${f(x.max, d)})` : '–');
const lines = [];
const m = native.machine ?? {};
lines.push(`Measured ${summary.date.slice(0, 10)} by \`make bench\` on ${m.cpu_model ?? '?'}, ${m.cores ?? '?'} cores, ${m.memory_gib ?? '?'} GiB, ${m.kernel ?? ''}; ${m.rustc ?? ''}, Node ${m.node ?? ''}, Chromium ${summary.chromium}. Median (min–max) of 3 runs; every ratio compares figures of the same run. Raw figures: \`target/bench/{native,browser,summary}.json\`.`, '');
lines.push('### 1. Browser goodput, page → page over loopback (MB/s)', '');
lines.push('| chunk | raw data channel | lost (raw) | PPSPP, verified | PPSPP ÷ raw | browser CPU ms per MB, raw / PPSPP (cores busy) | raw ÷ PPSPP CPU per MB |', '|---|---|---|---|---|---|---|');
const cpuPerMb = (c) => (c ? `${f(1000 * c.cpu_s_per_mb, 1)} (${f(c.cores_busy, 2)})` : '–');
for (const g of goodput) {
  lines.push(`| ${g.cs / 1024} KiB | ${mmm(g.raw_mbps)} | ${f(100 * med(g.raw_loss), 1)} % | ${mmm(g.ppspp_mbps)} | ${f(g.ratio, 2)} | ${cpuPerMb(g.raw_cpu)} / ${cpuPerMb(g.ppspp_cpu)} | ${f(g.raw_cpu?.cpu_s_per_mb / g.ppspp_cpu?.cpu_s_per_mb, 2)} |`);
}
lines.push('', '![goodput](docs/bench/browser-goodput.png)', '');
const ntp = browser.native_to_page;
lines.push(`The native seeder → one page over WebRTC (\`ppspp seed\`, ${f((ntp?.content_bytes ?? 0) / 1e6, 0)} MB, ${(ntp?.chunk_size ?? 0) / 1024} KiB chunks, \`Peer.fetch\` in the receiving page of the row above):`, '');
lines.push('| MB/s | ÷ raw page → page, same run | seeder CPU s per MB | UDP datagrams dropped at a full receive buffer, per fetch | chunks the seeder resent |', '|---|---|---|---|---|');
lines.push(`| ${mmm(ntp?.mbps)} | ${f(ntp?.ratio, 2)} | ${mmm(ntp?.seeder_cpu_s_per_mb, 3)} | ${mmm(ntp?.udp_rcvbuf_drops_per_fetch, 0)} | ${f(100 * ntp?.seeder_resent_ratio, 1)} % |`, '');
const et = browser.engine_thread;
if (et) {
  lines.push(`Where the fetching engine runs, page → page at ${et.chunk_size / 1024} KiB: bare engines on both pages (\`bench.html\`, \`wp*\`), the fetcher on the receiving page's main thread or in a dedicated Worker the data channel is transferred to; the page's main thread idle, or busy ${et.busy_ms_per_100} ms in every 100 (arms alternating run by run):`, '');
  lines.push('| | main thread | Worker | Worker ÷ main thread |', '|---|---|---|---|');
  lines.push(`| main thread idle, MB/s | ${mmm(et.main)} | ${mmm(et.worker)} | ${f(et.worker?.median / et.main?.median, 2)} |`);
  lines.push(`| main thread busy, MB/s | ${mmm(et.main_busy)} | ${mmm(et.worker_busy)} | ${f(et.worker_busy?.median / et.main_busy?.median, 2)} |`);
  lines.push(`| ÷ raw page → page, idle | ${f(et.main?.median / et.raw_mbps?.median, 2)} | ${f(et.worker?.median / et.raw_mbps?.median, 2)} | |`, '');
}
if (gp) {
  const pc = (x) => `${f(100 * x, 0)} %`;
  lines.push(`Where each page's main thread and its engine's Worker went in one more PPSPP fetch at ${gp.chunk_size / 1024} KiB (${f(gp.mbps)} MB/s while profiled; CDP CPU profiles, self time, a sample every 200 µs):`, '');
  lines.push('| page, thread | idle | the browser\'s own work | garbage collection | hashing (Wasm) | allocator (Wasm) | rest of the engine (Wasm) | `RTCDataChannel.send` | JavaScript and bindings | other browser APIs |', '|---|---|---|---|---|---|---|---|---|---|');
  const threads = [['sender', 'sender, main thread'], ['sender_worker', 'sender, engine\'s Worker'], ['receiver', 'receiver, main thread'], ['receiver_worker', 'receiver, engine\'s Worker']];
  for (const [key, who] of threads) {
    const s = gp[key];
    if (s) lines.push(`| ${who} | ${pc(s.idle)} | ${pc(s.browser)} | ${pc(s.gc)} | ${pc(s.wasm_hash)} | ${pc(s.wasm_alloc)} | ${pc(s.wasm_engine)} | ${pc(s.channel_send)} | ${pc(s.js)} | ${pc(s.other)} |`);
  }
  lines.push('');
}
lines.push('### 2. Verification throughput (MB/s): native vs Wasm in Chromium', '');
lines.push('| hash, chunk | native, software hashing | native, CPU SHA extensions | Wasm in Chromium | Wasm ÷ native software | crypto.subtle digest only |', '|---|---|---|---|---|---|');
for (const k of verifyKeys) lines.push(`| ${k.replace('_', ', ')} | ${mmm(native.verify_native?.soft?.[k], 0)} | ${mmm(native.verify_native?.[k], 0)} | ${mmm(browser.verify_wasm[k], 0)} | ${f(verifyRatios[k], 2)} | ${mmm(browser.digest_subtle?.[k], 0)} |`);
lines.push('', '![verification](docs/bench/verify.png)', '');
lines.push('### 3. Native UDP, seeder → fetcher on loopback, 100 MB', '');
lines.push('| chunk | MB/s | fetcher CPU s | fetcher peak RSS | seeder CPU s | seeder peak RSS |', '|---|---|---|---|---|---|');
for (const k of ['1k', '8k']) {
  const u = native.udp ?? {};
  lines.push(`| ${k.replace('k', ' KiB')} | ${mmm(u[`mbps_${k}`])} | ${mmm(u[`fetch_cpu_s_${k}`], 2)} | ${f(med(u[`fetch_rss_kb_${k}`]) / 1024, 1)} MiB | ${mmm(u[`seed_cpu_s_${k}`], 2)} | ${f(med(u[`seed_rss_kb_${k}`]) / 1024, 1)} MiB |`);
}
lines.push('', `### 4. Swarm: 1 native seeder + ${browser.swarm?.pages} headless pages, ${f((browser.swarm?.content_bytes ?? 0) / 1e6, 1)} MB video`, '');
lines.push('| seeder upload ÷ content | received twice by the pages ÷ content | first frame after attach(), median (min–max) | stalls over 1 s per page, most; longest stall | all pages complete | page CPU s per MB verified: renderer; its main thread | page main-thread task time (wall) s per MB | seeder CPU s per MB sent |', '|---|---|---|---|---|---|---|---|');
lines.push(`| ${mmm(browser.swarm?.seeder_upload_ratio, 2)} | ${mmm(browser.swarm?.duplicate_ratio, 2)} | ${mmm(browser.swarm?.ttff_ms, 0)} ms (all pages of all runs) | ${f(browser.swarm?.stalls_over_1s_per_page?.max, 0)}; ${f(browser.swarm?.longest_stall_ms?.max, 0)} ms | ${mmm(browser.swarm?.wall_s, 1)} s | ${mmm(browser.swarm?.page_cpu_s_per_mb, 3)}; ${mmm(browser.swarm?.page_main_thread_cpu_s_per_mb, 3)} | ${mmm(browser.swarm?.page_task_s_per_mb, 3)} | ${mmm(browser.swarm?.seeder_cpu_s_per_mb, 3)} |`, '');
const su = browser.swarm?.startup_ms;
if (su) {
  lines.push('Where the time to the first frame went (`Player.startup`), ms after `attach()`, median (min–max) over all pages:', '');
  // firstBufferedMs is measured since 2026-11-28 afternoon: older browser.json files lack it.
  const steps = [['engineMs', 'Wasm and URI ready'], ['joinedMs', 'signaling welcome'], ['firstPeerMs', 'first peer'], ['firstChunkMs', 'first verified chunk'],
    ['firstAppendMs', 'first append'], ['firstBufferedMs', 'first keyframe buffered'], ['firstFrameMs', 'first frame']].filter(([k]) => Number.isFinite(su[k]?.median));
  lines.push(`| ${steps.map(([, name]) => name).join(' | ')} |`, `|${steps.map(() => '---|').join('')}`);
  lines.push(`| ${steps.map(([k]) => mmm(su[k], 0)).join(' | ')} |`, '');
}
const sj = browser.swarm_join;
if (sj?.joiners) {
  const steps = [['joinedMs', 'signaling welcome'], ['firstPeerMs', 'first peer'], ['firstChunkMs', 'first verified chunk'], ['firstFrameMs', 'first frame']]
    .filter(([k]) => Number.isFinite(sj.startup_ms?.[k]?.median));
  lines.push(`A page joining ${sj.playing} pages already playing (after each run the last page leaves, then ${sj.per_run} join one after another), ms after \`attach()\`, median (min–max) over all joining pages:`, '');
  lines.push(`| ${steps.map(([, name]) => name).join(' | ')} |`, `|${steps.map(() => '---|').join('')}`);
  lines.push(`| ${steps.map(([k]) => mmm(sj.startup_ms[k], 0)).join(' | ')} |`, '');
}
if (cpu) {
  const top = cpu.threads.slice(0, 10);
  const rest = cpu.threads.slice(10).reduce((a, g) => a + g.cpu_s, 0);
  lines.push(`Where the machine's CPU went in the first run: ${f(cpu.total_cpu_s, 0)} CPU s in ${f(cpu.wall_s, 1)} s on ${cpu.cores} cores (${f((100 * cpu.total_cpu_s) / (cpu.wall_s * cpu.cores), 0)} % of the machine), from the first page's start until all held everything; every thread of the browser, the seeder and the servers from /proc, summed over processes of one type:`, '');
  lines.push('| process | thread | CPU s | share |', '|---|---|---|---|');
  for (const g of top) lines.push(`| ${g.process} | ${g.thread} | ${f(g.cpu_s, 1)} | ${f((100 * g.cpu_s) / cpu.total_cpu_s, 0)} % |`);
  lines.push(`| everything else | ${cpu.threads.length - top.length} threads | ${f(rest, 1)} | ${f((100 * rest) / cpu.total_cpu_s, 0)} % |`, '');
}
lines.push(`The same pages, each run right after, with the file on the static web server as an HTTP origin (\`ppspp root --tree\`) and no seeder:`, '');
lines.push('| origin bytes ÷ content | first frame after attach(), median (min–max) | all pages complete |', '|---|---|---|');
lines.push(`| ${mmm(browser.swarm_origin?.origin_ratio, 2)} | ${mmm(browser.swarm_origin?.ttff_ms, 0)} ms (all pages of all runs) | ${mmm(browser.swarm_origin?.wall_s, 1)} s |`, '');
const sb = browser.swarm_busy;
if (sb) {
  lines.push(`The same pages, each run right after, from a fresh seeder with every page's main thread kept busy ${sb.busy_ms_per_100} ms in every 100 (\`player.html?busy=\`: a site's own scripts, layout and ads), the engine on that thread:`, '');
  lines.push('| seeder upload ÷ content | each page uploaded ÷ content | first frame after attach(), median (min–max) | all pages complete |', '|---|---|---|---|');
  lines.push(`| ${mmm(sb.seeder_upload_ratio, 2)} | ${mmm(sb.page_upload_ratio, 2)} | ${mmm(sb.ttff_ms, 0)} ms (all pages of all runs) | ${mmm(sb.wall_s, 1)} s |`, '');
}
const lv = browser.live;
lines.push(`### 4b. Live: \`ppspp live\` + ${lv?.pages} headless pages, ${lv?.seconds} s of ffmpeg's test source (320×240, about 0.5 Mbit/s) at real time`, '');
lines.push(`The source serves ${lv?.max_unchoked} pages at once (\`--max-unchoked\`); the pages open 250 ms apart. Latency: from ffmpeg reading a frame to a page appending it (each page's appends, median and maximum per run); stalls: over 1 s, per page.`, '');
lines.push('| latency, median | latency, max | stalls over 1 s per page | longest stall | source upload ÷ stream | first frame after attach() |', '|---|---|---|---|---|---|');
lines.push(`| ${mmm(lv?.latency_ms_median, 0)} ms | ${mmm(lv?.latency_ms_max, 0)} ms | ${mmm(lv?.stalls_over_1s_per_page, 0)} | ${mmm(lv?.longest_stall_ms, 0)} ms | ${mmm(lv?.seeder_upload_ratio, 2)} | ${mmm(lv?.ttff_ms, 0)} ms |`, '');
lines.push(`### 5. Swarm across the emulated internet: 1 native seeder + ${wan.pages} pages in three NATed homes`, '');
lines.push(`Every home's path: ${wan.link.one_way_delay_ms} ms each way (${2 * wan.link.one_way_delay_ms} ms round trip to the public segment, ${4 * wan.link.one_way_delay_ms} ms between homes), ${wan.link.loss_percent_each_way} % loss each way, ${wan.link.uplink_mbit} Mbit/s uplink (\`scripts/wan.sh\`, \`ppspp-linkem\`); the same video, each page playing it to the end; STUN from coturn. Measured ${wan.date.slice(0, 10)}; median (min–max) over all pages of ${wan.runs} runs, ratios per run (\`target/bench/wan.json\`).`, '');
lines.push('| first frame after attach() | stalls per page | longest stall | offload (from peers ÷ received) | seeder upload ÷ content |', '|---|---|---|---|---|');
lines.push(`| ${mmm(wan.ttff_ms, 0)} ms | ${mmm(wan.stalls_per_page, 0)} | ${mmm(wan.longest_stall_ms, 0)} ms | ${mmm(wan.offload, 2)} | ${mmm(wan.seeder_upload_ratio, 2)} |`, '');
/** `--delay 20 --loss 1` (scripts/wan.sh's link options) in words. */
function linkText(link) {
  const words = { '--delay': (v) => `${v} ms each way`, '--loss': (v) => `${v} % loss each way`, '--rate': (v) => `a ${v} Mbit/s uplink`, '--jitter': (v) => `${v} ms jitter` };
  const parts = [];
  for (let i = 0; i + 1 < link.length; i += 2) if (words[link[i]]) parts.push(words[link[i]](link[i + 1]));
  return parts.join(', ');
}
lines.push('### 6. Native WebRTC stacks: the native seeder → one page', '');
lines.push(`\`ppspp seed --webrtc-stack\` str0m or webrtc-rs, one Chromium page fetching with \`Peer.fetch\` in the emulated internet: *direct* from a home behind a port-preserving NAT; *relay*, the seeder offering only a TURN relay on coturn and the page behind the symmetric NAT; *loss*, ${linkText(stack.paths?.find((p) => p.name === 'loss')?.link ?? [])} on the home's path. MB/s is content ÷ the fetch's time (connection set-up included); CPU is the seeder's, from /proc. Measured ${stack.date?.slice(0, 10)}; median (min–max) of ${stack.rounds} fetches each, the stacks alternating (\`target/bench/webrtc-stack.json\`).`, '');
lines.push('| path | content | stack | MB/s | seeder CPU s per MB | seeder upload ÷ content |', '|---|---|---|---|---|---|');
for (const p of stack.paths ?? []) {
  for (const [name, s] of Object.entries(stack.stacks?.[p.name] ?? {})) {
    lines.push(`| ${p.name} | ${f(p.content_bytes / (1 << 20), 0)} MiB | ${name} | ${mmm(s.mb_per_s, 2)} | ${mmm(s.seeder_cpu_s_per_mb, 3)} | ${mmm(s.seeder_upload_ratio, 3)} |`);
  }
}
lines.push('');
lines.push('### 7. Binmap vs bitmap (operations per second)', '');
const ops = native.binmap?.ops_per_s ?? {};
const pairs = Object.keys(ops).filter((k) => k.includes('binmap')).map((k) => [k, k.replace('binmap', 'bitmap')]);
lines.push('| operation | binmap | bitmap |', '|---|---|---|');
for (const [a, b] of pairs) lines.push(`| ${a.replace('/binmap', '').replace('binmap_', '')} | ${f(ops[a] / 1e6, 2)} M | ${f(ops[b] / 1e6, 2)} M |`);
if (native.binmap?.memory) {
  lines.push('', 'Memory (bytes):', '', '| map | binmap | bitmap |', '|---|---|---|');
  for (const [k, v] of Object.entries(native.binmap.memory)) lines.push(`| ${k} | ${v.binmap ?? v.binmap_bytes ?? '–'} | ${v.bitmap ?? v.bitmap_bytes ?? '–'} |`);
}
lines.push('', '### 8. Simulated LEDBAT (deterministic, `ppspp-sim`)', '');
lines.push('```json', JSON.stringify({ link: native.sim?.link, delay: native.sim?.delay, loss: native.sim?.loss }, null, 1).slice(0, 3000), '```', '');
lines.push('Plots: ' + ['sim-link-rate', 'sim-link-cwnd', 'sim-delay-rate', 'sim-loss-rate'].map((p) => `[${p}](docs/bench/${p}.png)`).join(', '), '');
const sg = native.signal ?? {};
lines.push('', `### 9. Signaling: ${sg.clients} WebSocket clients in ${sg.rooms} rooms`, '');
lines.push(`\`signaling/examples/signal-load.rs\`: the clients join (200 at a time), then each sends ${sg.signals_per_client} signals to peers of its welcome sample, ${sg.memory?.signal_rate ?? '?'} a second in all. Memory: the servers' resident memory after the joins, less before, per client; CPU: the servers' (and Redis's) user + system time per 1,000 signals relayed. All on this machine's loopback, the load generator included.`, '');
lines.push('| rooms in | instances | join → welcome p50 / p99 | signal relay p50 / p99 | server memory per client | Redis memory per client | CPU s per 1,000 signals |', '|---|---|---|---|---|---|---|');
for (const mode of ['memory', 'redis']) {
  const s = sg[mode];
  if (!s) continue;
  lines.push(`| ${mode} | ${s.instances} | ${mmm(s.join_ms_p50, 1)} / ${mmm(s.join_ms_p99, 1)} ms | ${mmm(s.relay_ms_p50, 2)} / ${mmm(s.relay_ms_p99, 2)} ms | ${f(med(s.server_rss_bytes_per_client) / 1024, 1)} KiB | ${f(med(s.redis_rss_bytes_per_client) / 1024, 2)} KiB | ${mmm(s.cpu_s_per_1000_signals, 3)} |`);
}
lines.push('', `### 10. Scale: one native seeder, ${sc.udp?.fetchers} UDP fetchers, ${sc.sim?.leechers} simulated leechers`, '');
lines.push(`\`crates/ppspp-cli/examples/seeder-load.rs\` runs \`ppspp seed\` and, in one process on one thread, light peers driven like \`ppspp fetch\`. *WebRTC*: page-like peers offering to the seeder alone, ${f((sc.webrtc?.content_bytes ?? 0) / (1 << 20), 0)} MiB each in 8 KiB chunks, each downloading at most ${f((sc.peer_rate_limit_bytes_per_s ?? 0) / 1e6, 2)} MB/s (twice the section 4 video's ${f((sc.video_bytes_per_s ?? 0) / 1e6, 2)} MB/s), arriving 20 ms apart. A peer's rate is content ÷ its first to last chunk; memory is the seeder's resident growth ÷ the peers connected at its peak. Median (min–max) of ${sc.runs} runs.`, '');
lines.push('| peers | per-peer MB/s, 10th percentile | per-peer MB/s, median | first chunk p50 / p99 | seeder MB/s | seeder CPU s per MB | seeder memory per peer | load generator CPU s |', '|---|---|---|---|---|---|---|---|');
for (const n of rtcCounts) {
  const r = sc.webrtc.by_peers[n];
  lines.push(`| ${n} | ${mmm(r.peer_mbps_p10, 2)} | ${mmm(r.peer_mbps_p50, 2)} | ${f(med(r.first_chunk_ms_p50), 0)} / ${f(med(r.first_chunk_ms_p99), 0)} ms | ${mmm(r.seeder_mbps, 1)} | ${mmm(r.seeder_cpu_s_per_mb, 4)} | ${f(med(r.seeder_rss_bytes_per_peer) / 1024, 0)} KiB | ${mmm(r.load_cpu_s, 1)} |`);
}
lines.push('', `Every peer at or above the video's bitrate (10th percentile): up to ${sc.webrtc?.peers_at_bitrate} peers of those tried.`, '');
lines.push(`*UDP*: ${sc.udp?.fetchers} fetchers of ${f((sc.udp?.content_bytes ?? 0) / 1024, 0)} KiB in 1 KiB chunks, all started at once; *pex* as \`ppspp fetch\` runs (peers found through the seeder fetch from each other), *seeder only* without peer exchange. The seeder takes 256 peers at a time (\`--max-peers\`); the others are refused and come back.`, '');
lines.push('| fetchers | all complete in | first chunk p50 | seeder upload ÷ content | seeder CPU s | load generator CPU s |', '|---|---|---|---|---|---|');
for (const mode of ['pex', 'seeder_only']) {
  const u = sc.udp?.[mode];
  if (u) lines.push(`| ${mode.replace('_', ' ')} | ${mmm(u.wall_s, 1)} s | ${mmm(u.first_chunk_ms_p50, 0)} ms | ${mmm(u.seeder_upload_ratio, 2)} | ${mmm(u.seeder_cpu_s, 1)} | ${mmm(u.load_cpu_s, 1)} |`);
}
lines.push('', `*Simulator*: \`ppspp-sim swarm --leechers ${sc.sim?.leechers} --cases rtt0\` (section 8's swarm, 256 KiB): all ${sc.sim?.complete} complete, mean ${f(sc.sim?.mean_completion_s, 2)} s and last ${f(sc.sim?.max_completion_s, 2)} s of simulated time, seeder upload ${f(sc.sim?.seeder_upload_ratio, 2)}× content; ${f(sc.sim?.wall_s, 1)} s of run time and ${f((sc.sim?.rss_bytes ?? 0) / (1 << 20), 0)} MiB peak RSS.`, '');

lines.push('### 11. First frames of 720p pages that start together', '');
lines.push(`\`e2e/bench/first-frame.bench.ts\`: 60 s of 1280×720 at about 2.9 Mbit/s with 2 s keyframes (the first segment several times a page's first request), 3 and 6 Chromium pages opened one after another on this machine's loopback, videos hidden; from a static web server alone and beside a native seeder. Target: every first frame under ${firstFrame.target_ms} ms. One run per case, measured ${firstFrame.date?.slice(0, 10)} (\`target/bench/first-frame.json\`).`, '');
lines.push('| video | pages | seeder | first frames (ms) | slowest | stalls over 1 s | longest stall | from HTTP ÷ from peers |', '|---|---|---|---|---|---|---|---|');
for (const c of firstFrame.cases ?? []) {
  lines.push(`| ${c.video} | ${c.pages} | ${c.seeder ? 'yes' : 'no'} | ${c.first_frame_ms.join(', ')} | ${c.first_frame_ms_max} | ${c.stalls_over_1s} | ${c.longest_stall_ms} ms | ${f(c.bytes_from_http / 1e6, 1)} MB ÷ ${f(c.bytes_from_peers / 1e6, 1)} MB |`);
}
lines.push('');

lines.push(`### 12. HLS: plain hls.js against hls.js over PPSPP`, '');
lines.push(`\`e2e/bench/hls.bench.ts\`: a 60 s ladder (240p, 480p, 720p at 0.44, 1.1 and 3.1 Mbit/s; 2 s fMP4 segments) on a static web server, ${hls.pages} Chromium pages opened a second apart on this machine's loopback, each playing ${hls.play_seconds} s with hls.js's defaults; *over PPSPP*, \`hlsFragmentLoader\` and a signaling server, no seeder, the presentation given the video element (\`attachMedia\`), and once more without it (every segment fetched as if playback waited for it; the modes run in this order). The later pages over PPSPP start on a machine busy with the earlier pages' transfers between them, and their first frames show it ("An HLS page's first frame" below). Origin ÷ loaded is what the web server sent over the bytes of the fragments hls.js loaded. Measured ${hls.date?.slice(0, 10)}, one run (\`target/bench/hls.json\`).`, '');
lines.push('| mode | origin ÷ loaded | first frame, median (all pages) | time rebuffering, all pages | renditions played (per page) |', '|---|---|---|---|---|');
const HLS_MODES = { plain: 'plain hls.js', ppspp: 'over PPSPP', ppspp_no_media: 'over PPSPP, no video element' };
for (const [mode, name] of Object.entries(HLS_MODES)) {
  const r = hls[mode];
  if (r) lines.push(`| ${name} | ${f(r.origin_per_loaded, 2)} | ${f(r.first_frame_ms_median, 0)} ms (${r.first_frame_ms.join(', ')}) | ${r.stalled_ms_total} ms | ${r.renditions_played.map((l) => l.join('+')).join(', ')} |`);
}
lines.push('');

lines.push(`### 13. Live HLS: plain hls.js against hls.js over PPSPP`, '');
lines.push(`\`e2e/bench/hls-live.bench.ts\`: ffmpeg's live HLS muxer at real time (360p and 180p H.264 at 0.9 and 0.25 Mbit/s with 64 kbit/s AAC, 2 s fMP4 segments, six in the playlist) and \`ppspp hls live\` beside it signing only, the packager's folder on a static web server, ${hlsLive.pages} Chromium pages opened a second apart on this machine's loopback, each playing ${hlsLive.play_seconds} s with hls.js's defaults; *over PPSPP*, \`hlsFragmentLoader\` with the stream key and a signaling server. Origin ÷ loaded is what the web server sent (playlists and manifest included) over the bytes of the fragments hls.js loaded; latency is the wall clock minus the playing media's EXT-X-PROGRAM-DATE-TIME, sampled every 0.5 s on every page. Measured ${hlsLive.date?.slice(0, 10)}, one run per mode, each on a fresh stream (\`target/bench/hls-live.json\`).`, '');
lines.push('| mode | origin ÷ loaded | latency, median | latency, 95th percentile | median latency per page | time rebuffering, all pages |', '|---|---|---|---|---|---|');
for (const mode of ['plain', 'ppspp']) {
  const r = hlsLive[mode];
  if (r) lines.push(`| ${mode === 'plain' ? 'plain hls.js' : 'over PPSPP'} | ${f(r.origin_per_loaded, 2)} | ${f(r.latency_ms_median / 1000, 1)} s | ${f(r.latency_ms_p95 / 1000, 1)} s | ${r.latency_ms_median_per_page.map((x) => f(x / 1000, 1)).join(', ')} s | ${r.stalled_ms_total} ms |`);
}
lines.push('');
const md = join(root, 'BENCHMARKS.md');
let text = readFileSync(md, 'utf8');
const begin = '<!-- bench:begin (generated by scripts/bench-report.mjs) -->';
const end = '<!-- bench:end -->';
const block = `${begin}\n${lines.join('\n')}\n${end}`;
if (text.includes(begin)) text = text.slice(0, text.indexOf(begin)) + block + text.slice(text.indexOf(end) + end.length);
else text = text.replace(/\n## /, `\n## The benchmark suite (\`make bench\`)\n\n${block}\n\n## `);
writeFileSync(md, text);

// Plots, drawn on a canvas in headless Chromium and saved as PNG.
function barChart(title, unit, groups, series) {
  return `<!doctype html><body style="margin:0;background:#fff"><canvas id="c" width="900" height="420"></canvas><script>(() => {
  const groups = ${JSON.stringify(groups)}, series = ${JSON.stringify(series)};
  const c = document.getElementById('c').getContext('2d');
  const colors = ['#1565c0', '#2e7d32', '#ef6c00', '#6a1b9a'];
  const max = Math.max(...series.flatMap((s) => s.values)) * 1.15;
  const L = 70, B = 360, T = 50, W = 900 - L - 20;
  c.font = '16px DejaVu Sans, sans-serif'; c.fillStyle = '#000'; c.fillText(${JSON.stringify(title)}, L, 28);
  c.font = '12px DejaVu Sans, sans-serif'; c.strokeStyle = '#ccc';
  for (let i = 0; i <= 5; i++) { const y = B - (B - T) * i / 5; c.beginPath(); c.moveTo(L, y); c.lineTo(L + W, y); c.stroke(); c.fillStyle = '#444'; c.fillText((max * i / 5).toFixed(0), 10, y + 4); }
  c.save(); c.translate(14, T - 10); c.fillText(${JSON.stringify(unit)}, 0, 0); c.restore();
  const gw = W / groups.length, bw = gw * 0.8 / series.length;
  groups.forEach((g, gi) => {
    series.forEach((s, si) => { const v = s.values[gi] ?? 0, h = (B - T) * v / max, x = L + gi * gw + gw * 0.1 + si * bw;
      c.fillStyle = colors[si]; c.fillRect(x, B - h, bw - 2, h); c.fillStyle = '#000'; c.fillText(v.toFixed(0), x, B - h - 4); });
    c.fillStyle = '#000'; c.fillText(g, L + gi * gw + gw * 0.3, B + 18);
  });
  series.forEach((s, si) => { c.fillStyle = colors[si]; c.fillRect(L + si * 205, 392, 14, 14); c.fillStyle = '#000'; c.fillText(s.name, L + si * 205 + 20, 404); });
  })();</script></body>`;
}
mkdirSync(join(root, 'docs', 'bench'), { recursive: true });
const args = JSON.parse(readFileSync(join(root, 'e2e', 'chromium-args.json'), 'utf8'));
const b = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args });
const page = await b.newPage({ viewport: { width: 900, height: 420 } });
page.on('pageerror', (e) => {
  console.error(`bench-report: chart failed: ${e.message}`);
  process.exitCode = 1;
});
const charts = [
  ['browser-goodput.png', barChart('Browser goodput page → page (median MB/s)', 'MB/s', goodput.map((g) => `${g.cs / 1024} KiB`),
    [{ name: 'raw data channel', values: goodput.map((g) => med(g.raw_mbps)) }, { name: 'PPSPP, verified', values: goodput.map((g) => med(g.ppspp_mbps)) }])],
  ['verify.png', barChart('Merkle verification (median MB/s)', 'MB/s', verifyKeys,
    [{ name: 'native (software)', values: verifyKeys.map((k) => med(native.verify_native?.soft?.[k])) }, { name: 'native (SHA extensions)', values: verifyKeys.map((k) => med(native.verify_native?.[k])) }, { name: 'Wasm in Chromium', values: verifyKeys.map((k) => med(browser.verify_wasm[k])) }, { name: 'crypto.subtle (digest only)', values: verifyKeys.map((k) => med(browser.digest_subtle?.[k])) }])],
];
for (const [name, html] of charts) {
  await page.setContent(html);
  await page.screenshot({ path: join(root, 'docs', 'bench', name) });
}
await b.close();
console.log('bench-report: BENCHMARKS.md tables and docs/bench/*.png updated');
