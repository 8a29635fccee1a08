//! Errors of building and verifying Merkle trees.

use core::fmt;

use crate::Bin;

/// A tree could not be built (bad parameters given by the local user, not by a peer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MerkleError {
    /// The chunk size is 0.
    ZeroChunkSize,
    /// The content is empty: PPSPP has no tree (and no root) for zero chunks.
    EmptyContent,
    /// More than 2^63 chunks: beyond the bin number space.
    TooManyChunks,
    /// `from_leaf_hashes` got a number of leaves that does not match the content length.
    LeafCountMismatch {
        /// Chunks in the content.
        expected: u64,
        /// Leaf hashes given.
        got: u64,
    },
    /// A hash does not have the algorithm's size.
    WrongHashLength {
        /// The algorithm's hash size, in bytes.
        expected: usize,
        /// The hash's length, in bytes.
        got: usize,
    },
}

impl fmt::Display for MerkleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MerkleError::ZeroChunkSize => f.write_str("chunk size is zero"),
            MerkleError::EmptyContent => f.write_str("content is empty (no chunks to hash)"),
            MerkleError::TooManyChunks => f.write_str("content has more than 2^63 chunks"),
            MerkleError::LeafCountMismatch { expected, got } => {
                write!(f, "content needs {expected} leaf hashes, got {got}")
            }
            MerkleError::WrongHashLength { expected, got } => {
                write!(f, "hash is {got} bytes, algorithm needs {expected}")
            }
        }
    }
}

impl core::error::Error for MerkleError {}

/// A chunk or hash from a peer was rejected; the [`VerifyingTree`](super::VerifyingTree) is
/// unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyError {
    /// The content size (chunk count) is not known yet: peaks must come first.
    SizeUnknown,
    /// The chunk index is past the end of the content.
    OutOfRange {
        /// The chunk index.
        chunk: u64,
        /// Chunks in the content.
        chunk_count: u64,
    },
    /// The chunk has the wrong length. For the last chunk of content whose length is not
    /// known yet, `expected` is the chunk size (the upper bound; 0 bytes is also refused).
    WrongLength {
        /// The chunk's length (or upper bound), in bytes.
        expected: usize,
        /// Length of the data given, in bytes.
        got: usize,
    },
    /// A hash has the wrong size for the algorithm.
    WrongHashLength {
        /// The tree node the hash was given for.
        bin: Bin,
        /// The algorithm's hash size, in bytes.
        expected: usize,
        /// The hash's length, in bytes.
        got: usize,
    },
    /// A hash needed to reach a verified node was not given.
    MissingHash(Bin),
    /// A hash was given for a bin that is not a sibling on this chunk's path to the root.
    HashNotOnPath(Bin),
    /// The same bin was given twice with different hashes.
    ConflictingHashes(Bin),
    /// The hash computed (or given) for `bin` differs from the verified one.
    Mismatch {
        /// The tree node whose hash differs.
        bin: Bin,
    },
    /// The peak hashes are not a valid peak list or do not rebuild the root.
    BadPeaks,
    /// A subtree's leaf hashes are not one per chunk it covers.
    WrongLeafCount {
        /// Chunks the subtree covers.
        expected: u64,
        /// Leaf hashes given.
        got: u64,
    },
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VerifyError::SizeUnknown => f.write_str("content size unknown: peak hashes needed"),
            VerifyError::OutOfRange { chunk, chunk_count } => {
                write!(f, "chunk {chunk} is past the end ({chunk_count} chunks)")
            }
            VerifyError::WrongLength { expected, got } => {
                write!(f, "chunk is {got} bytes, expected {expected}")
            }
            VerifyError::WrongHashLength { bin, expected, got } => {
                write!(
                    f,
                    "hash for bin {} is {got} bytes, expected {expected}",
                    bin.raw()
                )
            }
            VerifyError::MissingHash(bin) => write!(f, "missing hash for bin {}", bin.raw()),
            VerifyError::HashNotOnPath(bin) => {
                write!(f, "hash for bin {} is not on the chunk's path", bin.raw())
            }
            VerifyError::ConflictingHashes(bin) => {
                write!(f, "two different hashes for bin {}", bin.raw())
            }
            VerifyError::Mismatch { bin } => {
                write!(f, "hash mismatch at bin {}", bin.raw())
            }
            VerifyError::BadPeaks => f.write_str("peak hashes do not rebuild the root"),
            VerifyError::WrongLeafCount { expected, got } => {
                write!(f, "subtree covers {expected} chunks, got {got} leaf hashes")
            }
        }
    }
}

impl core::error::Error for VerifyError {}
