//! Engines over in-memory stores, built from a content's Merkle tree.

use ppspp::engine::{ContentInfo, Engine, EngineConfig};
use ppspp::merkle::MerkleTree;
use ppspp::store::MemoryStore;
use ppspp::time::Time;

/// The metadata a leecher of `tree`'s content is given.
pub fn info(tree: &MerkleTree) -> ContentInfo {
    ContentInfo {
        root: tree.root(),
        hash: tree.algorithm(),
        chunk_size: tree.chunk_size() as u32,
        content_len: tree.content_len(),
    }
}

/// A leecher of `tree`'s content with `config`, holding nothing, at time zero.
pub fn leecher_with(tree: &MerkleTree, config: EngineConfig) -> Engine<u32, MemoryStore> {
    Engine::new(
        config,
        info(tree),
        MemoryStore::new(tree.content_len() as usize, tree.chunk_size()),
        Time::ZERO,
    )
    .unwrap()
}
