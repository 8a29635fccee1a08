//! What identifies a live stream and how it is cut and signed: what the source chooses and
//! every viewer must know (the live URI and the presentation's records carry it).

use super::key::LivePublicKey;
use crate::merkle::HashAlgorithm;

/// Chunks a live stream can address (chunk32 addressing): the engine's address space.
pub const LIVE_CHUNKS: u64 = u32::MAX as u64;

/// Seconds from the NTP era (1900) to the Unix epoch.
const NTP_UNIX_OFFSET: u64 = 2_208_988_800;

/// A 64-bit NTP timestamp for `micros` since the Unix epoch.
pub fn ntp_from_unix_micros(micros: u64) -> u64 {
    let secs = micros / 1_000_000 + NTP_UNIX_OFFSET;
    let frac = ((micros % 1_000_000) << 32) / 1_000_000;
    (secs << 32) | frac
}

/// Microseconds since the Unix epoch for a 64-bit NTP timestamp (0 before the epoch).
pub fn unix_micros_from_ntp(ntp: u64) -> u64 {
    let secs = (ntp >> 32).saturating_sub(NTP_UNIX_OFFSET);
    let frac = ((ntp & 0xFFFF_FFFF) * 1_000_000) >> 32;
    secs * 1_000_000 + frac
}

/// How a live stream is cut and signed: what the source chooses and every viewer must
/// know (the live URI carries it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveParams {
    /// The Merkle hash function.
    pub hash: HashAlgorithm,
    /// Chunk size in bytes (the last chunk of a stream may be shorter).
    pub chunk_size: u32,
    /// Chunks under one signed munro: a power of two from 2 to 65536 (the Unified Merkle
    /// Tree), or 1: every chunk signed itself, over its bytes (Sign All,
    /// [`SIGN_ALL`](crate::live::SIGN_ALL)).
    pub chunks_per_signature: u64,
    /// Chunks kept behind the live edge (handshake option 7).
    pub discard_window: u64,
}

/// What identifies a live stream: the source's key and how the stream is cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveInfo {
    /// The source's public key, which is the swarm ID.
    pub key: LivePublicKey,
    /// Chunking and signing.
    pub params: LiveParams,
}

impl LiveParams {
    /// Whether every chunk is signed itself (Sign All) rather than under munros.
    pub fn signs_every_chunk(&self) -> bool {
        self.chunks_per_signature == super::SIGN_ALL
    }
}
