//! Fetching by root hash alone: the core's [`Discovery`] for the browser, driven like
//! [`WasmPeer`](crate::WasmPeer) (the caller moves the messages and passes the time).

use crate::driven::Driven;
use ppspp::engine::Discovery;
use ppspp::merkle::Hash;
use ppspp::uri::SwarmUri;
use wasm_bindgen::prelude::*;

/// Learns a swarm's chunk size and length from its peers; then [`Self::uri`] gives the
/// swarm URI to fetch with.
#[wasm_bindgen]
pub struct WasmDiscovery {
    discovery: Driven<Discovery<u32>>,
}

#[wasm_bindgen]
impl WasmDiscovery {
    /// Discovery of the swarm `root_hex`; `chunk_size` 0 tries the powers of two from 1 to
    /// 32 KiB. `seed_lo`/`seed_hi` come from `crypto.getRandomValues` (channel IDs).
    #[wasm_bindgen(constructor)]
    pub fn new(
        root_hex: &str,
        chunk_size: u32,
        seed_lo: u32,
        seed_hi: u32,
    ) -> Result<WasmDiscovery, JsError> {
        let root = Hash::from_hex(root_hex.trim())
            .ok_or_else(|| JsError::new(&format!("not a root hash in hex: {root_hex}")))?;
        let sizes: Vec<u32> = (chunk_size > 0).then_some(chunk_size).into_iter().collect();
        let seed = (u64::from(seed_hi) << 32) | u64::from(seed_lo);
        let discovery =
            Discovery::new(root, &sizes, seed).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(WasmDiscovery {
            discovery: Driven::new(discovery),
        })
    }

    /// Asks `peer` (its data channel just opened and we initiated).
    pub fn connect(&mut self, peer: u32, now_ms: f64) {
        self.discovery.connect(peer, now_ms);
    }

    #[wasm_bindgen(js_name = peerLost)]
    pub fn peer_lost(&mut self, peer: u32) {
        self.discovery.peer_lost(peer);
    }

    #[wasm_bindgen(js_name = handleDatagram)]
    pub fn handle_datagram(&mut self, peer: u32, data: &[u8], now_ms: f64) {
        self.discovery.handle_datagram(peer, data, now_ms);
    }

    /// The next message to send, or `undefined`; [`Self::transmit_peer`] says to whom.
    #[wasm_bindgen(js_name = pollTransmit)]
    pub fn poll_transmit(&mut self, now_ms: f64) -> Option<js_sys::Uint8Array> {
        self.discovery.poll_transmit(now_ms)
    }

    #[wasm_bindgen(js_name = transmitPeer)]
    pub fn transmit_peer(&self) -> u32 {
        self.discovery.transmit_peer()
    }

    /// Milliseconds until `handleTimeout` is due (0: now), or -1 when nothing is scheduled.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&self, now_ms: f64) -> f64 {
        self.discovery.poll_timeout(now_ms)
    }

    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now_ms: f64) {
        self.discovery.handle_timeout(now_ms);
    }

    /// The swarm URI (with `signal`, if given) once a peer has proven the chunk size and
    /// length, else `undefined`.
    pub fn uri(&self, signal: Option<String>) -> Option<String> {
        let mut uri = SwarmUri::new(self.discovery.inner.found()?);
        uri.signal = signal;
        Some(uri.to_string())
    }

    /// Why discovery failed, once every peer asked so far has failed, else `undefined`.
    pub fn failure(&self) -> Option<String> {
        self.discovery.inner.failed().map(|e| e.to_string())
    }
}
