//! Engine values as plain JavaScript objects, in the camelCase shapes `web/src/wasm.ts`
//! declares. Built with `Reflect::set` rather than serde: it keeps the module small.

use js_sys::{Array, Object, Reflect};
use ppspp::congestion::Phase;
use ppspp::engine::{
    ChannelStats, CloseReason, Event, OriginError, OriginFile, OriginRequest, SendState, Stats,
};
use ppspp::live::LiveUri;
use ppspp::uri::SwarmUri;
use wasm_bindgen::JsValue;

fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (key, value) in fields {
        // Setting a property on a fresh plain object cannot fail.
        let _ = Reflect::set(&o, &JsValue::from_str(key), value);
    }
    o.into()
}

fn num(v: u64) -> JsValue {
    JsValue::from_f64(v as f64)
}

fn ms(d: core::time::Duration) -> JsValue {
    JsValue::from_f64(d.as_secs_f64() * 1000.0)
}

/// A live stream as the page's content: `root` is the signaling room (as a file's root
/// is), `length` the whole address space, and `live` what is particular to it.
pub fn live_content_object(uri: &LiveUri) -> JsValue {
    let udp: Array = uri.udp.iter().map(|u| JsValue::from_str(u)).collect();
    let p = &uri.info.params;
    let init = uri
        .init
        .as_deref()
        .map_or(JsValue::UNDEFINED, |b| js_sys::Uint8Array::from(b).into());
    object(&[
        ("root", uri.info.key.signaling_room().into()),
        ("hash", p.hash.name().into()),
        ("chunkSize", num(u64::from(p.chunk_size))),
        (
            "length",
            num(ppspp::engine::LIVE_CHUNKS * u64::from(p.chunk_size)),
        ),
        (
            "signal",
            uri.signal
                .as_deref()
                .map_or(JsValue::UNDEFINED, JsValue::from_str),
        ),
        ("udp", udp.into()),
        ("name", JsValue::UNDEFINED),
        ("http", JsValue::UNDEFINED),
        ("tree", JsValue::UNDEFINED),
        (
            "live",
            object(&[
                (
                    "swarmId",
                    ppspp::hex::encode(uri.info.key.swarm_id()).into(),
                ),
                ("chunksPerSignature", num(p.chunks_per_signature)),
                ("window", num(p.discard_window)),
                ("init", init),
            ]),
        ),
    ])
}

pub fn content_object(uri: &SwarmUri) -> JsValue {
    let udp: Array = uri.udp.iter().map(|u| JsValue::from_str(u)).collect();
    object(&[
        ("root", uri.root.to_hex().into()),
        ("hash", uri.hash.name().into()),
        ("chunkSize", num(u64::from(uri.chunk_size))),
        ("length", num(uri.content_len)),
        (
            "signal",
            uri.signal
                .as_deref()
                .map_or(JsValue::UNDEFINED, JsValue::from_str),
        ),
        ("udp", udp.into()),
        (
            "name",
            uri.name
                .as_deref()
                .map_or(JsValue::UNDEFINED, JsValue::from_str),
        ),
        (
            "http",
            uri.origin
                .as_ref()
                .map_or(JsValue::UNDEFINED, |o| JsValue::from_str(&o.content)),
        ),
        (
            "tree",
            uri.origin
                .as_ref()
                .map_or(JsValue::UNDEFINED, |o| JsValue::from_str(&o.tree)),
        ),
        ("live", JsValue::UNDEFINED),
    ])
}

/// `{id, file: 'tree' | 'content', start, end}` (end exclusive).
pub fn origin_request_object(r: &OriginRequest) -> JsValue {
    object(&[
        ("id", num(r.id)),
        (
            "file",
            match r.file {
                OriginFile::Tree => "tree",
                OriginFile::Content => "content",
            }
            .into(),
        ),
        ("start", num(r.range.start)),
        ("end", num(r.range.end)),
    ])
}

/// The error code the page reports for an origin failure (web/src/errors.ts).
fn origin_error_code(e: &OriginError) -> &'static str {
    match e {
        OriginError::NoRangeSupport => "origin-no-range",
        OriginError::Status(_) => "origin-status",
        OriginError::Unreachable(_) => "origin-unreachable",
        OriginError::Timeout => "origin-timeout",
        OriginError::WrongLength { .. } => "origin-bad-response",
        OriginError::BadTree(_) => "origin-bad-tree",
    }
}

fn close_reason(reason: &CloseReason) -> (&'static str, String) {
    let code = match reason {
        CloseReason::ClosedByPeer => "closed-by-peer",
        CloseReason::ClosedLocally => "closed-locally",
        CloseReason::Unreachable => "unreachable",
        CloseReason::Timeout => "timeout",
        CloseReason::Misbehaving(_) => "misbehaving",
        CloseReason::Refused => "refused",
        CloseReason::OwnAddress => "own-address",
        CloseReason::NothingToExchange(_) => "nothing-to-exchange",
    };
    (code, reason.to_string())
}

pub fn event_object(event: &Event<u32>) -> JsValue {
    match event {
        Event::PeerConnected { peer } => {
            object(&[("type", "peer-connected".into()), ("peer", (*peer).into())])
        }
        Event::PeerClosed { peer, reason } => {
            let (code, message) = close_reason(reason);
            object(&[
                ("type", "peer-closed".into()),
                ("peer", (*peer).into()),
                ("reason", code.into()),
                ("message", message.into()),
            ])
        }
        // Browser peers reach others through signaling only; PEX addresses are of no use.
        Event::PeerDiscovered { peer } => {
            object(&[("type", "peer-discovered".into()), ("peer", (*peer).into())])
        }
        Event::ChunkVerified { chunk, from } => object(&[
            ("type", "chunk-verified".into()),
            ("chunk", num(*chunk)),
            ("peer", (*from).into()),
        ]),
        Event::ChunkRejected {
            chunk,
            from,
            reason,
        } => object(&[
            ("type", "chunk-rejected".into()),
            ("chunk", num(*chunk)),
            ("peer", (*from).into()),
            ("reason", reason.to_string().into()),
        ]),
        Event::ChunkFromOrigin { chunk } => {
            object(&[("type", "origin-chunk".into()), ("chunk", num(*chunk))])
        }
        Event::ChunkRestored { chunk } => {
            object(&[("type", "chunk-restored".into()), ("chunk", num(*chunk))])
        }
        Event::OriginCorrupt { chunk, reason } => object(&[
            ("type", "origin-corrupt".into()),
            ("chunk", num(*chunk)),
            ("reason", reason.to_string().into()),
        ]),
        Event::OriginFailed {
            error,
            retry_in,
            disabled,
        } => object(&[
            ("type", "origin-failed".into()),
            ("code", origin_error_code(error).into()),
            ("message", error.to_string().into()),
            (
                "status",
                match error {
                    OriginError::Status(s) => JsValue::from(*s),
                    _ => JsValue::NULL,
                },
            ),
            ("retryMs", retry_in.map_or(JsValue::NULL, ms)),
            ("disabled", (*disabled).into()),
        ]),
        Event::Progress { have, total } => object(&[
            ("type", "progress".into()),
            ("have", num(*have)),
            ("total", num(*total)),
        ]),
        Event::Complete => object(&[("type", "complete".into())]),
        Event::LiveEdge {
            end,
            signed_at_unix_micros,
        } => object(&[
            ("type", "live-edge".into()),
            ("end", num(*end)),
            ("signedAtMs", num(*signed_at_unix_micros / 1000)),
        ]),
        Event::StoreFailed { chunk, error } => object(&[
            ("type", "store-failed".into()),
            ("chunk", num(*chunk)),
            ("message", error.to_string().into()),
        ]),
        Event::LiveRestarted => object(&[("type", "live-restarted".into())]),
        // Only a source signs: pages never do.
        Event::LiveSigned { .. } => object(&[("type", "live-signed".into())]),
        Event::StoreReadFailed { chunk, error } => object(&[
            ("type", "store-read-failed".into()),
            ("chunk", num(*chunk)),
            ("message", error.to_string().into()),
        ]),
        Event::WrongContentLength(w) => object(&[
            ("type", "wrong-length".into()),
            ("stated", num(w.stated)),
            ("min", num(w.shown.min)),
            ("max", num(w.shown.max)),
            ("message", w.to_string().into()),
        ]),
        Event::Stats(s) => object(&[("type", "stats".into()), ("stats", stats_object(s))]),
    }
}

pub fn stats_object(s: &Stats) -> JsValue {
    object(&[
        ("chunksHave", num(s.chunks_have)),
        ("chunkCount", num(s.chunk_count)),
        ("bytesDownloaded", num(s.bytes_downloaded)),
        ("bytesDuplicate", num(s.bytes_duplicate)),
        ("bytesUploaded", num(s.bytes_uploaded)),
        ("chunksVerified", num(s.chunks_verified)),
        ("chunksRejected", num(s.chunks_rejected)),
        ("datagramsSent", num(s.datagrams_sent)),
        ("datagramsReceived", num(s.datagrams_received)),
        ("datagramsDropped", num(s.datagrams_dropped)),
        ("retransmissions", num(s.retransmissions)),
        ("httpBytesReceived", num(s.bytes_from_origin)),
        ("originRequests", num(s.origin_requests)),
        ("chunksOriginCorrupt", num(s.chunks_origin_corrupt)),
        ("originHeldMs", num(s.origin_held_ms)),
        ("chunksEvicted", num(s.chunks_evicted)),
        ("chunksRestored", num(s.chunks_restored)),
        ("bytesRestored", num(s.bytes_restored)),
        ("chunksSavedCorrupt", num(s.chunks_saved_corrupt)),
        ("peers", num(s.peers as u64)),
        ("wasmMemoryBytes", num(wasm_memory_bytes())),
    ])
}

/// The module's WebAssembly memory in bytes. It grows and never shrinks, and it is where
/// the engine holds its chunks: the page's JavaScript memory figures leave it out, and
/// with the engine in a Worker the page cannot see it at all.
fn wasm_memory_bytes() -> u64 {
    #[cfg(target_arch = "wasm32")]
    let pages = core::arch::wasm32::memory_size(0) as u64;
    #[cfg(not(target_arch = "wasm32"))]
    let pages = 0;
    pages * 65_536
}

pub fn channel_stats_object(channels: &[ChannelStats<u32>]) -> JsValue {
    channels
        .iter()
        .map(|c| {
            object(&[
                ("peer", c.peer.into()),
                ("established", c.established.into()),
                (
                    "state",
                    match c.send_state {
                        SendState::PingPong => "ping-pong",
                        SendState::Window(Phase::SlowStart) => "slow-start",
                        SendState::Window(Phase::Avoidance) => "avoidance",
                        SendState::KeepAlive => "keep-alive",
                    }
                    .into(),
                ),
                ("cwnd", c.cwnd.into()),
                ("rttMs", ms(c.srtt)),
                ("queuingDelayMs", c.queuing_delay.map_or(JsValue::NULL, ms)),
                ("priority", c.priority.into()),
                ("inFlight", num(c.in_flight as u64)),
                ("requestsOutstanding", num(c.requests_outstanding as u64)),
                ("chokedByPeer", c.choked_by_peer.into()),
                ("choking", c.choking.into()),
                ("serveQueue", num(c.serve_queue as u64)),
                ("peerChunks", num(c.peer_chunks)),
                ("bytesUploaded", num(c.bytes_uploaded)),
                ("bytesDownloaded", num(c.bytes_downloaded)),
            ])
        })
        .collect::<Array>()
        .into()
}
