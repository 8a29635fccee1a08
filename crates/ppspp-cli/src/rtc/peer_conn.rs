//! One WebRTC peer connection with one data channel, as the transport needs it: the part
//! that differs between the two WebRTC stacks (str0m and webrtc-rs), so that both can be
//! measured on the same workloads (docs/ARCHITECTURE.md).

use super::error::RtcError;
use std::net::SocketAddr;
use std::time::Instant;

/// The data channel's label.
pub const LABEL: &str = "ppspp";

/// Which WebRTC implementation drives the peer connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Stack {
    /// str0m (the default).
    #[default]
    Str0m,
    /// webrtc-rs's sans-IO `rtc` crate (builds with the `webrtc-rs` feature).
    #[cfg(feature = "webrtc-rs")]
    WebrtcRs,
}

/// The kind of a local ICE candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateKind {
    Host,
    ServerReflexive,
    Relayed,
}

/// A local ICE candidate: where a peer can reach us, and from which of our addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalCandidate {
    pub kind: CandidateKind,
    /// The address peers send to.
    pub addr: SocketAddr,
    /// The local socket it leads to.
    pub base: SocketAddr,
}

impl LocalCandidate {
    /// The SDP candidate line of `c` (RFC 8839 §5.1), with RFC 8445's recommended priority.
    pub fn sdp_line(&self) -> String {
        let c = self;
        let (type_pref, typ) = match c.kind {
            CandidateKind::Host => (126u32, "host"),
            CandidateKind::ServerReflexive => (100, "srflx"),
            CandidateKind::Relayed => (0, "relay"),
        };
        let priority = (type_pref << 24) | (65535 << 8) | 255;
        let related = match c.kind {
            CandidateKind::Host => String::new(),
            _ => format!(" raddr {} rport {}", c.base.ip(), c.base.port()),
        };
        format!(
            "candidate:{} 1 udp {priority} {} {} typ {typ}{related}",
            c.foundation(),
            c.addr.ip(),
            c.addr.port()
        )
    }

    /// Candidates of one kind from one base share a foundation.
    fn foundation(&self) -> u32 {
        let mut h: u32 = 2166136261;
        for b in format!("{:?}{}", self.kind, self.base.ip()).bytes() {
            h = (h ^ b as u32).wrapping_mul(16777619);
        }
        h
    }
}

/// What a peer connection wants done or reports, polled until [`Output::Timeout`].
#[derive(Debug)]
pub enum Output {
    /// Nothing more until this instant (or new input).
    Timeout(Instant),
    /// Send `data` from our address `source` (the socket's, or a relayed one) to `destination`.
    Transmit {
        source: SocketAddr,
        destination: SocketAddr,
        data: Vec<u8>,
    },
    /// The data channel opened.
    Open,
    /// One message arrived on the data channel.
    Data(Vec<u8>),
    /// The connection is over (closed, failed or disconnected).
    Closed,
}

/// One peer connection. Every method that mutates it must be followed by polling
/// [`poll_output`](Self::poll_output) until it returns a timeout.
pub trait PeerConn {
    /// Applies the remote's answer to our offer.
    fn accept_answer(&mut self, sdp: &str) -> Result<(), RtcError>;
    /// Adds a remote candidate (an SDP `candidate:` line); bad ones are ignored.
    fn add_remote_candidate(&mut self, line: &str);
    /// Adds a local candidate learnt after the offer or answer; returns its SDP line, to be
    /// trickled to the remote, if it was new.
    fn add_local_candidate(&mut self, candidate: &LocalCandidate) -> Option<String>;
    /// Whether a datagram from `from` to our `to` belongs to this connection.
    fn accepts(&self, from: SocketAddr, to: SocketAddr, data: &[u8]) -> bool;
    /// A datagram from `from` to our address `to`.
    fn receive(
        &mut self,
        now: Instant,
        from: SocketAddr,
        to: SocketAddr,
        data: &[u8],
    ) -> Result<(), RtcError>;
    /// Time has passed.
    fn handle_timeout(&mut self, now: Instant) -> Result<(), RtcError>;
    /// The next thing to do; call until it returns [`Output::Timeout`].
    fn poll_output(&mut self) -> Output;
    /// The stack's backlog on the open data channel, what the send queue waits on: bytes
    /// not yet sent (str0m) or not yet acknowledged or abandoned (webrtc-rs). `None`
    /// before it opens.
    fn buffered_amount(&mut self) -> Option<usize>;
    /// Sends one message on the open data channel; false when it was refused.
    fn write(&mut self, now: Instant, data: &[u8]) -> bool;
    /// Starts a graceful close; an error means it cannot be closed gracefully.
    fn close(&mut self) -> Result<(), RtcError>;
}

/// A new offering connection with our data channel (unordered, no retransmissions: PPSPP
/// does its own), and the offer's SDP.
pub fn offer(
    stack: Stack,
    now: Instant,
    candidates: &[LocalCandidate],
) -> Result<(Box<dyn PeerConn>, String), RtcError> {
    match stack {
        Stack::Str0m => super::str0m_conn::Str0mConn::offer(now, candidates),
        #[cfg(feature = "webrtc-rs")]
        Stack::WebrtcRs => super::webrtc_rs_conn::WebrtcRsConn::offer(now, candidates),
    }
}

/// A new answering connection for the remote's `offer`, and the answer's SDP.
pub fn answer(
    stack: Stack,
    now: Instant,
    candidates: &[LocalCandidate],
    offer: &str,
) -> Result<(Box<dyn PeerConn>, String), RtcError> {
    match stack {
        Stack::Str0m => super::str0m_conn::Str0mConn::answer(now, candidates, offer),
        #[cfg(feature = "webrtc-rs")]
        Stack::WebrtcRs => super::webrtc_rs_conn::WebrtcRsConn::answer(now, candidates, offer),
    }
}
