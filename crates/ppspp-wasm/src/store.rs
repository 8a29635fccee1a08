//! The browser peer's chunk store: the content in memory. Built with the test-only
//! `poison` feature it corrupts every chunk it serves (never what it keeps), so the e2e
//! suite can check that honest peers reject a poisoner and still finish.

use ppspp::store::{ChunkStore, MemoryStore, StoreError};

#[derive(Debug)]
pub struct ServeStore {
    inner: MemoryStore,
}

impl ServeStore {
    pub fn new(len: usize, chunk_size: usize) -> ServeStore {
        ServeStore {
            inner: MemoryStore::new(len, chunk_size),
        }
    }

    pub fn with_content(content: Vec<u8>, chunk_size: usize) -> ServeStore {
        ServeStore {
            inner: MemoryStore::with_content(content, chunk_size),
        }
    }

    /// The content (chunks not held yet are zeros).
    pub fn bytes(&self) -> &[u8] {
        self.inner.bytes()
    }
}

impl ChunkStore for ServeStore {
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError> {
        self.inner.write_chunk(chunk, data)
    }

    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        let start = out.len();
        let held = self.inner.read_chunk(chunk, out)?;
        if cfg!(feature = "poison") && held && out.len() > start {
            out[start] ^= 0xff;
        }
        Ok(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_what_it_keeps_unless_poisoned() {
        let mut s = ServeStore::with_content(b"abcdefgh".to_vec(), 4);
        let mut out = Vec::new();
        assert_eq!(s.read_chunk(1, &mut out), Ok(true));
        let expected: &[u8] = if cfg!(feature = "poison") {
            &[b'e' ^ 0xff, b'f', b'g', b'h']
        } else {
            b"efgh"
        };
        assert_eq!(out, expected);
        assert_eq!(s.bytes(), b"abcdefgh");
    }
}
