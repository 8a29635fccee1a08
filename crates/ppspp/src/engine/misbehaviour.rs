//! What a peer can do wrong: why its channel was closed or it was banned, and why its
//! handshake cannot work with our swarm.

use crate::codec::{ChunkAddressing, ContentIntegrity, DecodeError};
use crate::live::LiveError;
use crate::merkle::{HashAlgorithm, VerifyError};
use core::fmt;

/// A handshake option that rules the peer out of our swarm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandshakeMismatch {
    /// It speaks only a protocol version other than 1.
    Version(u8),
    /// It names another swarm.
    OtherSwarm,
    /// It opened a channel without naming the swarm.
    NoSwarmId,
    /// It protects content other than with a Merkle tree.
    ContentIntegrity(ContentIntegrity),
    /// Its Merkle hash function (wire code) is not the swarm's.
    HashFunction {
        /// The peer's hash function code.
        offered: u8,
        /// The swarm's hash function.
        ours: HashAlgorithm,
    },
    /// Its chunk size is not the swarm's.
    ChunkSize {
        /// The peer's chunk size, in bytes.
        offered: u32,
        /// The swarm's chunk size, in bytes.
        ours: u32,
    },
    /// Its live signature algorithm (DNSSEC number) is not the source's.
    SignatureAlgorithm {
        /// The peer's algorithm number (`None`: it named none).
        offered: Option<u8>,
        /// The source's.
        ours: u8,
    },
    /// On a live swarm, chunk addressing other than the source's: the munros' signatures
    /// cover chunk specifications as the source writes them.
    LiveAddressing(ChunkAddressing),
}

impl fmt::Display for HandshakeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeMismatch::Version(v) => write!(f, "protocol version {v} is not supported"),
            HandshakeMismatch::OtherSwarm => f.write_str("handshake for another swarm"),
            HandshakeMismatch::NoSwarmId => f.write_str("initiator did not name the swarm"),
            HandshakeMismatch::ContentIntegrity(m) => {
                write!(f, "content integrity method {m:?} is not supported")
            }
            HandshakeMismatch::HashFunction { offered, ours } => write!(
                f,
                "Merkle hash function {offered} differs from the swarm's ({ours})"
            ),
            HandshakeMismatch::ChunkSize { offered, ours } => {
                write!(f, "chunk size {offered} differs from the swarm's ({ours})")
            }
            HandshakeMismatch::SignatureAlgorithm { offered, ours } => match offered {
                Some(n) => write!(
                    f,
                    "live signature algorithm {n} differs from the source's ({ours})"
                ),
                None => write!(f, "no live signature algorithm (the source's is {ours})"),
            },
            HandshakeMismatch::LiveAddressing(a) => {
                write!(f, "chunk addressing {a:?} differs from the live source's")
            }
        }
    }
}

impl std::error::Error for HandshakeMismatch {}

/// Why a peer's channel was ended for breaking the rules
/// ([`CloseReason::Misbehaving`](super::CloseReason::Misbehaving)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Misbehaviour {
    /// Its handshake cannot work with our swarm.
    Handshake(HandshakeMismatch),
    /// It sent a datagram that does not decode (RFC 7574 §7 has no error messages: the
    /// peer is abandoned).
    Malformed(DecodeError),
    /// DATA for chunks outside the content.
    DataOutsideContent,
    /// DATA shorter than the chunks it names.
    DataTruncated {
        /// The first chunk whose bytes are missing.
        chunk: u64,
    },
    /// DATA longer than the chunks it names.
    DataTooLong,
    /// A chunk index no bin can hold.
    ChunkOutOfRange,
    /// A chunk failed verification against the root.
    BadChunk {
        /// The chunk index.
        chunk: u64,
        /// Why verification failed.
        reason: VerifyError,
    },
    /// A live chunk or munro broke the stream's rules: a signature not the source's, a
    /// stale timestamp, a munro of the wrong size, a chunk that does not hash up to its
    /// munro.
    Live(LiveError),
    /// It announced chunks and delivered none of them, through several request rounds.
    NeverDelivered,
    /// It delivered before, then none of what it announced for a long time.
    StoppedDelivering,
}

impl fmt::Display for Misbehaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Misbehaviour::Handshake(m) => m.fmt(f),
            Misbehaviour::Malformed(e) => e.fmt(f),
            Misbehaviour::DataOutsideContent => f.write_str("DATA outside the content"),
            Misbehaviour::DataTruncated { chunk } => {
                write!(f, "DATA for chunk {chunk} is truncated")
            }
            Misbehaviour::DataTooLong => f.write_str("DATA longer than its chunks"),
            Misbehaviour::ChunkOutOfRange => f.write_str("chunk index out of range"),
            Misbehaviour::BadChunk { chunk, reason } => {
                write!(f, "chunk {chunk} failed verification: {reason}")
            }
            Misbehaviour::Live(e) => write!(f, "live stream: {e}"),
            Misbehaviour::NeverDelivered => f.write_str("announced chunks it never delivered"),
            Misbehaviour::StoppedDelivering => {
                f.write_str("stopped delivering the chunks it announced")
            }
        }
    }
}

impl std::error::Error for Misbehaviour {}
