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
            relay_only: false,
            stack: Stack::default(),
            max_conns: max_conns_for(ppspp::engine::EngineConfig::default().max_peers),
        }
    }
}

/// [`RtcConfig::max_conns`] for an engine that holds at most `max_peers` channels.
pub fn max_conns_for(max_peers: usize) -> usize {
    max_peers.saturating_mul(2).max(8)
}
