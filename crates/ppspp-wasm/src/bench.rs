//! The verification workload `make bench` times natively (examples/verify.rs) and in the
//! browser (`VerifyBench` in Wasm), so both sides measure exactly the same work.

use ppspp::Bin;
use ppspp::merkle::{Hash, HashAlgorithm, MerkleTree, VerifyingTree};
use wasm_bindgen::prelude::*;

/// A receiver verifying every chunk of `len` bytes once, in order, each with the hashes a
/// sender would send it (pruned by what the receiver already verified), as in a download.
#[wasm_bindgen]
#[derive(Debug)]
pub struct VerifyBench {
    alg: HashAlgorithm,
    root: Hash,
    chunk_size: usize,
    content: Vec<u8>,
    uncles: Vec<Vec<(Bin, Hash)>>,
}

#[wasm_bindgen]
impl VerifyBench {
    /// Makes the content and the sender's tree (not timed). `hash`: sha1, sha256, ….
    #[wasm_bindgen(constructor)]
    pub fn create(hash: &str, chunk_size: usize, len: usize) -> Result<VerifyBench, JsError> {
        VerifyBench::new(hash, chunk_size, len).map_err(|e| JsError::new(&e))
    }

    /// Verifies every chunk once against the root; returns the chunks verified.
    #[wasm_bindgen(js_name = run)]
    pub fn run_js(&self) -> f64 {
        self.run() as f64
    }

    /// Bytes verified per run.
    #[wasm_bindgen(getter)]
    pub fn bytes(&self) -> f64 {
        self.content.len() as f64
    }
}

impl VerifyBench {
    pub fn new(hash: &str, chunk_size: usize, len: usize) -> Result<VerifyBench, String> {
        let alg: HashAlgorithm = hash.parse().map_err(|_| format!("unknown hash {hash}"))?;
        if chunk_size == 0 || len == 0 {
            return Err("chunk size and length must be positive".into());
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let content: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let tree =
            MerkleTree::from_content(alg, chunk_size, &content).map_err(|e| e.to_string())?;
        // What a sender sends with each chunk to a receiver fetching in order: the uncles
        // it does not hold yet (found by running the receiver once here).
        let mut receiver = VerifyingTree::new(alg, tree.root(), chunk_size, len as u64)
            .map_err(|e| e.to_string())?;
        let mut uncles = Vec::new();
        for (i, chunk) in content.chunks(chunk_size).enumerate() {
            let u = tree.uncles(i as u64, |b| receiver.is_verified(b));
            receiver
                .verify_chunk(i as u64, chunk, &u)
                .map_err(|e| e.to_string())?;
            uncles.push(u);
        }
        Ok(VerifyBench {
            alg,
            root: tree.root(),
            chunk_size,
            content,
            uncles,
        })
    }

    pub fn run(&self) -> u64 {
        let Ok(mut receiver) = VerifyingTree::new(
            self.alg,
            self.root,
            self.chunk_size,
            self.content.len() as u64,
        ) else {
            return 0;
        };
        let mut verified = 0;
        for (i, chunk) in self.content.chunks(self.chunk_size).enumerate() {
            if receiver
                .verify_chunk(i as u64, chunk, &self.uncles[i])
                .is_ok()
            {
                verified += 1;
            }
        }
        verified
    }

    pub fn len(&self) -> usize {
        self.content.len()
    }

    pub fn is_empty(&self) -> bool {
        self.content.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifies_every_chunk() {
        let b = VerifyBench::new("sha256", 1024, 10_000).unwrap();
        assert_eq!(b.run(), 10);
        assert_eq!(b.run(), 10, "runs are independent");
        assert!(VerifyBench::new("md5", 1024, 10).is_err());
    }
}
