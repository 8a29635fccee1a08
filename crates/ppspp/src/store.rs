//! Where verified chunks live. The engine writes a chunk only after it verified it against
//! the Merkle root, and reads chunks back to serve them; adapters bring their own storage
//! (memory here, files natively, IndexedDB or memory in browsers).

use core::fmt;

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
    }
}
