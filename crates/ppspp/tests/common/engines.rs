//! Engines over in-memory stores, built from a content's Merkle tree.

use ppspp::engine::{ContentInfo, Engine, EngineConfig, Event, PickerKind};
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::{ChunkStore, MemoryStore, SparseStore};
use ppspp::time::Time;

/// Every event `node` has to tell, in order.
pub fn events<S: ChunkStore>(node: &mut Engine<u32, S>) -> Vec<Event<u32>> {
    std::iter::from_fn(|| node.poll_event()).collect()
}

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

/// A seeder of `data` (the content of `tree`) over a chunk-by-chunk store.
pub fn sparse_seeder(tree: &MerkleTree, data: &[u8]) -> Engine<u32, SparseStore> {
    let cs = tree.chunk_size();
    let mut store = SparseStore::new(data.len() as u64, cs);
    for (i, chunk) in data.chunks(cs).enumerate() {
        store.write_chunk(i as u64, chunk).unwrap();
    }
    let config = EngineConfig {
        seed: 1,
        ..EngineConfig::default()
    };
    Engine::new_seeder(config, tree, store, Time::ZERO).unwrap()
}

/// A video leecher of `tree`'s content (a VoD window of 16 chunks) over a chunk-by-chunk
/// store, holding at most `bound` bytes if given.
pub fn sparse_leecher(
    tree: &MerkleTree,
    seed: u64,
    bound: Option<u64>,
) -> Engine<u32, SparseStore> {
    let config = EngineConfig {
        seed,
        picker: PickerKind::Vod { window: 16 },
        max_held_bytes: bound,
        ..EngineConfig::default()
    };
    let store = SparseStore::new(tree.content_len(), tree.chunk_size());
    Engine::new(config, info(tree), store, Time::ZERO).unwrap()
}

/// A seeder (node 0, RNG seed 1) and a leecher (node 1, seed 2, connecting to it) of `data`
/// in chunks of `chunk_size`, SHA-1, both with `config`.
pub fn pair(data: &[u8], chunk_size: usize, config: EngineConfig) -> Vec<Engine<u32, MemoryStore>> {
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, chunk_size, data).unwrap();
    let seeder = Engine::new_seeder(
        EngineConfig {
            seed: 1,
            ..config.clone()
        },
        &tree,
        MemoryStore::with_content(data.to_vec(), chunk_size),
        Time::ZERO,
    )
    .unwrap();
    let mut leecher = leecher_with(&tree, EngineConfig { seed: 2, ..config });
    leecher.connect(0, Time::ZERO);
    vec![seeder, leecher]
}
