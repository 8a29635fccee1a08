//! What can go wrong in `ppspp live` and in recording a live stream (`ppspp fetch --live`),
//! and with the source's key file: callers can tell a bad key file from a failed read of
//! the stream without reading messages. Each variant's text is the one users have always
//! seen.

use super::segmenter::SegmentError;
use crate::fetch::PeerError;
use crate::serve::ServeError;
use ppspp::engine::EngineError;
use ppspp::live::KeyError;
use ppspp::uri::UriError;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The source's signing key file could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// `--algorithm`, or the algorithm named in a key file.
    #[error("{0:?} is not a live signature algorithm (ecdsa-p256 or ed25519)")]
    UnknownAlgorithm(String),
    #[error("cannot read the key {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Only comments and blank lines.
    #[error("{} holds no key", .0.display())]
    NoKey(PathBuf),
    #[error("{}: expected `<algorithm> <secret hex>`", .0.display())]
    NotAKeyLine(PathBuf),
    #[error("{}: the secret is not hexadecimal", .0.display())]
    SecretNotHex(PathBuf),
    /// A secret of the wrong length, or no valid key of its algorithm.
    #[error("{}: {source}", .path.display())]
    BadSecret {
        path: PathBuf,
        #[source]
        source: KeyError,
    },
    #[error("no randomness for a key: {0}")]
    NoRandomness(#[source] getrandom::Error),
    /// The file exists already (never overwritten) or cannot be made.
    #[error("cannot create the key {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write the key {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// A chunk size that does not fit a live stream's 32-bit parameter.
#[derive(Debug, thiserror::Error)]
#[error("chunk size too large")]
pub struct ChunkSizeTooLarge;

/// Why the stream on stdin could not be read or cut into chunks.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("reading stdin: {0}")]
    Read(#[source] io::Error),
    #[error("{0}")]
    Segment(#[source] SegmentError),
}

/// Why `ppspp live` stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Listen(#[from] ServeError),
    #[error(transparent)]
    ChunkSize(#[from] ChunkSizeTooLarge),
    #[error(transparent)]
    Key(#[from] KeyFileError),
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] io::Error),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("the input ended before its first media segment")]
    NoMediaSegment,
    #[error("cannot start: {0}")]
    Start(#[source] EngineError),
    #[error(transparent)]
    Stdout(#[from] crate::StdoutError),
}

/// Why recording a live stream failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("not a usable live URI ({source}): {uri}")]
    BadUri {
        uri: String,
        #[source]
        source: UriError,
    },
    #[error("the live URI's init= is neither WebM nor MP4")]
    InitNotMedia,
    #[error(transparent)]
    Peers(#[from] PeerError),
    #[error(
        "no peer to record from: the URI names no udp= peer and no signal= server; add --udp HOST:PORT or --signal ws://HOST:PORT"
    )]
    NoPeerInUri,
    /// The signaling server's room had nobody else in it (the URL joined).
    #[error("no peer to record from: nobody else is in the stream's room at {0}")]
    NobodyInRoom(String),
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] io::Error),
    /// A link planted in place of the output could make us write anywhere.
    #[error("{} is a link to something that is not a file; name the file, pipe or device itself", .0.display())]
    LinkToNonFile(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot bind UDP {addr}: {source}")]
    BindUdp {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error("cannot start: {0}")]
    Start(#[source] EngineError),
    #[error(
        "nothing recorded: no media segment arrived ({verified} chunks verified, {rejected} rejected)"
    )]
    NothingRecorded { verified: u64, rejected: u64 },
}
