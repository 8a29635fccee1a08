//! Where verified chunks live. The engine writes a chunk only after it verified it against
//! the Merkle root, and reads chunks back to serve them; adapters bring their own storage
//! (memory here, files natively, IndexedDB or memory in browsers).

use core::fmt;
use std::collections::BTreeMap;

/// Why a store could not complete an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The chunk index lies past the content.
    OutOfRange {
        /// The chunk index asked for.
        chunk: u64,
        /// Number of chunks in the content.
        chunks: u64,
    },
    /// The data is not the length this chunk has.
    WrongLength {
        /// The chunk index.
        chunk: u64,
        /// The chunk's length in bytes.
        expected: usize,
        /// Length of the data given, in bytes.
        got: usize,
    },
    /// The adapter's storage failed (disk full, quota exceeded…).
    Backend(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::OutOfRange { chunk, chunks } => {
                write!(
                    f,
                    "chunk {chunk} is past the end of the content ({chunks} chunks)"
                )
            }
            StoreError::WrongLength {
                chunk,
                expected,
                got,
            } => {
                write!(f, "chunk {chunk} must be {expected} bytes, not {got}")
            }
            StoreError::Backend(msg) => write!(f, "storage failed: {msg}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Storage for the chunks of one piece of content with a known size.
pub trait ChunkStore {
    /// Stores a verified chunk.
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError>;
    /// Appends chunk `chunk` to `out` and returns true, or returns false if it is not held.
    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError>;
    /// Lets go of chunk `chunk` (the engine keeps within
    /// [`EngineConfig::max_held_bytes`](crate::engine::EngineConfig::max_held_bytes)); a
    /// store that cannot free space may keep it.
    fn evict_chunk(&mut self, _chunk: u64) {}
}

/// The byte range of `chunk` in content of `len` bytes cut into `chunk_size`-byte chunks,
/// or `None` past the end.
pub fn chunk_span(len: u64, chunk_size: usize, chunk: u64) -> Option<core::ops::Range<u64>> {
    let size = chunk_size as u64;
    let start = chunk.checked_mul(size)?;
    if start >= len {
        return None;
    }
    Some(start..(start + size).min(len))
}

/// The byte range where `data` for `chunk` goes, after checking the chunk exists and the
/// data has its exact length: the checks every store makes before writing.
pub fn checked_span(
    len: u64,
    chunk_size: usize,
    chunk: u64,
    data_len: usize,
) -> Result<core::ops::Range<u64>, StoreError> {
    let span = chunk_span(len, chunk_size, chunk).ok_or(StoreError::OutOfRange {
        chunk,
        chunks: chunk_count(len, chunk_size),
    })?;
    let expected = (span.end - span.start) as usize;
    if expected != data_len {
        return Err(StoreError::WrongLength {
            chunk,
            expected,
            got: data_len,
        });
    }
    Ok(span)
}

/// Chunks of content of `len` bytes (zero for empty content).
pub fn chunk_count(len: u64, chunk_size: usize) -> u64 {
    len.div_ceil(chunk_size.max(1) as u64)
}

/// The whole content in one buffer: what browsers and tests use.
#[derive(Clone)]
pub struct MemoryStore {
    data: Vec<u8>,
    held: Vec<bool>,
    chunk_size: usize,
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("len", &self.data.len())
            .field("chunk_size", &self.chunk_size)
            .field("held", &self.held.iter().filter(|h| **h).count())
            .finish()
    }
}

impl MemoryStore {
    /// An empty store for content of `len` bytes.
    pub fn new(len: usize, chunk_size: usize) -> MemoryStore {
        let chunk_size = chunk_size.max(1);
        MemoryStore {
            data: vec![0; len],
            held: vec![false; chunk_count(len as u64, chunk_size) as usize],
            chunk_size,
        }
    }

    /// A store holding all of `content` (a seeder's).
    pub fn with_content(content: Vec<u8>, chunk_size: usize) -> MemoryStore {
        let chunk_size = chunk_size.max(1);
        let chunks = chunk_count(content.len() as u64, chunk_size) as usize;
        MemoryStore {
            data: content,
            held: vec![true; chunks],
            chunk_size,
        }
    }

    /// The content buffer (chunks not held are zeros).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// The content buffer, taken out of the store (chunks not held are zeros).
    pub fn into_bytes(self) -> Vec<u8> {
        self.data
    }

    /// Whether chunk `chunk` has been written (or came with the content).
    pub fn holds(&self, chunk: u64) -> bool {
        usize::try_from(chunk)
            .ok()
            .and_then(|i| self.held.get(i))
            .copied()
            .unwrap_or(false)
    }

    fn span(&self, chunk: u64) -> Result<core::ops::Range<usize>, StoreError> {
        chunk_span(self.data.len() as u64, self.chunk_size, chunk)
            .map(|r| r.start as usize..r.end as usize)
            .ok_or(StoreError::OutOfRange {
                chunk,
                chunks: self.held.len() as u64,
            })
    }
}

impl ChunkStore for MemoryStore {
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError> {
        let span = checked_span(self.data.len() as u64, self.chunk_size, chunk, data.len())?;
        let span = span.start as usize..span.end as usize;
        self.data[span].copy_from_slice(data);
        self.held[chunk as usize] = true;
        Ok(())
    }

    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        let span = self.span(chunk)?;
        if !self.held[chunk as usize] {
            return Ok(false);
        }
        out.extend_from_slice(&self.data[span]);
        Ok(true)
    }

    fn evict_chunk(&mut self, chunk: u64) {
        if let Some(h) = usize::try_from(chunk)
            .ok()
            .and_then(|i| self.held.get_mut(i))
        {
            *h = false;
        }
    }
}

/// Chunks in memory one by one, allocated as they are written and freed as they are
/// evicted: memory follows what is held, not the content's size (a page playing a long
/// video within a bound).
#[derive(Clone, Debug)]
pub struct SparseStore {
    chunks: BTreeMap<u64, Box<[u8]>>,
    len: u64,
    chunk_size: usize,
    held_bytes: u64,
    /// A live stream's store: any chunk may be short (the stream's length is not known).
    live: bool,
}

impl SparseStore {
    /// An empty store for content of `len` bytes.
    pub fn new(len: u64, chunk_size: usize) -> SparseStore {
        SparseStore {
            chunks: BTreeMap::new(),
            len,
            chunk_size: chunk_size.max(1),
            held_bytes: 0,
            live: false,
        }
    }

    /// The length of held chunk `chunk` (a live chunk may be short).
    pub fn chunk_len(&self, chunk: u64) -> Option<usize> {
        self.chunks.get(&chunk).map(|c| c.len())
    }

    /// An empty store for a live stream
    /// ([`Engine::new_live`](crate::engine::Engine::new_live)): chunks anywhere in its
    /// address space, of 1 to `chunk_size` bytes.
    pub fn live(chunk_size: usize) -> SparseStore {
        let chunk_size = chunk_size.max(1);
        SparseStore {
            live: true,
            ..SparseStore::new(
                crate::live::LIVE_CHUNKS.saturating_mul(chunk_size as u64),
                chunk_size,
            )
        }
    }

    /// Bytes of the chunks held.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Whether chunk `chunk` is held.
    pub fn holds(&self, chunk: u64) -> bool {
        self.chunks.contains_key(&chunk)
    }

    /// Appends bytes `range` of the content to `out` and returns true, or returns false
    /// (appending nothing) if a chunk of it is not held or it lies past the end.
    pub fn read_range(&self, range: core::ops::Range<u64>, out: &mut Vec<u8>) -> bool {
        if range.start > range.end || range.end > self.len {
            return false;
        }
        if range.is_empty() {
            return true;
        }
        let cs = self.chunk_size as u64;
        let (first, last) = (range.start / cs, (range.end - 1) / cs);
        if !(first..=last).all(|c| self.chunks.contains_key(&c)) {
            return false;
        }
        out.reserve((range.end - range.start) as usize);
        for (&c, data) in self.chunks.range(first..=last) {
            let at = c * cs;
            let from = range.start.max(at) - at;
            let to = range.end.min(at + data.len() as u64) - at;
            out.extend_from_slice(&data[from as usize..to as usize]);
        }
        true
    }
}

impl ChunkStore for SparseStore {
    fn write_chunk(&mut self, chunk: u64, data: &[u8]) -> Result<(), StoreError> {
        if self.live && !data.is_empty() && data.len() <= self.chunk_size {
            // Checked for the address only: a live chunk may be short.
            checked_span(self.len, self.chunk_size, chunk, self.chunk_size)?;
        } else {
            checked_span(self.len, self.chunk_size, chunk, data.len())?;
        }
        if let Some(old) = self.chunks.insert(chunk, data.into()) {
            self.held_bytes -= old.len() as u64;
        }
        self.held_bytes += data.len() as u64;
        Ok(())
    }

    fn read_chunk(&mut self, chunk: u64, out: &mut Vec<u8>) -> Result<bool, StoreError> {
        if chunk_span(self.len, self.chunk_size, chunk).is_none() {
            return Err(StoreError::OutOfRange {
                chunk,
                chunks: chunk_count(self.len, self.chunk_size),
            });
        }
        match self.chunks.get(&chunk) {
            Some(data) => {
                out.extend_from_slice(data);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn evict_chunk(&mut self, chunk: u64) {
        if let Some(old) = self.chunks.remove(&chunk) {
            self.held_bytes -= old.len() as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_counts() {
        assert_eq!(chunk_count(0, 1024), 0);
        assert_eq!(chunk_count(26121, 1024), 26);
        assert_eq!(chunk_span(26121, 1024, 25), Some(25600..26121));
        assert_eq!(chunk_span(26121, 1024, 26), None);
        assert_eq!(chunk_span(10, 4, u64::MAX), None);
    }

    #[test]
    fn memory_store_round_trip_and_errors() {
        let mut s = MemoryStore::new(10, 4);
        let mut out = Vec::new();
        assert_eq!(s.read_chunk(1, &mut out), Ok(false));
        assert!(s.write_chunk(1, b"abcd").is_ok());
        assert_eq!(s.read_chunk(1, &mut out), Ok(true));
        assert_eq!(out, b"abcd");
        assert_eq!(
            s.write_chunk(2, b"abcd"),
            Err(StoreError::WrongLength {
                chunk: 2,
                expected: 2,
                got: 4
            })
        );
        assert_eq!(
            s.write_chunk(3, b"x"),
            Err(StoreError::OutOfRange {
                chunk: 3,
                chunks: 3
            })
        );
        assert!(!s.holds(2) && s.holds(1) && !s.holds(u64::MAX));
        let full = MemoryStore::with_content(b"0123456789".to_vec(), 4);
        assert!(full.holds(2));
        s.evict_chunk(1);
        assert!(!s.holds(1));
        assert_eq!(s.read_chunk(1, &mut out), Ok(false));
    }

    #[test]
    fn sparse_store_holds_what_it_is_given_and_frees_what_goes() {
        let mut s = SparseStore::new(10, 4);
        let mut out = Vec::new();
        assert_eq!(s.read_chunk(0, &mut out), Ok(false));
        s.write_chunk(0, b"abcd").unwrap();
        s.write_chunk(2, b"ij").unwrap();
        assert_eq!(s.held_bytes(), 6);
        assert!(!s.read_range(2..9, &mut out), "chunk 1 is missing");
        assert!(out.is_empty());
        s.write_chunk(1, b"efgh").unwrap();
        s.write_chunk(1, b"efgh").unwrap();
        assert_eq!(s.held_bytes(), 10, "a chunk written again counts once");
        assert!(s.read_range(2..9, &mut out));
        assert_eq!(out, b"cdefghi");
        assert!(!s.read_range(2..11, &mut out), "past the end");
        s.evict_chunk(1);
        s.evict_chunk(1);
        assert_eq!((s.held_bytes(), s.holds(1)), (6, false));
        assert_eq!(
            s.write_chunk(2, b"ijk"),
            Err(StoreError::WrongLength {
                chunk: 2,
                expected: 2,
                got: 3
            })
        );
        assert!(matches!(
            s.read_chunk(3, &mut out),
            Err(StoreError::OutOfRange { chunk: 3, .. })
        ));
    }
}
