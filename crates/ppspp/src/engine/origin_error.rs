//! Why a request to the HTTP origin failed, as the adapter saw it: what the engine's
//! events report and its origin logic decides on.

use crate::merkle::tree_file::TreeFileError;
use core::fmt;

/// Why an origin request failed, as the adapter saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OriginError {
    /// The server answered a Range request with the whole file (status 200): it cannot
    /// serve ranges.
    NoRangeSupport,
    /// Any other HTTP status but 206 (404, 403, 500…).
    Status(u16),
    /// No response: the network, DNS, TLS, or (in a browser, which cannot tell these apart)
    /// a missing CORS header.
    Unreachable(String),
    /// No complete response in the adapter's time limit.
    Timeout,
    /// The response body is not the length asked for.
    WrongLength {
        /// Bytes asked for.
        expected: u64,
        /// Bytes received.
        got: u64,
    },
    /// The tree file does not describe this swarm's content, or a record of it does not
    /// verify against the root.
    BadTree(TreeFileError),
}

impl OriginError {
    /// True if trying again cannot help: the origin is then no longer used.
    pub fn is_permanent(&self) -> bool {
        match self {
            OriginError::NoRangeSupport => true,
            // Client errors stay; a timeout, rate limit or server error may pass.
            OriginError::Status(s) => (400..500).contains(s) && *s != 408 && *s != 429,
            OriginError::BadTree(e) => !matches!(e, TreeFileError::BadRecord { .. }),
            OriginError::Unreachable(_)
            | OriginError::Timeout
            | OriginError::WrongLength { .. } => false,
        }
    }
}

impl fmt::Display for OriginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OriginError::NoRangeSupport => {
                f.write_str("the server does not support Range requests (it sent the whole file)")
            }
            OriginError::Status(s) => write!(f, "the server answered HTTP {s}"),
            OriginError::Unreachable(why) => write!(f, "the server could not be reached: {why}"),
            OriginError::Timeout => f.write_str("the server did not answer in time"),
            OriginError::WrongLength { expected, got } => {
                write!(
                    f,
                    "the server sent {got} bytes where {expected} were asked for"
                )
            }
            OriginError::BadTree(e) => write!(f, "the tree file is not usable: {e}"),
        }
    }
}

impl core::error::Error for OriginError {}
