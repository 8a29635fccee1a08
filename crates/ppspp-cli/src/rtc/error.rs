//! What can go wrong in the WebRTC layer, as one error type for the transport and both
//! stacks' peer connections: callers can tell a remote's bad SDP from a local bind failure
//! without reading messages. Each variant's text is the one users have always seen.

use super::peer_conn::LocalCandidate;
use std::io;
use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum RtcError {
    /// The transport was asked to bind a wildcard address, which cannot be advertised as a
    /// host candidate.
    #[error("WebRTC needs a specific local IP to advertise, not {0}; pass --bind IP:PORT")]
    UnspecifiedBind(SocketAddr),
    /// The shared UDP socket could not be bound.
    #[error("cannot bind UDP {addr} for WebRTC: {error}")]
    Bind {
        addr: SocketAddr,
        #[source]
        error: io::Error,
    },
    /// The bound socket would not say its address.
    #[error("cannot read the bound address: {0}")]
    LocalAddr(#[source] io::Error),
    /// The stack refused one of our own candidates.
    #[error("bad candidate {candidate:?}: {reason}")]
    BadCandidate {
        candidate: LocalCandidate,
        reason: String,
    },
    /// The remote's offer is not SDP the stack can read.
    #[error("bad offer: {0}")]
    BadOffer(String),
    /// The remote's answer is not SDP the stack can read.
    #[error("bad answer: {0}")]
    BadAnswer(String),
    /// The stack read the remote's offer but would not apply it.
    #[error("cannot take the offer: {0}")]
    CannotTakeOffer(String),
    /// The stack could not answer the remote's offer.
    #[error("cannot answer the offer: {0}")]
    CannotAnswer(String),
    /// The stack read the remote's answer but would not apply it.
    #[error("cannot accept the answer: {0}")]
    CannotAcceptAnswer(String),
    /// An answer came with no offer of ours waiting for it.
    #[error("no offer is pending")]
    NoPendingOffer,
    /// The stack had nothing to offer (no data channel to negotiate).
    #[error("no offer to make")]
    NoOffer,
    /// Our own description lacks the ICE username fragment that demultiplexing needs.
    #[error("our description has no ICE username fragment")]
    NoIceUfrag,
    /// A step of setting up our side failed in the stack: `step` says which ("make a peer
    /// connection", "make the data channel", …).
    #[error("cannot {step}: {reason}")]
    Setup { step: &'static str, reason: String },
    /// A datagram the stack cannot take as input at all.
    #[error("bad datagram: {0}")]
    BadDatagram(String),
    /// The stack refused an input (a datagram, a timeout) or a graceful close: the
    /// connection is over.
    #[error("{0}")]
    Stack(String),
}

/// For the CLI's commands, whose errors are the messages they print.
impl From<RtcError> for String {
    fn from(e: RtcError) -> String {
        e.to_string()
    }
}
