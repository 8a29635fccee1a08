//! Handshake options we send and what we accept (RFC 7574 §7).
//!
//! The profile is one libswift accepts: version 1 with min version 1, Merkle trees, the
//! hash function, chunk addressing; the swarm ID only from the initiator (libswift's reply
//! omits it too); the chunk-size option only when it differs from the 1024-byte default,
//! since draft-era peers such as libswift do not know option 9; no supported-messages
//! bitmap, since we support them all.

use super::ContentInfo;
use super::misbehaviour::HandshakeMismatch;
use crate::codec::{ChunkAddressing, ContentIntegrity, HandshakeOptions};
use crate::merkle::{Hash, HashAlgorithm};

/// The RFC's default chunk size, which needs no option.
const DEFAULT_CHUNK_SIZE: u32 = 1024;

/// What both ends of a channel must agree on; the content length is not among it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SwarmParams {
    pub root: Hash,
    pub hash: HashAlgorithm,
    pub chunk_size: u32,
}

impl From<&ContentInfo> for SwarmParams {
    fn from(c: &ContentInfo) -> SwarmParams {
        SwarmParams {
            root: c.root,
            hash: c.hash,
            chunk_size: c.chunk_size,
        }
    }
}

pub(crate) fn our_options<'a>(
    content: &SwarmParams,
    swarm_id: Option<&'a [u8]>,
    addressing: ChunkAddressing,
) -> HandshakeOptions<'a> {
    HandshakeOptions {
        version: Some(1),
        min_version: Some(1),
        swarm_id,
        content_integrity: Some(ContentIntegrity::MerkleTree),
        merkle_hash_function: Some(content.hash.wire_code()),
        chunk_addressing: Some(addressing),
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
        Some(id) if id != content.root.as_bytes() => {
            return Err(HandshakeMismatch::OtherSwarm);
        }
        None if initiator => return Err(HandshakeMismatch::NoSwarmId),
        _ => {}
    }
    if let Some(method) = options.content_integrity
        && method != ContentIntegrity::MerkleTree
    {
        return Err(HandshakeMismatch::ContentIntegrity(method));
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
