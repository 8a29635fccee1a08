// bench.html's fetching engine in a dedicated Worker: the page transfers a data channel
// and the URI; the Worker fetches over it and posts the result (or the error's message).
import init, * as wasm from '/wasm/ppspp_wasm.js';
import { fetchOver } from '/e2e/bench-fetcher.js';

const ready = init();
self.onmessage = async ({ data: { channel, uri } }) => {
  try {
    await ready;
    self.postMessage({ ok: await fetchOver(channel, uri, wasm) });
  } catch (e) {
    self.postMessage({ error: String(e?.message ?? e) });
  }
};
