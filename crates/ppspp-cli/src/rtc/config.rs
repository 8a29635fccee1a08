//! `RtcConfig`: how a transport takes part (what it says of itself, which candidates and
//! stack, how many connections). Apart because the commands build it from their options
//! without needing anything else of the transport.

use super::peer_conn::Stack;

/// How a transport takes part: what it says of itself, which candidates it offers, which
/// WebRTC stack, how many connections it holds.
#[derive(Clone, Copy, Debug)]
pub struct RtcConfig {
    /// Say `"seeder": true` in offers and answers: browsers count what they get from
    /// seeders apart from what other viewers give them (offload figures).
    pub seeder: bool,
    /// Say `"dataBatch"` with this many bytes in offers and answers, and send a peer that
    /// said it too messages of several chunks up to the smaller of the two (0: one chunk
    /// per message, and say nothing); see `Engine::set_data_batching`.
    pub data_batch_bytes: usize,
    /// Offer relayed candidates only (no host candidate): reachable through TURN alone.
    pub relay_only: bool,
    /// The WebRTC implementation of new connections.
    pub stack: Stack,
    /// Offers are not answered while this many connections exist: each costs a WebRTC
    /// stack's state, and the engine serves only so many peers (those it refuses come back
    /// over their open connection, so room is left for them and for those being set up).
    pub max_conns: usize,
}

impl Default for RtcConfig {
    fn default() -> Self {
        RtcConfig {
            seeder: false,
            data_batch_bytes: DEFAULT_DATA_BATCH_BYTES,
            relay_only: false,
            stack: Stack::default(),
            max_conns: max_conns_for(ppspp::engine::EngineConfig::default().max_peers),
        }
    }
}

/// The default [`RtcConfig::data_batch_bytes`], the browser package's too: three 8 KiB
/// chunks with their hashes.
pub const DEFAULT_DATA_BATCH_BYTES: usize = 32_768;

/// The longest datagram the engine reads.
pub const MAX_DATA_BATCH_BYTES: usize = 65_536;

/// A remote's `dataBatch` (untrusted): a whole number of bytes the engine reads, else 0.
pub fn data_batch_of(data: &serde_json::Value) -> usize {
    data.get("dataBatch")
        .and_then(serde_json::Value::as_u64)
        .filter(|&n| n > 0 && n <= MAX_DATA_BATCH_BYTES as u64)
        .map_or(0, |n| n as usize)
}

/// [`RtcConfig::max_conns`] for an engine that holds at most `max_peers` channels.
pub fn max_conns_for(max_peers: usize) -> usize {
    max_peers.saturating_mul(2).max(8)
}
