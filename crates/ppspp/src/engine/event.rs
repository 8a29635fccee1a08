//! What the engine reports to its adapter.

use super::misbehaviour::Misbehaviour;
use super::origin_error::OriginError;
use crate::congestion::Phase;
use crate::merkle::{VerifyError, WrongLength};
use crate::store::StoreError;
use core::fmt;
use core::time::Duration;

/// Why a channel ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The peer sent an explicit close.
    ClosedByPeer,
    /// We closed it ([`Engine::close`](super::Engine::close) or shutdown).
    ClosedLocally,
    /// Our handshakes went unanswered.
    Unreachable,
    /// Nothing heard for three minutes despite our datagrams (RFC 7574 dead-peer rule).
    Timeout,
    /// The peer sent data that failed verification, or broke the protocol.
    Misbehaving(Misbehaviour),
    /// The peer answered our opening handshake with a close: it has as many channels as it
    /// allows. While we want chunks, it is asked again after a back-off.
    Refused,
    /// The address is this peer's own (a peer list named it): its handshake came back to us.
    OwnAddress,
    /// While we lacked chunks, the peer announced none we lack and asked us for none from
    /// the start, for this long: the channel only held a slot.
    NothingToExchange(Duration),
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::ClosedByPeer => f.write_str("closed by the peer"),
            CloseReason::ClosedLocally => f.write_str("closed locally"),
            CloseReason::Unreachable => f.write_str("no answer to our handshakes"),
            CloseReason::Timeout => f.write_str("peer went silent"),
            CloseReason::Misbehaving(why) => write!(f, "peer misbehaved: {why}"),
            CloseReason::Refused => {
                f.write_str("refused: the peer has no room for another channel")
            }
            CloseReason::OwnAddress => f.write_str("that address is this peer's own"),
            CloseReason::NothingToExchange(d) => write!(
                f,
                "nothing to exchange: it offered no chunk we lack and asked for none in {} s",
                d.as_secs()
            ),
        }
    }
}

/// Something that happened, for the adapter to act on or show.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<A> {
    /// The three-way handshake completed.
    PeerConnected {
        /// The peer's address.
        peer: A,
    },
    /// A channel ended; its requests go to other peers.
    PeerClosed {
        /// The peer's address.
        peer: A,
        /// Why the channel ended.
        reason: CloseReason,
    },
    /// PEX told us about a peer (the engine connects by itself when it has room).
    PeerDiscovered {
        /// The address PEX named.
        peer: A,
    },
    /// A chunk passed verification and is in the store.
    ChunkVerified {
        /// The chunk index.
        chunk: u64,
        /// The peer that sent it.
        from: A,
    },
    /// A chunk failed verification; nothing of it was stored and the peer was dropped.
    ChunkRejected {
        /// The chunk index.
        chunk: u64,
        /// The peer that sent it.
        from: A,
        /// Why verification failed.
        reason: VerifyError,
    },
    /// A live source signed `munro` (its chunks are now announced): what a live
    /// presentation's source records for the segment the munro covers.
    LiveSigned {
        /// The munro and its signature.
        munro: crate::live::SignedMunro,
    },
    /// A chunk from the HTTP origin passed verification and is in the store.
    ChunkFromOrigin {
        /// The chunk index.
        chunk: u64,
    },
    /// A saved copy of a chunk ([`Engine::handle_saved_chunk`](super::Engine::handle_saved_chunk))
    /// passed verification and is in the store.
    ChunkRestored {
        /// The chunk index.
        chunk: u64,
    },
    /// A chunk from the HTTP origin failed verification: nothing of it was kept, it is
    /// fetched from peers instead, and the origin is never asked for it again.
    OriginCorrupt {
        /// The chunk index.
        chunk: u64,
        /// Why verification failed.
        reason: VerifyError,
    },
    /// An HTTP origin request failed, or part of the tree file did not verify.
    OriginFailed {
        /// What went wrong.
        error: OriginError,
        /// When requests go out again (`None`: no wait, or the origin is no longer used).
        retry_in: Option<Duration>,
        /// The origin is no longer used: everything comes from peers from now on.
        disabled: bool,
    },
    /// How much of the content we hold: reported after the other events of a batch, when
    /// it changed (not once per chunk), and always just before [`Event::Complete`].
    Progress {
        /// Chunks verified and stored.
        have: u64,
        /// Chunks in the content.
        total: u64,
    },
    /// Every chunk is verified and stored.
    Complete,
    /// A live stream's edge moved on: a munro signed by the source (or, at the source,
    /// signed here) covers chunks up to `end`.
    LiveEdge {
        /// One past the newest chunk under a signed munro.
        end: u64,
        /// When the source signed it, in microseconds since the Unix epoch (its clock).
        signed_at_unix_micros: u64,
    },
    /// A verified chunk could not be stored (disk full, quota exceeded…). The chunk stays
    /// wanted, but the engine asks for nothing more until
    /// [`Engine::resume_storing`](super::Engine::resume_storing): the adapter decides
    /// whether to stop or to free space and go on.
    StoreFailed {
        /// The chunk index.
        chunk: u64,
        /// What the store reported.
        error: StoreError,
    },
    /// The live source restarted: a munro of a newer run of it (same key, chunks numbered
    /// from 0 again) verified. Everything of the earlier run was let go of and the stream
    /// is joined anew at the new run's edge: a player or recorder of the earlier run must
    /// start over (the new run may begin with another initialisation segment).
    LiveRestarted,
    /// A chunk we announced could not be read back from the store to serve it (the file
    /// behind a seeder changed or went away). Nothing is sent for it; the adapter decides
    /// whether to go on serving the rest.
    StoreReadFailed {
        /// The chunk index.
        chunk: u64,
        /// What the store reported.
        error: StoreError,
    },
    /// The content length the swarm was given (a URI's `len=`) is wrong: a chunk that
    /// hashes up to the root shows another one. No peer is blamed for it; nothing more is
    /// asked for, since nothing verifies against a wrong length: the adapter should stop
    /// and report the URI.
    WrongContentLength(WrongLength),
    /// The periodic figures, when [`EngineConfig::stats_interval`](super::EngineConfig) is set.
    Stats(Stats),
}

/// The engine's current figures, see [`Engine::stats`](super::Engine::stats).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Chunks verified and stored.
    pub chunks_have: u64,
    /// Chunks in the content (a live stream: up to its edge).
    pub chunk_count: u64,
    /// Payload bytes of verified chunks received (duplicates excluded).
    pub bytes_downloaded: u64,
    /// Payload bytes of chunks that arrived again after we had them.
    pub bytes_duplicate: u64,
    /// Payload bytes of DATA sent, retransmissions included.
    pub bytes_uploaded: u64,
    /// Chunks received that passed verification (duplicates excluded).
    pub chunks_verified: u64,
    /// Chunks received that failed verification.
    pub chunks_rejected: u64,
    /// Chunks dropped because a hash needed to verify them had not arrived (their
    /// datagram's hashes were lost, or the peer omits them); they stay requested.
    pub chunks_unverifiable: u64,
    /// Datagrams handed to the adapter to send.
    pub datagrams_sent: u64,
    /// Datagrams handed to the engine, dropped ones included.
    pub datagrams_received: u64,
    /// Datagrams dropped before processing (undecodable, unknown channel, wrong swarm).
    pub datagrams_dropped: u64,
    /// Chunks sent again after they were taken for lost.
    pub retransmissions: u64,
    /// Payload bytes received from the HTTP origin (content, not the tree file).
    pub bytes_from_origin: u64,
    /// HTTP requests made of the origin (content and tree file).
    pub origin_requests: u64,
    /// Chunks from the HTTP origin that failed verification.
    pub chunks_origin_corrupt: u64,
    /// Milliseconds the HTTP origin held back what playback waited for, for peers still
    /// connecting ([`Engine::set_waiting_slack`](super::Engine::set_waiting_slack)): a
    /// player's loads that took this long on purpose, which says nothing of the network.
    pub origin_held_ms: u64,
    /// Chunks let go of to stay within `EngineConfig::max_held_bytes`.
    pub chunks_evicted: u64,
    /// Chunks read back from saved copies (not counted as downloaded or verified).
    pub chunks_restored: u64,
    /// Payload bytes of the chunks read back from saved copies.
    pub bytes_restored: u64,
    /// Saved copies that failed verification.
    pub chunks_saved_corrupt: u64,
    /// Live: munros accepted with the source's signature.
    pub munros_accepted: u64,
    /// Live: munros refused (bad signature, stale, not a munro).
    pub munros_rejected: u64,
    /// Handshakes answered with a refusal because every channel slot
    /// (`EngineConfig::max_peers`) was taken (a peer that tries again counts again).
    pub handshakes_refused: u64,
    /// Open channels.
    pub peers: usize,
    /// Handshakes answered whose initiator has not come back yet (they hold no channel).
    pub half_open: usize,
}

/// Figures of one channel.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelStats<A> {
    /// The peer's address.
    pub peer: A,
    /// The three-way handshake completed.
    pub established: bool,
    /// How DATA is sent: ping-pong or by window.
    pub send_state: SendState,
    /// Congestion window, in datagrams.
    pub cwnd: f64,
    /// Smoothed round-trip time.
    pub srtt: Duration,
    /// LEDBAT's estimate of the delay our traffic adds, once delay samples exist.
    pub queuing_delay: Option<Duration>,
    /// Congestion priority: 0 for LEDBAT, N for MulTCP emulating N TCP flows.
    pub priority: u32,
    /// Chunks sent and neither acknowledged nor taken for lost.
    pub in_flight: usize,
    /// Chunks requested from the peer and not yet received.
    pub requests_outstanding: usize,
    /// The peer choked us (we may not request), and we choke it.
    pub choked_by_peer: bool,
    /// We choke the peer: its requests go unanswered.
    pub choking: bool,
    /// Chunks the peer requested that wait to be sent.
    pub serve_queue: usize,
    /// Chunks the peer has announced holding.
    pub peer_chunks: u64,
    /// Payload bytes of DATA sent to the peer, retransmissions included.
    pub bytes_uploaded: u64,
    /// Payload bytes of DATA received from the peer, duplicates and rejected chunks
    /// included.
    pub bytes_downloaded: u64,
}

/// Sending state of a channel (libswift report §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendState {
    /// Before the first acknowledged DATA: one datagram in flight at a time.
    PingPong,
    /// Window-based sending; the phase says slow start or congestion avoidance.
    Window(Phase),
    /// Nothing to send; keep-alives only.
    KeepAlive,
}
