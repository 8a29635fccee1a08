//! The browser peer's chunk store: a seeder's content in one buffer, a fetcher's chunks one
//! by one as they come (memory follows what is held, so a bounded engine plays any length).
//! Built with the test-only `poison` feature it corrupts every chunk it serves (never what
//! it keeps), so the e2e suite can check that honest peers reject a poisoner and still
//! finish.

use ppspp::store::{ChunkStore, MemoryStore, SparseStore, StoreError};

#[derive(Debug)]
pub enum ServeStore {
    Seeding(MemoryStore),
    Fetching(SparseStore),
}

impl ServeStore {
    pub fn new(len: u64, chunk_size: usize) -> ServeStore {
        ServeStore::Fetching(SparseStore::new(len, chunk_size))
    }

    /// A live stream's chunks, held as they come and let go of behind the window.
    pub fn live(chunk_size: usize) -> ServeStore {
        ServeStore::Fetching(SparseStore::live(chunk_size))
    }

    pub fn with_content(content: Vec<u8>, chunk_size: usize) -> ServeStore {
        ServeStore::Seeding(MemoryStore::with_content(content, chunk_size))
    }

    /// Bytes `range` of the content, if every chunk of it is held.
    pub fn read_range(&self, range: core::ops::Range<u64>) -> Option<Vec<u8>> {
        match self {
            ServeStore::Seeding(s) => s
                .bytes()
                .get(range.start as usize..range.end as usize)
                .map(<[u8]>::to_vec),
            ServeStore::Fetching(s) => {
                let mut out = Vec::new();
                s.read_range(range, &mut out).then_some(out)
            }
        }
    }

    /// The length of held chunk `chunk` (a live chunk may be short).
    pub fn chunk_len(&self, chunk: u64) -> Option<usize> {
        match self {
            ServeStore::Fetching(s) => s.chunk_len(chunk),
            ServeStore::Seeding(_) => None,
        }
    }

    /// Held chunk `chunk` as kept (never poisoned: this is what the page itself plays).
    pub fn kept_chunk(&mut self, chunk: u64) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        matches!(self.inner().read_chunk(chunk, &mut out), Ok(true)).then_some(out)
    }

    fn inner(&mut self) -> &mut dyn ChunkStore {
        match self {
            ServeStore::Seeding(s) => s,
            ServeStore::Fetching(s) => s,
        }
    }
}

impl ChunkStore for ServeStore {
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError> {
        self.inner().write_chunk(chunk, data)
    }

    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        let start = out.len();
        let held = self.inner().read_chunk(chunk, out)?;
        if cfg!(feature = "poison") && held && out.len() > start {
            out[start] ^= 0xff;
        }
        Ok(held)
    }

    fn evict_chunk(&mut self, chunk: u64) {
        self.inner().evict_chunk(chunk);
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
        assert_eq!(s.read_range(0..8).as_deref(), Some(&b"abcdefgh"[..]));
        let mut f = ServeStore::new(8, 4);
        f.write_chunk(1, b"efgh").unwrap();
        assert_eq!(f.read_range(4..6).as_deref(), Some(&b"ef"[..]));
        assert_eq!(f.read_range(2..6), None);
        f.evict_chunk(1);
        assert_eq!(f.read_range(4..6), None);
    }
}
