//! A memory store that also checks every write against the original content, so a run
//! can prove that nothing unverified ever reached a store.

use ppspp::store::{ChunkStore, MemoryStore, StoreError, chunk_span};
use std::sync::Arc;

pub struct CheckedStore {
    inner: MemoryStore,
    original: Arc<Vec<u8>>,
    chunk_size: usize,
    /// Chunks written whose bytes differ from the original.
    pub corrupt_writes: u64,
    pub writes: u64,
}

impl CheckedStore {
    /// An empty store for a leecher.
    pub fn empty(original: Arc<Vec<u8>>, chunk_size: usize) -> CheckedStore {
        CheckedStore {
            inner: MemoryStore::new(original.len(), chunk_size),
            original,
            chunk_size,
            corrupt_writes: 0,
            writes: 0,
        }
    }

    /// A full store for a seeder.
    pub fn full(original: Arc<Vec<u8>>, chunk_size: usize) -> CheckedStore {
        CheckedStore {
            inner: MemoryStore::with_content(original.to_vec(), chunk_size),
            original,
            chunk_size,
            corrupt_writes: 0,
            writes: 0,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        self.inner.bytes()
    }

    /// True when the store holds exactly the original content.
    pub fn matches_original(&self) -> bool {
        self.inner.bytes() == &self.original[..]
    }
}

impl ChunkStore for CheckedStore {
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError> {
        self.writes += 1;
        let ok = chunk_span(self.original.len() as u64, self.chunk_size, chunk)
            .is_some_and(|r| self.original[r.start as usize..r.end as usize] == *data);
        if !ok {
            self.corrupt_writes += 1;
        }
        self.inner.write_chunk(chunk, data)
    }

    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        self.inner.read_chunk(chunk, out)
    }
}
