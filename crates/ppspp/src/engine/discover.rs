//! Joining a swarm knowing only its root hash: learning the chunk size and the content
//! length from the peers before an [`Engine`](super::Engine) can start.
//!
//! The recipe is the one libswift follows (PPSPP draft §5.6, digest §2.3): the peak hashes,
//! checked against the root, give the number of chunks; the last chunk, verified, gives the
//! exact length. The
//! chunk size must be agreed in the handshake (option 9), and a peer silently ignores a
//! handshake whose chunk size differs from its own, so a [`Discovery`] opens one channel
//! per candidate size at once and keeps the one that is answered. The hash function
//! follows from the root's length.
//!
//! Per peer: handshakes (retried with back-off) → the answer's HAVEs say which chunk the
//! peer holds last → a REQUEST for it (retried) → its DATA with the peaks and uncles. The
//! peaks (or, for a power-of-two chunk count, the uncles up to the root) fix the chunk
//! count; if the chunk was not the last one, the last one is requested next. Nothing is
//! believed before it verifies against the root: a peer that sends hashes or data that do
//! not is dropped, and the others go on. Sans-IO like the engine: time comes in, datagrams
//! go out through [`Discovery::poll_transmit`], and the outcome comes as a
//! [`DiscoveryEvent`].

use super::ContentInfo;
use super::addr::PeerAddr;
use super::discovery_outcome::{
    DiscoveryConfigError, DiscoveryError, DiscoveryEvent, ProbeFailure,
};
use super::handshake::{SwarmParams, check_peer_options, our_options};
use super::sans_io::{Connect, SansIo};
use crate::Bin;
use crate::codec::{
    ChunkAddressing, ChunkSpec, CodecConfig, Handshake, Message, MessageIter, decode_datagram,
    encode_datagram,
};
use crate::merkle::length_proof::peak_readings;
use crate::merkle::{Hash, HashAlgorithm, VerifyError, VerifyingTree};
use crate::rng::Rng;
use crate::time::Time;
use core::fmt;
use core::time::Duration;
use std::collections::{BTreeMap, VecDeque};

/// Chunk sizes tried when the caller names none: the powers of two from 1 KiB (the RFC's
/// default) to 32 KiB.
pub const CANDIDATE_CHUNK_SIZES: [u32; 6] = [1024, 2048, 4096, 8192, 16_384, 32_768];

/// Handshakes sent to a silent peer, 1+2+4 s apart; it counts as unreachable 8 s after
/// the last (15 s in all).
const HANDSHAKE_TRIES: u32 = 4;
/// Requests for one chunk before the peer counts as not delivering, 1+2+4+8+16 s apart:
/// a peer ignores a repeat while the chunk is in flight and resends it only after its own
/// retransmission timeout, which backs off the same way (we never acknowledge).
const REQUEST_TRIES: u32 = 6;
const REQUEST_RETRY: Duration = Duration::from_secs(1);
/// How long an answering peer may take to announce any chunk.
const HAVE_WAIT: Duration = Duration::from_secs(10);
/// A peer that refused us (it was full) is asked again after this, doubling per refusal
/// up to the second, each wait between half and all of it at random.
const REFUSED_WAIT: Duration = Duration::from_secs(1);
const MAX_REFUSED_WAIT: Duration = Duration::from_secs(30);

enum Probe {
    /// Handshakes out, one channel per candidate chunk size: `(local channel, size)`.
    Opening {
        channels: Vec<(u32, u32)>,
        tries: u32,
        next: Time,
        /// Times the peer refused us for want of room (a close for our handshake).
        refusals: u32,
    },
    Open(Box<OpenProbe>),
    Failed(ProbeFailure),
}

struct OpenProbe {
    local: u32,
    remote: u32,
    codec: CodecConfig,
    tree: VerifyingTree,
    /// Hashes received since the last DATA (peaks and uncles precede their chunk).
    hashes: Vec<(Bin, Hash)>,
    /// The highest chunk the peer announced.
    last_have: Option<u64>,
    /// The chunk asked for, how often, and when to ask again (or give up).
    asked: Option<u64>,
    tries: u32,
    next: Time,
}

/// Learns a swarm's [`ContentInfo`] from its peers, knowing only the root.
pub struct Discovery<A: PeerAddr> {
    root: Hash,
    hash: HashAlgorithm,
    chunk_sizes: Vec<u32>,
    addressing: ChunkAddressing,
    peers: BTreeMap<A, Probe>,
    rng: Rng,
    /// Datagrams built and not yet polled: a handful per peer (handshakes for each
    /// candidate size, a request, a close), so they are queued whole.
    out: VecDeque<(A, Vec<u8>)>,
    found: Option<ContentInfo>,
    events: VecDeque<DiscoveryEvent<A>>,
    /// An [`DiscoveryEvent::AllFailed`] was reported and no peer was added since.
    failure_reported: bool,
}

impl<A: PeerAddr> fmt::Debug for Discovery<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Discovery")
            .field("root", &self.root)
            .field("peers", &self.peers.len())
            .field("found", &self.found)
            .finish()
    }
}

impl<A: PeerAddr> Discovery<A> {
    /// Discovery for the swarm `root`, trying `chunk_sizes` (empty: the
    /// [`CANDIDATE_CHUNK_SIZES`]). The hash function follows from the root's length.
    pub fn new(root: Hash, chunk_sizes: &[u32], seed: u64) -> Result<Self, DiscoveryConfigError> {
        let hash = HashAlgorithm::ALL
            .into_iter()
            .find(|a| a.size() == root.len())
            .ok_or(DiscoveryConfigError::RootLength(root.len()))?;
        let mut sizes: Vec<u32> = if chunk_sizes.is_empty() {
            CANDIDATE_CHUNK_SIZES.to_vec()
        } else {
            chunk_sizes.to_vec()
        };
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.contains(&0) {
            return Err(DiscoveryConfigError::ZeroChunkSize);
        }
        Ok(Discovery {
            root,
            hash,
            chunk_sizes: sizes,
            addressing: ChunkAddressing::Chunk32,
            peers: BTreeMap::new(),
            rng: Rng::new(seed),
            out: VecDeque::new(),
            found: None,
            events: VecDeque::new(),
            failure_reported: false,
        })
    }

    /// Starts asking `peer` (again, if it failed before).
    pub fn connect(&mut self, peer: A, now: Time) -> Connect {
        if self.found.is_some() {
            return Connect::Finished;
        }
        if matches!(
            self.peers.get(&peer),
            Some(Probe::Opening { .. } | Probe::Open(_))
        ) {
            return Connect::AlreadyConnected;
        }
        self.failure_reported = false;
        let mut channels = Vec::with_capacity(self.chunk_sizes.len());
        for &size in &self.chunk_sizes {
            channels.push((self.rng.channel_id(), size));
        }
        self.peers.insert(
            peer,
            Probe::Opening {
                channels,
                tries: 0,
                next: now,
                refusals: 0,
            },
        );
        Connect::Started
    }

    /// The transport to `peer` is gone.
    pub fn peer_lost(&mut self, peer: &A) {
        if let Some(p) = self.peers.get_mut(peer)
            && !matches!(p, Probe::Failed(_))
        {
            *p = Probe::Failed(ProbeFailure::ConnectionLost);
        }
        self.note_outcome();
    }

    /// Queues the outcome event once there is one to report.
    fn note_outcome(&mut self) {
        if self.failure_reported || self.found.is_some() {
            return;
        }
        if let Some(e) = self.failed() {
            self.failure_reported = true;
            self.events.push_back(DiscoveryEvent::AllFailed(e));
        }
    }

    /// The next outcome, if any: [`DiscoveryEvent::Found`] once, or
    /// [`DiscoveryEvent::AllFailed`] each time every peer so far has failed.
    pub fn poll_event(&mut self) -> Option<DiscoveryEvent<A>> {
        self.events.pop_front()
    }

    /// What was learnt, once a peer has proven it.
    pub fn found(&self) -> Option<&ContentInfo> {
        self.found.as_ref()
    }

    /// `Some` once every peer connected so far has failed (and there was one).
    pub fn failed(&self) -> Option<DiscoveryError<A>> {
        if self.found.is_some() || self.peers.is_empty() {
            return None;
        }
        let mut failures = Vec::new();
        for (peer, p) in &self.peers {
            match p {
                Probe::Failed(why) => failures.push((peer.clone(), why.clone())),
                _ => return None,
            }
        }
        Some(DiscoveryError { failures })
    }

    /// Peers that answered our handshake.
    pub fn answered(&self) -> impl Iterator<Item = &A> {
        self.peers
            .iter()
            .filter(|(_, p)| matches!(p, Probe::Open(_)))
            .map(|(a, _)| a)
    }

    /// Writes the next datagram into `buf` (replacing what it held) and returns where it
    /// goes; `None` when nothing is due.
    pub fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<A> {
        if self.out.is_empty() {
            self.handle_timeout(now);
        }
        let (to, payload) = self.out.pop_front()?;
        *buf = payload;
        Some(to)
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next.
    pub fn poll_timeout(&self) -> Option<Time> {
        if self.found.is_some() {
            return None;
        }
        self.peers
            .values()
            .filter_map(|p| match p {
                Probe::Opening { next, .. } => Some(*next),
                Probe::Open(o) => Some(o.next),
                Probe::Failed(_) => None,
            })
            .min()
    }

    /// Sends what is due: handshakes and requests again, and gives up on silent peers.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.found.is_some() {
            return;
        }
        let root = self.root;
        let params = params_for(&root, self.hash);
        let peers: Vec<A> = self.peers.keys().cloned().collect();
        for peer in peers {
            let Some(probe) = self.peers.get_mut(&peer) else {
                continue;
            };
            match probe {
                Probe::Opening {
                    channels,
                    tries,
                    next,
                    ..
                } if now >= *next => {
                    if *tries >= HANDSHAKE_TRIES {
                        let chunk_sizes = channels.iter().map(|(_, s)| *s).collect();
                        *probe = Probe::Failed(ProbeFailure::NoAnswer { chunk_sizes });
                        continue;
                    }
                    *next = now + Duration::from_secs(1 << *tries);
                    *tries += 1;
                    for &(local, size) in channels.iter() {
                        let params = params(size);
                        let codec = codec_for(self.addressing, self.hash, size);
                        let hs = Message::Handshake(Handshake {
                            source_channel: local,
                            options: our_options(
                                &params,
                                Some(self.root.as_bytes()),
                                self.addressing,
                            ),
                        });
                        let mut payload = Vec::new();
                        if encode_datagram(0, &[hs], &codec, &mut payload).is_ok() {
                            self.out.push_back((peer.clone(), payload));
                        }
                    }
                }
                Probe::Open(o) if now >= o.next => match o.asked {
                    None => *probe = Probe::Failed(ProbeFailure::AnnouncedNothing),
                    Some(chunk) if o.tries >= REQUEST_TRIES => {
                        *probe = Probe::Failed(ProbeFailure::NotDelivered { chunk });
                    }
                    Some(chunk) => {
                        o.next = now + REQUEST_RETRY * (1 << o.tries.min(8));
                        o.tries += 1;
                        if let Some(payload) = request(o, chunk) {
                            self.out.push_back((peer.clone(), payload));
                        }
                    }
                },
                _ => {}
            }
        }
        self.note_outcome();
    }

    /// A datagram from `from`. Anything not for one of our probe channels is ignored.
    pub fn handle_datagram(&mut self, now: Time, from: A, bytes: &[u8]) {
        if self.found.is_some() {
            return;
        }
        let Some(channel) = bytes
            .get(..4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        else {
            return;
        };
        let root = self.root;
        let (addressing, hash) = (self.addressing, self.hash);
        let params = params_for(&root, hash);
        let Some(probe) = self.peers.get_mut(&from) else {
            return;
        };
        let outcome = match probe {
            Probe::Opening {
                channels,
                tries,
                next,
                refusals,
            } => {
                let Some(&(local, size)) = channels.iter().find(|(l, _)| *l == channel) else {
                    return;
                };
                let params = params(size);
                let mut codec = codec_for(addressing, hash, size);
                let Ok(datagram) = decode_datagram(bytes, &codec) else {
                    return;
                };
                let mut messages = datagram.messages();
                let Some(Ok(Message::Handshake(hs))) = messages.next() else {
                    return;
                };
                if hs.is_close() {
                    // A close for our handshake: the peer is full (see `Engine::refuse`).
                    // Ask again after a back-off, as the engine does; the caller's own
                    // deadline bounds the wait.
                    *refusals += 1;
                    *tries = 0;
                    let full = REFUSED_WAIT
                        .saturating_mul(1 << (*refusals - 1).min(16))
                        .min(MAX_REFUSED_WAIT);
                    let jitter = self.rng.below(full.as_micros() as u64 / 2 + 1);
                    *next = now + full / 2 + Duration::from_micros(jitter);
                    return;
                }
                if let Err(why) = check_peer_options(&params, &hs.options, false) {
                    *probe = Probe::Failed(ProbeFailure::Handshake(why));
                    self.note_outcome();
                    return;
                }
                codec.apply_handshake(&hs.options);
                let Ok(tree) = VerifyingTree::new_unknown_size(hash, root, size as usize) else {
                    return;
                };
                let mut open = Box::new(OpenProbe {
                    local,
                    remote: hs.source_channel,
                    codec,
                    tree,
                    hashes: Vec::new(),
                    last_have: None,
                    asked: None,
                    tries: 0,
                    next: now + HAVE_WAIT,
                });
                // The iterator decodes the rest with what the handshake set.
                let outcome = open.handle(messages);
                *probe = Probe::Open(open);
                outcome
            }
            Probe::Open(o) if o.local == channel => match decode_datagram(bytes, &o.codec) {
                Ok(datagram) => o.handle(datagram.messages()),
                Err(_) => return,
            },
            _ => return,
        };
        match outcome {
            Step::Wait => {}
            Step::Ask(chunk) => {
                // A retransmitted DATA repeats an answer we already acted on.
                if let Probe::Open(o) = probe
                    && o.asked != Some(chunk)
                {
                    o.asked = Some(chunk);
                    o.tries = 1;
                    o.next = now + REQUEST_RETRY;
                    if let Some(payload) = request(o, chunk) {
                        self.out.push_back((from, payload));
                    }
                }
            }
            Step::Fail(why) => {
                *probe = Probe::Failed(why);
                self.note_outcome();
            }
            Step::Found(content_len) => {
                if let Probe::Open(o) = probe {
                    self.found = Some(ContentInfo {
                        root,
                        hash,
                        chunk_size: o.codec.chunk_size,
                        content_len,
                    });
                    self.events.push_back(DiscoveryEvent::Found(ContentInfo {
                        root,
                        hash,
                        chunk_size: o.codec.chunk_size,
                        content_len,
                    }));
                }
                self.close_all();
            }
        }
    }

    /// Ends every probe channel with an explicit close, so peers free them at once.
    fn close_all(&mut self) {
        for (peer, probe) in &self.peers {
            if let Probe::Open(o) = probe {
                let mut payload = Vec::new();
                let close = Message::Handshake(Handshake::close());
                if encode_datagram(o.remote, &[close], &o.codec, &mut payload).is_ok() {
                    self.out.push_back((peer.clone(), payload));
                }
            }
        }
    }
}

/// What a channel of each candidate chunk size must agree on.
fn params_for<'a>(root: &'a Hash, hash: HashAlgorithm) -> impl Fn(u32) -> SwarmParams<'a> + 'a {
    move |chunk_size| SwarmParams {
        swarm_id: root.as_bytes(),
        hash,
        chunk_size,
        live: None,
    }
}

/// What one datagram on an open probe leads to.
enum Step {
    Wait,
    Ask(u64),
    Fail(ProbeFailure),
    Found(u64),
}

impl OpenProbe {
    fn handle(&mut self, messages: MessageIter<'_>) -> Step {
        let cs = self.codec.chunk_size;
        let mut step = Step::Wait;
        for msg in messages {
            let Ok(msg) = msg else {
                return Step::Fail(ProbeFailure::Malformed);
            };
            match msg {
                Message::Handshake(hs) if hs.is_close() => {
                    return Step::Fail(ProbeFailure::Closed);
                }
                Message::Have(spec) => {
                    if let Some((_, last)) = spec.chunk_range(cs) {
                        self.last_have = Some(self.last_have.map_or(last, |l| l.max(last)));
                    }
                }
                Message::Integrity { chunks, hash } => {
                    let mut bins = chunks.bins(cs);
                    if let (Some(bin), None, Some(h)) =
                        (bins.next(), bins.next(), Hash::from_slice(hash))
                        && self.hashes.len() < 128
                    {
                        self.hashes.push((bin, h));
                    }
                }
                Message::Data {
                    chunks, payload, ..
                } => {
                    let hashes = core::mem::take(&mut self.hashes);
                    return match chunks.chunk_range(cs) {
                        Some((first, _)) => self.on_data(first, payload, &hashes),
                        None => Step::Fail(ProbeFailure::DataWithoutChunks),
                    };
                }
                _ => {}
            }
        }
        if self.asked.is_none()
            && let Some(last) = self.last_have
        {
            step = Step::Ask(last);
        }
        step
    }

    /// Verifies the first chunk of a DATA message (a larger payload holds more chunks;
    /// one is enough here).
    fn on_data(&mut self, chunk: u64, payload: &[u8], hashes: &[(Bin, Hash)]) -> Step {
        let cs = self.codec.chunk_size as usize;
        let data = &payload[..payload.len().min(cs)];
        let Some(leaf) = Bin::chunk(chunk) else {
            return Step::Fail(ProbeFailure::ChunkOutOfRange);
        };
        if self.tree.chunk_count().is_none() {
            let root = self.tree.root();
            let learnt =
                peak_readings(leaf, root, hashes).any(|peaks| self.tree.add_peaks(&peaks).is_ok());
            if !learnt {
                return Step::Fail(ProbeFailure::BadPeaks);
            }
        }
        let uncles: Vec<(Bin, Hash)> = hashes
            .iter()
            .filter(|(b, _)| !b.contains(leaf) && b.parent().contains(leaf))
            .copied()
            .collect();
        match self.tree.verify_chunk(chunk, data, &uncles) {
            Ok(()) => {}
            // Sent for a tree we do not have yet (e.g. the peaks got lost): ask again.
            Err(VerifyError::MissingHash(_)) => return Step::Wait,
            Err(reason) => return Step::Fail(ProbeFailure::BadChunk { chunk, reason }),
        }
        let n = self.tree.chunk_count().unwrap_or(0);
        match self.tree.content_len() {
            Some(len) if n > 0 => Step::Found(len),
            _ => Step::Ask(n.saturating_sub(1)),
        }
    }
}

fn codec_for(addressing: ChunkAddressing, hash: HashAlgorithm, chunk_size: u32) -> CodecConfig {
    CodecConfig {
        chunk_addressing: addressing,
        hash_size: hash.size(),
        chunk_size,
        ..CodecConfig::default()
    }
}

/// A REQUEST for `chunk` on the probe's channel.
fn request(o: &OpenProbe, chunk: u64) -> Option<Vec<u8>> {
    let spec =
        ChunkSpec::from_chunk_range(chunk, chunk, o.codec.chunk_addressing, o.codec.chunk_size)
            .ok()?;
    let mut payload = Vec::new();
    encode_datagram(o.remote, &[Message::Request(spec)], &o.codec, &mut payload).ok()?;
    Some(payload)
}

impl<A: PeerAddr> SansIo for Discovery<A> {
    type Addr = A;
    type Event = DiscoveryEvent<A>;

    fn connect(&mut self, peer: A, now: Time) -> Connect {
        Discovery::connect(self, peer, now)
    }

    fn peer_lost(&mut self, peer: &A) {
        Discovery::peer_lost(self, peer);
    }

    fn handle_datagram(&mut self, now: Time, from: A, bytes: &[u8]) {
        Discovery::handle_datagram(self, now, from, bytes);
    }

    fn handle_timeout(&mut self, now: Time) {
        Discovery::handle_timeout(self, now);
    }

    fn poll_timeout(&self) -> Option<Time> {
        Discovery::poll_timeout(self)
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<A> {
        Discovery::poll_transmit(self, now, buf)
    }

    fn poll_event(&mut self) -> Option<DiscoveryEvent<A>> {
        Discovery::poll_event(self)
    }
}
