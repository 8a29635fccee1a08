//! The driver side every Wasm class shares: a sans-IO peer ([`SansIo`]) with the page's
//! clock in milliseconds and one outgoing buffer. `WasmPeer` and `WasmDiscovery` are thin
//! wasm-bindgen wrappers around it, since wasm-bindgen exports no generic type.

use js_sys::Uint8Array;
use ppspp::engine::{Connect, SansIo};
use ppspp::time::Time;

/// The caller's `performance.now()` (milliseconds) as engine time.
pub(crate) fn to_time(now_ms: f64) -> Time {
    // performance.now() is non-negative and monotonic; guard anyway (NaN → 0).
    Time::from_micros((now_ms.max(0.0) * 1000.0) as u64)
}

/// Milliseconds from `now_ms` until `due` (0: now), or -1 for nothing scheduled.
pub(crate) fn timeout_ms(due: Option<Time>, now_ms: f64) -> f64 {
    match due {
        Some(t) if t != Time::NEVER => t.saturating_since(to_time(now_ms)).as_secs_f64() * 1000.0,
        _ => -1.0,
    }
}

/// A sans-IO peer whose data-channel handles are `u32`s.
pub(crate) struct Driven<P> {
    pub inner: P,
    /// Where the next datagram is written; copied straight into a JS `Uint8Array`.
    buf: Vec<u8>,
    /// The peer of the datagram polled last.
    out_peer: u32,
}

impl<P: SansIo<Addr = u32>> Driven<P> {
    pub fn new(inner: P) -> Self {
        Driven {
            inner,
            buf: Vec::new(),
            out_peer: 0,
        }
    }

    pub fn connect(&mut self, peer: u32, now_ms: f64) -> Connect {
        self.inner.connect(peer, to_time(now_ms))
    }

    pub fn peer_lost(&mut self, peer: u32) {
        self.inner.peer_lost(&peer);
    }

    pub fn handle_datagram(&mut self, peer: u32, data: &[u8], now_ms: f64) {
        self.inner.handle_datagram(to_time(now_ms), peer, data);
    }

    pub fn poll_transmit(&mut self, now_ms: f64) -> Option<Uint8Array> {
        self.out_peer = self.inner.poll_transmit(to_time(now_ms), &mut self.buf)?;
        Some(Uint8Array::from(&self.buf[..]))
    }

    pub fn transmit_peer(&self) -> u32 {
        self.out_peer
    }

    pub fn poll_timeout(&self, now_ms: f64) -> f64 {
        timeout_ms(self.inner.poll_timeout(), now_ms)
    }

    pub fn handle_timeout(&mut self, now_ms: f64) {
        self.inner.handle_timeout(to_time(now_ms));
    }
}
