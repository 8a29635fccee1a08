// One fetching engine on one data channel, for bench.html's "where the engine runs"
// comparison: the same code on the page's main thread and in a dedicated Worker
// (bench-engine-worker.js), so the two arms differ only in the thread.
import { Driver } from '/dist/driver.js';

/**
 * Fetches `uri` (`len` bytes) from the peer at the other end of `channel` with a
 * `WasmPeer` of `wasm`; resolves with the time from the first datagram received to the
 * last chunk verified. Rejects after 60 s.
 */
export function fetchOver(channel, uri, wasm) {
  const fetcher = wasm.WasmPeer.fetcher(uri, new wasm.PeerOptions(), performance.now());
  let first = 0;
  let messages = 0;
  return new Promise((resolve, reject) => {
    const finish = (outcome) => {
      clearTimeout(timer);
      driver.close();
      fetcher.free();
      channel.close();
      outcome();
    };
    const timer = setTimeout(() => finish(() => reject(new Error('the fetch did not complete within 60 s'))), 60_000);
    const driver = new Driver(fetcher, {
      send: (_peer, payload) => {
        if (channel.readyState !== 'open') return;
        try {
          channel.send(payload);
        } catch {
          // A full buffer drops an ACK, as the package's send queue would past its bound.
        }
      },
      afterSend: () => {
        if (!fetcher.isComplete()) return;
        const ms = performance.now() - first;
        finish(() => resolve({ ms, messages }));
      },
    });
    channel.binaryType = 'arraybuffer';
    channel.onmessage = (m) => {
      if (!first) first = performance.now();
      messages++;
      driver.datagram(1, new Uint8Array(m.data));
    };
    const start = () => {
      fetcher.connect(1, performance.now());
      driver.kick();
    };
    if (channel.readyState === 'open') start();
    else channel.onopen = start;
  });
}
