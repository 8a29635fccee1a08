//! What a [`Discovery`](super::Discovery) reports: the content it learnt, or why each peer
//! could not describe it.

use super::ContentInfo;
use super::misbehaviour::HandshakeMismatch;
use crate::merkle::VerifyError;
use core::fmt;

/// Why a [`Discovery`](super::Discovery) cannot be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoveryConfigError {
    /// The root's length (in bytes) matches no Merkle hash function.
    RootLength(usize),
    /// A candidate chunk size of 0.
    ZeroChunkSize,
}

impl fmt::Display for DiscoveryConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoveryConfigError::RootLength(len) => write!(
                f,
                "a root hash of {} hex digits matches no Merkle hash function (SHA-1: 40, SHA-224: 56, SHA-256: 64, SHA-384: 96, SHA-512: 128)",
                2 * len
            ),
            DiscoveryConfigError::ZeroChunkSize => f.write_str("chunk size 0"),
        }
    }
}

impl std::error::Error for DiscoveryConfigError {}

/// Why one peer could not describe the content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeFailure {
    /// No answer to our handshakes on any of these chunk sizes.
    NoAnswer {
        /// The chunk sizes tried, in bytes.
        chunk_sizes: Vec<u32>,
    },
    /// Its transport closed.
    ConnectionLost,
    /// It closed the channel.
    Closed,
    /// Its handshake cannot work with the swarm.
    Handshake(HandshakeMismatch),
    /// It sent a datagram that does not decode.
    Malformed,
    /// It sent DATA naming no chunk.
    DataWithoutChunks,
    /// It sent a chunk index no bin can hold.
    ChunkOutOfRange,
    /// Its peak hashes do not rebuild the root.
    BadPeaks,
    /// A chunk failed verification.
    BadChunk {
        /// The chunk index.
        chunk: u64,
        /// Why it failed.
        reason: VerifyError,
    },
    /// It announced no chunk in time.
    AnnouncedNothing,
    /// It did not deliver the chunk asked for, after every retry.
    NotDelivered {
        /// The chunk index asked for.
        chunk: u64,
    },
}

impl fmt::Display for ProbeFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeFailure::NoAnswer { chunk_sizes } => {
                f.write_str("no answer: not in this swarm, or its chunk size is none of ")?;
                for (i, s) in chunk_sizes.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{s}")?;
                }
                f.write_str(" bytes")
            }
            ProbeFailure::ConnectionLost => f.write_str("connection lost"),
            ProbeFailure::Closed => f.write_str("closed the channel"),
            ProbeFailure::Handshake(m) => m.fmt(f),
            ProbeFailure::Malformed => f.write_str("sent a datagram that does not decode"),
            ProbeFailure::DataWithoutChunks => f.write_str("sent DATA without chunks"),
            ProbeFailure::ChunkOutOfRange => f.write_str("sent a chunk index out of range"),
            ProbeFailure::BadPeaks => f.write_str("sent peak hashes that do not match the root"),
            ProbeFailure::BadChunk { chunk, reason } => {
                write!(f, "chunk {chunk} failed verification: {reason}")
            }
            ProbeFailure::AnnouncedNothing => f.write_str("announced no chunks"),
            ProbeFailure::NotDelivered { chunk } => write!(f, "did not deliver chunk {chunk}"),
        }
    }
}

/// Why discovery failed: every peer was tried and none could say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveryError<A> {
    /// Each peer tried and what went wrong with it.
    pub failures: Vec<(A, ProbeFailure)>,
}

impl<A: fmt::Display> fmt::Display for DiscoveryError<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no peer could describe the content")?;
        for (i, (peer, why)) in self.failures.iter().enumerate() {
            let sep = if i == 0 { ": " } else { "; " };
            write!(f, "{sep}{peer}: {why}")?;
        }
        Ok(())
    }
}

impl<A: fmt::Debug + fmt::Display> std::error::Error for DiscoveryError<A> {}

/// What a [`Discovery`](super::Discovery) reports through `poll_event`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoveryEvent<A> {
    /// A peer proved the content's chunk size and length: build the engine with it.
    Found(ContentInfo),
    /// Every peer connected so far has failed. More peers may still be connected, and one
    /// of them may still answer.
    AllFailed(DiscoveryError<A>),
}
