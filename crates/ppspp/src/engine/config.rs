//! Engine settings, the content description, and why an engine cannot be built.

use crate::Bin;
use crate::codec::{ChunkAddressing, CodecConfig};
use crate::congestion::{ConfigError, CongestionConfig};
pub use crate::content::ContentInfo;
use crate::merkle::MerkleError;
use crate::picker::{Live, Picker, RarestFirst, Sequential, Vod};
use core::fmt;

/// Which piece picker the receiver uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PickerKind {
    /// In order; `twist` gives each engine an order of its own.
    Sequential {
        /// Mirror subtrees by the engine's random twist (drawn once per engine).
        twist: bool,
    },
    /// Rarest chunks first (files).
    RarestFirst,
    /// In order inside `window` chunks ahead of the playhead, then rarest-first (video).
    Vod {
        /// Width of the in-order window, in chunks.
        window: u64,
    },
    /// From the live edge, never older than `discard_window` chunks.
    Live {
        /// How far behind the newest chunk fetching reaches, in chunks.
        discard_window: u64,
    },
}

impl PickerKind {
    pub(super) fn build(&self) -> Box<dyn Picker + Send> {
        match *self {
            PickerKind::Sequential { twist } => Box::new(Sequential { twist }),
            PickerKind::RarestFirst => Box::new(RarestFirst),
            PickerKind::Vod { window } => Box::new(Vod::new(window)),
            PickerKind::Live { discard_window } => Box::new(Live::new(discard_window)),
        }
    }
}

/// Engine settings. [`EngineConfig::default`] suits a browser or native peer.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// How chunks are addressed on channels we open (chunk32 is mandatory to implement and
    /// what libswift speaks; we accept any method a peer opens with).
    pub chunk_addressing: ChunkAddressing,
    /// Congestion control for every channel.
    pub congestion: CongestionConfig,
    /// The piece picker for downloads.
    pub picker: PickerKind,
    /// Upload and download limits in bytes per second (`None`: unlimited).
    pub upload_limit: Option<u64>,
    /// Download limit in bytes per second (`None`: unlimited).
    pub download_limit: Option<u64>,
    /// Most channels at once (RFC 7574 suggests limiting; libswift opens 20 itself).
    pub max_peers: usize,
    /// Most handshakes answered and waiting for the initiator's next datagram. They are
    /// held in a table of their own, not as channels, so handshakes from spoofed addresses
    /// take no peer slot; when it is full the oldest entry goes (RFC 7574 §12).
    pub max_half_open: usize,
    /// Most peers we serve at once; the rest are choked.
    pub max_unchoked: usize,
    /// Chunks queued one by one for one peer; what a peer asks beyond waits in a binmap
    /// (bounded by the content's size, like the other per-peer maps) until the queue
    /// drains.
    pub max_serve_queue: usize,
    /// Chunks requested from one peer before its rate is known, and at most ever.
    pub min_request_pipeline: u64,
    /// Most chunks outstanding from one peer, however fast it is.
    pub max_request_pipeline: u64,
    /// Longest datagram of control messages (HANDSHAKE, HAVE, ACK, REQUEST, CANCEL,
    /// CHOKE, PEX), in bytes: what does not fit waits for the next datagram. A datagram
    /// that carries DATA holds the chunk and its hashes on top, whatever their size,
    /// since a chunk is the unit of transfer (RFC 7574 §3.1 leaves the datagram size to
    /// the chunk size).
    pub mtu: usize,
    /// Ask peers for more peers (PEX).
    pub pex: bool,
    /// The adapter's timer granularity: pacing may send this much ahead of schedule in one
    /// burst, since a timer cannot wake it for each datagram of a fast path (tokio: 1 ms;
    /// browsers: about 4 ms). It is also the least reordering window of loss detection
    /// (DATA overdue behind acknowledged DATA), which a timer cannot resolve more finely.
    pub pacing_granularity: core::time::Duration,
    /// While a channel carries requests the picker marks urgent (VoD: chunks just ahead of
    /// the playhead), raise its congestion priority to this (DTL runtime priority). It acts
    /// on our side of the channel only: PPSPP has no message to make a peer send harder.
    pub urgent_priority: Option<u32>,
    /// Emit [`Event::Stats`](super::Event::Stats) this often (`None`: never; `stats()` can always be called).
    pub stats_interval: Option<core::time::Duration>,
    /// Seed for channel IDs and picker randomness; adapters pass real entropy.
    pub seed: u64,
    /// The Unix time at the adapter's [`Time::ZERO`](crate::time::Time::ZERO). DATA timestamps are `now` plus this:
    /// microseconds since the Unix epoch, which libswift assumes (digest §1.6) and from
    /// which it derives its round-trip times. Zero keeps the adapter's own clock (the
    /// simulator, tests).
    pub wall_clock_offset: core::time::Duration,
    /// Hold at most this many bytes of content (`None`: all of it). Chunks are fetched only
    /// in a window of three quarters of it from the playhead
    /// ([`Engine::set_playhead`](super::Engine::set_playhead)); held chunks outside the
    /// window are let go of ([`ChunkStore::evict_chunk`](crate::store::ChunkStore::evict_chunk))
    /// when more would be held. For a page playing a long video.
    pub max_held_bytes: Option<u64>,
    /// Live: how long ago a munro may have been signed and still be accepted (RFC 7574
    /// §6.1.2 drops too old timestamps). It covers the discard window's span, the time a
    /// munro takes through the swarm and clock differences between hosts.
    pub live_max_age: core::time::Duration,
    /// Live: how far past our wall clock a signature may be dated (clocks differ between
    /// hosts); one dated later is not taken, so a munro stamped ahead cannot stay
    /// acceptable for longer than `live_max_age` after it is signed.
    pub live_max_ahead: core::time::Duration,
    /// Live: how recent the first signature a viewer takes must be, the one it joins the
    /// stream at. The source sends each new munro to every peer at once, so an honest
    /// tune-in is seconds old; a recording of an ended run of the source, replayed, is
    /// older and is not taken.
    pub live_tune_in_max_age: core::time::Duration,
    /// Live presentations: how recent the first segment a viewer takes from the web
    /// server must be ([`Engine::handle_live_part`](super::Engine::handle_live_part)).
    /// Players start a few segments behind the playlist's edge (hls.js: three target
    /// durations), so it is longer than `live_tune_in_max_age`.
    pub live_part_tune_in_max_age: core::time::Duration,
    /// Verified chunks acknowledged together: a datagram that would carry only ACKs and
    /// REQUESTs waits until this many chunks are to be acknowledged or `max_ack_delay`
    /// has passed (TCP's and QUIC's delayed acknowledgements); anything else for that peer
    /// takes them at once, and so does a channel's start. Each such datagram takes a
    /// packet's place in the viewer's uplink queue. 1 acknowledges every chunk at once.
    pub ack_every: usize,
    /// Longest an acknowledgement waits for company (see `ack_every`). The sender's
    /// round-trip samples include it, so it stays well under its retransmission timeout.
    pub max_ack_delay: core::time::Duration,
    /// Longest a datagram of nothing but HAVEs (and ACKs and REQUESTs that may wait) waits
    /// for company: anything else for that peer takes them at once. Without it every
    /// chunk verified went to each peer lacking it in a datagram of its own, one packet
    /// per chunk per peer in the viewer's uplink; waiting, consecutive chunks go as one
    /// HAVE. Zero announces every chunk at once.
    pub max_have_delay: core::time::Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            chunk_addressing: ChunkAddressing::Chunk32,
            congestion: CongestionConfig::default(),
            picker: PickerKind::RarestFirst,
            upload_limit: None,
            download_limit: None,
            max_peers: 64,
            max_half_open: 1024,
            max_unchoked: 32,
            max_serve_queue: 4096,
            min_request_pipeline: 8,
            max_request_pipeline: 2048,
            mtu: 1500,
            pex: true,
            pacing_granularity: core::time::Duration::from_millis(1),
            urgent_priority: None,
            stats_interval: None,
            seed: 0,
            wall_clock_offset: core::time::Duration::ZERO,
            max_held_bytes: None,
            live_max_age: core::time::Duration::from_secs(120),
            live_max_ahead: core::time::Duration::from_secs(30),
            live_tune_in_max_age: core::time::Duration::from_secs(10),
            live_part_tune_in_max_age: core::time::Duration::from_secs(40),
            ack_every: 2,
            max_ack_delay: core::time::Duration::from_millis(10),
            max_have_delay: core::time::Duration::from_millis(25),
        }
    }
}

/// Why an engine could not be built.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineError {
    /// The congestion-control settings are out of range.
    Congestion(ConfigError),
    /// The content description is unusable.
    Content(ContentError),
    /// A setting is out of range.
    Config(&'static str),
}

/// What is wrong with a content description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContentError {
    /// No Merkle tree can be built for it (empty, zero chunk size, root of the wrong
    /// length, too many chunks).
    Tree(MerkleError),
    /// A chunk size above 4 GiB.
    ChunkSizeTooLarge(usize),
    /// The chunk count is not known.
    SizeUnknown,
    /// The content holds no chunk.
    NoChunks,
    /// A chunk with its hashes and the control messages of a datagram would exceed the
    /// longest datagram a peer accepts.
    ChunkTooLargeForDatagram {
        /// Chunk size in bytes.
        chunk_size: u32,
        /// The longest datagram, in bytes.
        max: usize,
    },
}

impl fmt::Display for ContentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContentError::Tree(e) => e.fmt(f),
            ContentError::ChunkSizeTooLarge(size) => {
                write!(f, "chunk size {size} is above 4 GiB")
            }
            ContentError::SizeUnknown => f.write_str("content size unknown"),
            ContentError::NoChunks => f.write_str("no chunks"),
            ContentError::ChunkTooLargeForDatagram { chunk_size, max } => write!(
                f,
                "chunks of {chunk_size} bytes with their hashes do not fit in a datagram of {max} bytes"
            ),
        }
    }
}

impl std::error::Error for ContentError {}

/// The smallest `mtu` accepted: an opening handshake with a SHA-512 root fits.
const MIN_MTU: usize = 512;
/// The longest `max_ack_delay` accepted: a peer's retransmission timeout is its round
/// trip plus four deviations of at least 50 ms (libswift), which a longer wait would reach.
const MAX_ACK_DELAY: core::time::Duration = core::time::Duration::from_millis(200);
/// A peer told of a chunk a second late may already have asked everyone else for it.
const MAX_HAVE_DELAY: core::time::Duration = core::time::Duration::from_secs(1);

impl EngineConfig {
    /// Checks every setting; the engine's constructors call it.
    pub fn validate(&self) -> Result<(), EngineError> {
        self.congestion
            .validate()
            .map_err(EngineError::Congestion)?;
        if self.max_peers == 0 {
            return Err(EngineError::Config("max_peers must be at least 1"));
        }
        if self.max_half_open == 0 {
            return Err(EngineError::Config("max_half_open must be at least 1"));
        }
        if self.max_serve_queue == 0 {
            return Err(EngineError::Config("max_serve_queue must be at least 1"));
        }
        if self.min_request_pipeline == 0 || self.max_request_pipeline < self.min_request_pipeline {
            return Err(EngineError::Config(
                "need 1 <= min_request_pipeline <= max_request_pipeline",
            ));
        }
        if self.mtu < MIN_MTU {
            return Err(EngineError::Config("mtu must be at least 512 bytes"));
        }
        if self.ack_every == 0 {
            return Err(EngineError::Config("ack_every must be at least 1"));
        }
        if self.max_ack_delay > MAX_ACK_DELAY {
            return Err(EngineError::Config("max_ack_delay must be at most 200 ms"));
        }
        if self.max_have_delay > MAX_HAVE_DELAY {
            return Err(EngineError::Config("max_have_delay must be at most 1 s"));
        }
        if self.max_held_bytes == Some(0) {
            return Err(EngineError::Config("max_held_bytes must be at least 1"));
        }
        Ok(())
    }
}

/// Checks that a DATA datagram of `content` fits what peers decode: the chunk, every hash
/// it may need (peaks and uncles, one per layer each), and up to an MTU of control
/// messages sent with it.
pub(super) fn check_datagram_fits(
    content: &ContentInfo,
    root_bin: Bin,
    mtu: usize,
) -> Result<(), EngineError> {
    // Per INTEGRITY: type, the widest chunk spec (byte64: two u64), the hash.
    let per_hash = 1 + 16 + content.hash.size();
    let hashes = 2 * (root_bin.layer() as usize + 1) * per_hash;
    // DATA: type, chunk spec, timestamp.
    let data = 1 + 16 + 8 + content.chunk_size as usize;
    let max = CodecConfig::default().max_datagram_len;
    if mtu + hashes + data > max {
        return Err(EngineError::Content(
            ContentError::ChunkTooLargeForDatagram {
                chunk_size: content.chunk_size,
                max,
            },
        ));
    }
    Ok(())
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Congestion(e) => e.fmt(f),
            EngineError::Content(why) => write!(f, "invalid content description: {why}"),
            EngineError::Config(why) => write!(f, "invalid engine setting: {why}"),
        }
    }
}

impl std::error::Error for EngineError {}

#[cfg(test)]
mod tests {
    use super::*;
    use core::time::Duration;

    #[test]
    fn ack_and_have_delays_are_checked() {
        assert!(EngineConfig::default().validate().is_ok());
        let every_zero = EngineConfig {
            ack_every: 0,
            ..EngineConfig::default()
        };
        assert!(
            matches!(every_zero.validate(), Err(EngineError::Config(m)) if m.contains("ack_every"))
        );
        let too_long = EngineConfig {
            max_ack_delay: Duration::from_millis(201),
            ..EngineConfig::default()
        };
        assert!(
            matches!(too_long.validate(), Err(EngineError::Config(m)) if m.contains("max_ack_delay"))
        );
        let haves_too_late = EngineConfig {
            max_have_delay: Duration::from_millis(1001),
            ..EngineConfig::default()
        };
        assert!(
            matches!(haves_too_late.validate(), Err(EngineError::Config(m)) if m.contains("max_have_delay"))
        );
        let immediate = EngineConfig {
            ack_every: 1,
            max_ack_delay: Duration::ZERO,
            max_have_delay: Duration::ZERO,
            ..EngineConfig::default()
        };
        assert!(immediate.validate().is_ok());
    }
}
