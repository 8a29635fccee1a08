//! What identifies a swarm's content: the metadata every peer must agree on, which a
//! `ppspp://` URI carries and the engine is built from.

use crate::merkle::{Hash, HashAlgorithm};

/// What identifies the content: the swarm metadata every peer must agree on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentInfo {
    /// The Merkle root, which is the swarm ID.
    pub root: Hash,
    /// The Merkle hash function.
    pub hash: HashAlgorithm,
    /// Chunk size in bytes (the last chunk may be shorter).
    pub chunk_size: u32,
    /// Content length in bytes.
    pub content_len: u64,
}
