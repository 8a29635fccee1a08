//! Building blocks shared by tests and experiments: content, seeders, leechers, metrics.

use crate::net::SimEngine;
use crate::store::CheckedStore;
use ppspp::engine::{ContentInfo, Engine, EngineConfig};
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::rng::Rng;
use ppspp::time::Time;
use std::sync::Arc;

/// Content to share: pseudo-random bytes, their Merkle tree and swarm metadata.
pub struct Content {
    pub data: Arc<Vec<u8>>,
    pub tree: MerkleTree,
    pub info: ContentInfo,
    pub chunk_size: usize,
}

impl Content {
    pub fn new(len: usize, chunk_size: usize, seed: u64) -> Content {
        let mut rng = Rng::new(seed);
        let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        let tree = MerkleTree::from_content(HashAlgorithm::Sha1, chunk_size, &data)
            .expect("valid content");
        let info = ContentInfo {
            root: tree.root(),
            hash: HashAlgorithm::Sha1,
            chunk_size: chunk_size as u32,
            content_len: len as u64,
        };
        Content {
            data: Arc::new(data),
            tree,
            info,
            chunk_size,
        }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn seeder(&self, config: EngineConfig) -> SimEngine {
        Engine::new_seeder(
            config,
            &self.tree,
            CheckedStore::full(self.data.clone(), self.chunk_size),
            Time::ZERO,
        )
        .expect("valid seeder config")
    }

    pub fn leecher(&self, config: EngineConfig) -> SimEngine {
        Engine::new(
            config,
            self.info,
            CheckedStore::empty(self.data.clone(), self.chunk_size),
            Time::ZERO,
        )
        .expect("valid leecher config")
    }
}

/// Jain's fairness index of `xs`: 1 when all equal, 1/n when one takes everything.
pub fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if sq == 0.0 {
        return 1.0;
    }
    sum * sum / (xs.len() as f64 * sq)
}

/// An engine config with a seed and everything else default.
pub fn config(seed: u64) -> EngineConfig {
    EngineConfig {
        seed,
        ..EngineConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_bounds() {
        assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
        assert!((jain(&[3.0, 1.0]) - 0.8).abs() < 1e-12);
    }
}
