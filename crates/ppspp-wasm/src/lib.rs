//! The ppspp engine for browsers: the bindings the `ppspp-web` npm package drives.
//!
//! TypeScript owns the RTCPeerConnections and data channels and passes bytes in and out;
//! this module never calls into JavaScript, so it holds no closures that could leak and no
//! call from Rust can re-enter the object. docs/ARCHITECTURE.md says why (section
//! "`crates/ppspp-wasm`: the engine for browsers"), and BENCHMARKS.md ("Measurements behind
//! design choices") what a message costs. It stays sans-IO like the core: the caller passes
//! the time (`performance.now()`) into every call and a seed from `crypto.getRandomValues`.
//!
//! Peers are `u32` handles the caller assigns, one per data channel.
#![forbid(unsafe_code)]

#[cfg(any(test, feature = "bench"))]
pub mod bench;
mod convert;
mod discovery;
mod driven;
mod live_records;
mod origin;
mod parts;
mod saved;
mod store;

use convert::{
    channel_stats_object, content_object, event_object, live_content_object, stats_object,
};
pub use discovery::WasmDiscovery;
use driven::{Driven, to_time};
pub use live_records::verify_live_rendition;
pub use origin::{OriginOptions, tree_file};
pub use parts::PartMap;
use ppspp::engine::{Engine, EngineConfig, PickerKind};
use ppspp::live::LiveUri;
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::uri::SwarmUri;
use store::ServeStore;
use wasm_bindgen::prelude::*;

/// Settings of a [`WasmPeer`]; `new PeerOptions()` gives the defaults.
#[wasm_bindgen]
#[derive(Clone, Copy, Debug)]
pub struct PeerOptions {
    /// Upload limit in bytes per second; 0 = unlimited.
    pub upload_limit: f64,
    /// Download limit in bytes per second; 0 = unlimited.
    pub download_limit: f64,
    /// Most channels at once.
    pub max_peers: u32,
    /// Congestion priority of new channels: 0 = LEDBAT (yields to other traffic), N = as
    /// hard as N TCP flows.
    pub priority: u32,
    /// Priority while a channel carries urgent requests (chunks just ahead of the
    /// playhead); 0 = never raise it.
    pub urgent_priority: u32,
    /// Chunks ahead of the playhead fetched in order (video); 0 = rarest-first (files).
    pub vod_window: u32,
    /// Emit a `stats` event this often, in milliseconds; 0 = never.
    pub stats_interval_ms: u32,
    /// The timer granularity of the caller, in milliseconds (browsers: about 4).
    pub timer_granularity_ms: u32,
    /// Low and high halves of the seed for channel IDs and picker randomness.
    pub seed_lo: u32,
    pub seed_hi: u32,
    /// `performance.timeOrigin`: the Unix time in milliseconds at `performance.now()` 0, so
    /// DATA timestamps count from the Unix epoch as libswift expects; 0 = the page's clock.
    pub time_origin_ms: f64,
    /// Content bytes held at most (a window from the playhead; what falls out is let go
    /// of); 0 = all of it.
    pub max_held_bytes: f64,
}

#[wasm_bindgen]
impl PeerOptions {
    #[wasm_bindgen(constructor)]
    pub fn new() -> PeerOptions {
        PeerOptions::default()
    }
}

impl Default for PeerOptions {
    fn default() -> Self {
        PeerOptions {
            upload_limit: 0.0,
            download_limit: 0.0,
            max_peers: 32,
            priority: 0,
            urgent_priority: 0,
            vod_window: 0,
            stats_interval_ms: 0,
            timer_granularity_ms: 4,
            seed_lo: 0,
            seed_hi: 0,
            time_origin_ms: 0.0,
            max_held_bytes: 0.0,
        }
    }
}

impl PeerOptions {
    fn engine_config(&self) -> Result<EngineConfig, JsError> {
        let limit = |name: &str, v: f64| -> Result<Option<u64>, JsError> {
            if !v.is_finite() || v < 0.0 {
                return Err(JsError::new(&format!(
                    "{name} must be a number ≥ 0 (0: no limit), not {v}"
                )));
            }
            Ok((v > 0.0).then_some(v as u64))
        };
        if self.max_peers == 0 {
            return Err(JsError::new("max_peers must be at least 1"));
        }
        let wall_clock_offset = core::time::Duration::try_from_secs_f64(self.time_origin_ms / 1e3)
            .map_err(|_| {
                JsError::new(&format!(
                    "time_origin_ms must be milliseconds since the Unix epoch ≥ 0, not {}",
                    self.time_origin_ms
                ))
            })?;
        let mut config = EngineConfig {
            upload_limit: limit("upload_limit", self.upload_limit)?,
            download_limit: limit("download_limit", self.download_limit)?,
            max_peers: self.max_peers as usize,
            max_unchoked: self.max_peers as usize,
            picker: if self.vod_window > 0 {
                PickerKind::Vod {
                    window: u64::from(self.vod_window),
                }
            } else {
                PickerKind::RarestFirst
            },
            urgent_priority: (self.urgent_priority > 0).then_some(self.urgent_priority),
            stats_interval: (self.stats_interval_ms > 0)
                .then(|| core::time::Duration::from_millis(u64::from(self.stats_interval_ms))),
            pacing_granularity: core::time::Duration::from_millis(u64::from(
                self.timer_granularity_ms.max(1),
            )),
            seed: (u64::from(self.seed_hi) << 32) | u64::from(self.seed_lo),
            wall_clock_offset,
            max_held_bytes: limit("max_held_bytes", self.max_held_bytes)?,
            ..EngineConfig::default()
        };
        config.congestion.priority = self.priority;
        Ok(config)
    }
}

/// What a peer's URI names: a file, or a live stream.
enum PeerUri {
    Static(SwarmUri),
    Live(LiveUri),
}

impl PeerUri {
    fn parse(uri: &str) -> Result<PeerUri, JsError> {
        let live = uri.trim().starts_with("ppspp://live/");
        let parsed = if live {
            uri.parse::<LiveUri>().map(PeerUri::Live)
        } else {
            uri.parse::<SwarmUri>().map(PeerUri::Static)
        };
        parsed.map_err(|e| JsError::new(&e.to_string()))
    }

    fn object(&self) -> JsValue {
        match self {
            PeerUri::Static(u) => content_object(u),
            PeerUri::Live(u) => live_content_object(u),
        }
    }
}

impl core::fmt::Display for PeerUri {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PeerUri::Static(u) => u.fmt(f),
            PeerUri::Live(u) => u.fmt(f),
        }
    }
}

/// Parses a swarm URI (`ppspp://<root>?len=…`) into
/// `{root, hash, chunkSize, length, signal?, udp, name?, http?, tree?}`, or a live one
/// (`ppspp://live/<key>…`) into `{root, hash, chunkSize, length, signal?, udp, live:
/// {swarmId, chunksPerSignature, window, init?}}` (`root`: its signaling room); throws
/// with the reason.
#[wasm_bindgen(js_name = parseUri)]
pub fn parse_uri(uri: &str) -> Result<JsValue, JsError> {
    Ok(PeerUri::parse(uri)?.object())
}

/// One peer in one swarm: the engine, its content in memory, and what is on its way out.
#[wasm_bindgen]
pub struct WasmPeer {
    engine: Driven<Engine<u32, ServeStore>>,
    uri: PeerUri,
}

#[wasm_bindgen]
impl WasmPeer {
    /// A peer that fetches the content a swarm URI names, or views the live stream a
    /// live URI names (from its edge, within its discard window).
    pub fn fetcher(uri: &str, options: &PeerOptions, now_ms: f64) -> Result<WasmPeer, JsError> {
        let config = options.engine_config()?;
        let uri = match PeerUri::parse(uri)? {
            PeerUri::Live(live) => {
                let store = ServeStore::live(live.info.params.chunk_size as usize);
                let engine = Engine::new_live(config, live.info.clone(), store, to_time(now_ms))
                    .map_err(|e| JsError::new(&e.to_string()))?;
                return Ok(WasmPeer {
                    engine: Driven::new(engine),
                    uri: PeerUri::Live(live),
                });
            }
            PeerUri::Static(uri) => uri,
        };
        let content = uri.content();
        // Without a bound the page holds all of it.
        if config.max_held_bytes.is_none() && content.content_len > MAX_CONTENT as u64 {
            return Err(JsError::new(&format!(
                "content of {} bytes is too large for a browser peer to hold whole (at most {MAX_CONTENT}; set max_held_bytes)",
                content.content_len
            )));
        }
        let store = ServeStore::new(content.content_len, content.chunk_size as usize);
        let engine = Engine::new(config, content, store, to_time(now_ms))
            .map_err(|e| JsError::new(&e.to_string()))?;
        Ok(WasmPeer {
            engine: Driven::new(engine),
            uri: PeerUri::Static(uri),
        })
    }

    /// A peer that seeds `content`: hashes it (chunk size in bytes, `hash` one of sha1,
    /// sha256, …) and serves it. `signal` and `name` go into its URI.
    pub fn seeder(
        content: Vec<u8>,
        chunk_size: u32,
        hash: &str,
        signal: Option<String>,
        name: Option<String>,
        options: &PeerOptions,
        now_ms: f64,
    ) -> Result<WasmPeer, JsError> {
        let alg = hashing(hash, chunk_size)?;
        if content.len() > MAX_CONTENT {
            return Err(JsError::new(&format!(
                "content of {} bytes is too large for a browser peer (at most {MAX_CONTENT})",
                content.len()
            )));
        }
        let tree = MerkleTree::from_content(alg, chunk_size as usize, &content)
            .map_err(|e| JsError::new(&e.to_string()))?;
        let store = ServeStore::with_content(content, chunk_size as usize);
        let engine = Engine::new_seeder(options.engine_config()?, &tree, store, to_time(now_ms))
            .map_err(|e| JsError::new(&e.to_string()))?;
        let mut uri = SwarmUri::new(engine.content());
        uri.signal = signal;
        uri.name = name;
        Ok(WasmPeer {
            engine: Driven::new(engine),
            uri: PeerUri::Static(uri),
        })
    }

    /// The swarm URI of this content.
    pub fn uri(&self) -> String {
        self.uri.to_string()
    }

    /// `{root, hash, chunkSize, length, signal?, udp, name?}` (see `parseUri`).
    pub fn content(&self) -> JsValue {
        self.uri.object()
    }

    /// One past the newest chunk under a signed munro (-1: not a live stream).
    #[wasm_bindgen(js_name = liveEdge)]
    pub fn live_edge(&self) -> f64 {
        self.engine.inner.live_edge().map_or(-1.0, |e| e as f64)
    }

    /// The first chunk still in the live discard window (-1: not a live stream).
    #[wasm_bindgen(js_name = liveFloor)]
    pub fn live_floor(&self) -> f64 {
        self.engine.inner.live_floor().map_or(-1.0, |e| e as f64)
    }

    /// Verified chunk `chunk` (a live chunk may be short), or `undefined` if not held.
    #[wasm_bindgen(js_name = readChunk)]
    pub fn read_chunk(&mut self, chunk: f64) -> Option<Vec<u8>> {
        let chunk = chunk.max(0.0) as u64;
        if !self.engine.inner.have().has_chunk(chunk) {
            return None;
        }
        self.engine.inner.store_mut().kept_chunk(chunk)
    }

    /// Opens a channel to `peer` (its data channel just opened and we initiated).
    pub fn connect(&mut self, peer: u32, now_ms: f64) {
        self.engine.connect(peer, now_ms);
    }

    /// Sends an explicit close to `peer` on the next transmits.
    pub fn close(&mut self, peer: u32) {
        self.engine.inner.close(&peer);
    }

    /// Closes every channel (then drain `pollTransmit` to send the closes).
    #[wasm_bindgen(js_name = closeAll)]
    pub fn close_all(&mut self) {
        self.engine.inner.close_all();
    }

    /// The data channel to `peer` is gone: forget it without sending anything.
    #[wasm_bindgen(js_name = peerLost)]
    pub fn peer_lost(&mut self, peer: u32) {
        self.engine.peer_lost(peer);
    }

    /// One message from `peer`'s data channel.
    #[wasm_bindgen(js_name = handleDatagram)]
    pub fn handle_datagram(&mut self, peer: u32, data: &[u8], now_ms: f64) {
        self.engine.handle_datagram(peer, data, now_ms);
    }

    /// The next message to send, or `undefined`; [`Self::transmit_peer`] says to whom.
    #[wasm_bindgen(js_name = pollTransmit)]
    pub fn poll_transmit(&mut self, now_ms: f64) -> Option<js_sys::Uint8Array> {
        self.engine.poll_transmit(now_ms)
    }

    /// The peer of the message [`Self::poll_transmit`] returned last.
    #[wasm_bindgen(js_name = transmitPeer)]
    pub fn transmit_peer(&self) -> u32 {
        self.engine.transmit_peer()
    }

    /// Milliseconds until `handleTimeout` is due (0: now), or -1 when nothing is scheduled.
    #[wasm_bindgen(js_name = pollTimeout)]
    pub fn poll_timeout(&mut self, now_ms: f64) -> f64 {
        self.engine.poll_timeout(now_ms)
    }

    #[wasm_bindgen(js_name = handleTimeout)]
    pub fn handle_timeout(&mut self, now_ms: f64) {
        self.engine.handle_timeout(now_ms);
    }

    /// The next event as a plain object with a `type`, or `undefined`.
    #[wasm_bindgen(js_name = pollEvent)]
    pub fn poll_event(&mut self) -> JsValue {
        match self.engine.inner.poll_event() {
            Some(e) => event_object(&e),
            None => JsValue::UNDEFINED,
        }
    }

    /// Moves the VoD window to `chunk` (playback position or seek).
    #[wasm_bindgen(js_name = setPlayhead)]
    pub fn set_playhead(&mut self, chunk: f64) {
        self.engine.inner.set_playhead(chunk.max(0.0) as u64);
    }

    /// Playback waits for chunks `start..end` (`start` -1: it does not wait; `end` up to
    /// `start`: the segment's end is not known): an HTTP origin serves them, and at least
    /// the due span's worth from `start`, if no peer holds them. They may wait for peers for
    /// `slack_ms` (-1 or 0: they may not): see `Engine::set_waiting_slack`.
    #[wasm_bindgen(js_name = setWaitingFor)]
    pub fn set_waiting_for(&mut self, start: f64, end: f64, slack_ms: f64, now_ms: f64) {
        let chunks = (start >= 0.0).then(|| start as u64..end.max(0.0) as u64);
        let slack = (slack_ms >= 0.0)
            .then(|| core::time::Duration::from_micros((slack_ms * 1000.0) as u64));
        self.engine.inner.set_waiting_for(chunks);
        self.engine.inner.set_waiting_slack(slack, to_time(now_ms));
    }

    /// Marks `peer` as an origin: asked only for chunks due for playback or that no other
    /// peer holds, so the swarm carries the rest.
    #[wasm_bindgen(js_name = setOrigin)]
    pub fn set_origin(&mut self, peer: u32, origin: bool) {
        self.engine.inner.set_origin(&peer, origin);
    }

    /// Chunks to `peer` may share datagrams of up to `max_len` bytes (0: one chunk per
    /// datagram): only for a peer that said it reads them so.
    #[wasm_bindgen(js_name = setDataBatching)]
    pub fn set_data_batching(&mut self, peer: u32, max_len: u32) {
        self.engine
            .inner
            .set_data_batching(&peer, (max_len > 0).then_some(max_len as usize));
    }

    /// Congestion priority towards `peer` (0 = LEDBAT, N = N TCPs).
    #[wasm_bindgen(js_name = setPriority)]
    pub fn set_priority(&mut self, peer: u32, priority: u32) {
        self.engine.inner.set_priority(&peer, priority);
    }

    pub fn stats(&self) -> JsValue {
        stats_object(&self.engine.inner.stats())
    }

    /// Per-channel figures: `[{peer, state, cwnd, rttMs, queuingDelayMs, …}]`.
    #[wasm_bindgen(js_name = channelStats)]
    pub fn channel_stats(&self) -> JsValue {
        channel_stats_object(&self.engine.inner.channel_stats())
    }

    #[wasm_bindgen(js_name = isComplete)]
    pub fn is_complete(&self) -> bool {
        self.engine.inner.is_complete()
    }

    #[wasm_bindgen(js_name = chunkCount)]
    pub fn chunk_count(&self) -> f64 {
        self.engine.inner.chunk_count() as f64
    }

    /// Chunks verified and stored, as `[start, end, start, end, …]` (end exclusive).
    #[wasm_bindgen(js_name = haveRanges)]
    pub fn have_ranges(&self) -> Vec<f64> {
        self.engine
            .inner
            .have()
            .filled_ranges()
            .filter(|r| r.start < self.engine.inner.chunk_count())
            .flat_map(|r| {
                [
                    r.start as f64,
                    r.end.min(self.engine.inner.chunk_count()) as f64,
                ]
            })
            .collect()
    }

    /// The first chunk at or after `chunk` that is not verified yet (the chunk count if
    /// every one from `chunk` on is).
    #[wasm_bindgen(js_name = firstMissing)]
    pub fn first_missing(&self, chunk: f64) -> f64 {
        let count = self.engine.inner.chunk_count();
        let from = (chunk.max(0.0) as u64).min(count);
        self.engine
            .inner
            .have()
            .find_empty(from..count)
            .map_or(count, |bin| bin.base_offset().max(from)) as f64
    }

    /// Uploads to peers (`true`) or announces and serves nothing (`false`).
    #[wasm_bindgen(js_name = setUploading)]
    pub fn set_uploading(&mut self, uploading: bool) {
        self.engine.inner.set_uploading(uploading);
    }

    /// Fetches at most `chunks` ahead of the playhead, and at most `origin_chunks` of them
    /// from the HTTP origin (-1: no such bound).
    #[wasm_bindgen(js_name = setReadAhead)]
    pub fn set_read_ahead(&mut self, chunks: f64, origin_chunks: f64) {
        let bound = |c: f64| (c >= 0.0).then_some(c as u64);
        self.engine.inner.set_read_ahead(bound(chunks));
        self.engine
            .inner
            .set_origin_read_ahead(bound(origin_chunks));
    }

    /// Where the chunks wanted now end (exclusive): under `maxHeldBytes` or the read-ahead
    /// bound the end of the window from the playhead, else the chunk count.
    #[wasm_bindgen(js_name = wantedEnd)]
    pub fn wanted_end(&self) -> f64 {
        self.engine.inner.wanted_end() as f64
    }

    /// Verified bytes `start..end` of the content; throws if any chunk of it is missing.
    pub fn read(&self, start: f64, end: f64) -> Result<Vec<u8>, JsError> {
        let len = self.engine.inner.content().content_len;
        let (start, end) = (start.max(0.0) as u64, end.max(0.0) as u64);
        if start > end || end > len {
            return Err(JsError::new(&format!(
                "byte range {start}..{end} is outside the content (0..{len})"
            )));
        }
        if start == end {
            return Ok(Vec::new());
        }
        let cs = u64::from(self.engine.inner.content().chunk_size);
        let (first, last) = (start / cs, (end - 1) / cs);
        if self
            .engine
            .inner
            .have()
            .find_empty(first..last + 1)
            .is_some()
        {
            return Err(JsError::new(&format!(
                "bytes {start}..{end} are not all verified yet"
            )));
        }
        self.engine
            .inner
            .store()
            .read_range(start..end)
            .ok_or_else(|| JsError::new(&format!("bytes {start}..{end} are not held")))
    }
}

/// The hash function named `hash`, if `chunk_size` is a usable chunk size too.
fn hashing(hash: &str, chunk_size: u32) -> Result<HashAlgorithm, JsError> {
    let alg: HashAlgorithm = hash
        .parse()
        .map_err(|_| JsError::new(&format!("unknown hash function {hash:?}")))?;
    if chunk_size == 0 || chunk_size > ppspp::uri::MAX_CHUNK_SIZE {
        return Err(JsError::new(&format!(
            "chunk size must be 1..={} bytes, not {chunk_size}",
            ppspp::uri::MAX_CHUNK_SIZE
        )));
    }
    Ok(alg)
}

/// Largest content a browser peer holds in memory (Wasm32 memory is at most 4 GiB).
const MAX_CONTENT: usize = 2 << 30;
