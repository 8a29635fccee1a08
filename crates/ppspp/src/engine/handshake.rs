//! Handshake options we send and what we accept (RFC 7574 §7).
//!
//! The profile is one libswift accepts: version 1 with min version 1, Merkle trees, the
//! hash function, chunk addressing; the swarm ID only from the initiator (libswift's reply
//! omits it too); the chunk-size option only when it differs from the 1024-byte default,
//! since draft-era peers such as libswift do not know option 9; no supported-messages
//! bitmap, since we support them all.
//!
//! A live swarm (digest §2.4) names the source's public key as its ID and adds its
//! integrity method (option 3: the Unified Merkle Tree, or Sign All), the signature
//! algorithm (5) and our discard window (7); the peer's method, algorithm and chunk
//! addressing must be the source's.

use super::ContentInfo;
use super::misbehaviour::HandshakeMismatch;
use crate::codec::{ChunkAddressing, ContentIntegrity, HandshakeOptions};
use crate::merkle::HashAlgorithm;

/// The RFC's default chunk size, which needs no option.
const DEFAULT_CHUNK_SIZE: u32 = 1024;

/// What both ends of a channel must agree on; the content length is not among it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SwarmParams<'a> {
    /// The root hash, or a live source's public key.
    pub swarm_id: &'a [u8],
    pub hash: HashAlgorithm,
    pub chunk_size: u32,
    pub live: Option<LiveHandshake>,
}

/// What a live swarm's handshake adds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LiveHandshake {
    /// The Unified Merkle Tree, or Sign All.
    pub integrity: ContentIntegrity,
    /// The DNSSEC number of the source's signature algorithm.
    pub algorithm: u8,
    /// Our discard window, in chunks.
    pub discard_window: u64,
    /// The addressing the munros' signatures were made in.
    pub addressing: ChunkAddressing,
}

impl SwarmParams<'_> {
    /// Static content's parameters.
    pub fn of_content(content: &ContentInfo) -> SwarmParams<'_> {
        SwarmParams {
            swarm_id: content.root.as_bytes(),
            hash: content.hash,
            chunk_size: content.chunk_size,
            live: None,
        }
    }
}

pub(crate) fn our_options<'a>(
    content: &SwarmParams,
    swarm_id: Option<&'a [u8]>,
    addressing: ChunkAddressing,
) -> HandshakeOptions<'a> {
    let integrity = match content.live {
        Some(l) => l.integrity,
        None => ContentIntegrity::MerkleTree,
    };
    HandshakeOptions {
        version: Some(1),
        min_version: Some(1),
        swarm_id,
        content_integrity: Some(integrity),
        merkle_hash_function: Some(content.hash.wire_code()),
        live_signature_algorithm: content.live.map(|l| l.algorithm),
        chunk_addressing: Some(addressing),
        live_discard_window: content.live.map(|l| l.discard_window),
        chunk_size: (content.chunk_size != DEFAULT_CHUNK_SIZE).then_some(content.chunk_size),
        ..HandshakeOptions::default()
    }
}

/// Checks a peer's handshake against our swarm; `Err` says why it cannot work.
/// `initiator` is true when the peer opened the channel (then it must name the swarm).
pub(crate) fn check_peer_options(
    content: &SwarmParams,
    options: &HandshakeOptions<'_>,
    initiator: bool,
) -> Result<(), HandshakeMismatch> {
    if let Some(v) = options.version
        && v != 1
        && options.min_version.is_none_or(|m| m > 1)
    {
        return Err(HandshakeMismatch::Version(v));
    }
    match options.swarm_id {
        Some(id) if id != content.swarm_id => {
            return Err(HandshakeMismatch::OtherSwarm);
        }
        None if initiator => return Err(HandshakeMismatch::NoSwarmId),
        _ => {}
    }
    match content.live {
        None => {
            if let Some(method) = options.content_integrity
                && method != ContentIntegrity::MerkleTree
            {
                return Err(HandshakeMismatch::ContentIntegrity(method));
            }
        }
        Some(live) => {
            // RFC 7574 §7.5: the Merkle tree is the default, so a live peer must say so.
            let method = options
                .content_integrity
                .unwrap_or(ContentIntegrity::MerkleTree);
            if method != live.integrity {
                return Err(HandshakeMismatch::ContentIntegrity(method));
            }
            if options.live_signature_algorithm != Some(live.algorithm) {
                return Err(HandshakeMismatch::SignatureAlgorithm {
                    offered: options.live_signature_algorithm,
                    ours: live.algorithm,
                });
            }
            let addressing = options.chunk_addressing.unwrap_or(live.addressing);
            if addressing != live.addressing {
                return Err(HandshakeMismatch::LiveAddressing(addressing));
            }
        }
    }
    // RFC 7574: SHA-1 when the option is absent.
    let hash = options.merkle_hash_function.unwrap_or(0);
    if hash != content.hash.wire_code() {
        return Err(HandshakeMismatch::HashFunction {
            offered: hash,
            ours: content.hash,
        });
    }
    let chunk_size = options.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE);
    if chunk_size != content.chunk_size {
        return Err(HandshakeMismatch::ChunkSize {
            offered: chunk_size,
            ours: content.chunk_size,
        });
    }
    Ok(())
}
