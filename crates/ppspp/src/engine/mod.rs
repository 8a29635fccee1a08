//! The PPSPP peer as a sans-IO state machine, in the manner of quinn-proto and str0m.
//!
//! One [`Engine`] takes part in one swarm. The adapter feeds it datagrams
//! ([`Engine::handle_datagram`]) and the time ([`Engine::handle_timeout`] when
//! [`Engine::poll_timeout`] says so), sends what [`Engine::poll_transmit`] returns, and reads
//! [`Engine::poll_event`]. Peers are opaque [`PeerAddr`]s, so the same engine runs over UDP,
//! WebRTC data channels and the simulator.
//!
//! Inside: per channel a handshake, a sender (serve queue, ping-pong then LEDBAT/MulTCP
//! windows with pacing, loss detection and retransmission) and a receiver (libswift's
//! Algorithm 1 pulling from a picker, request expiry, ACKs with one-way-delay samples,
//! HAVEs). Every chunk is verified against the Merkle root before it is acknowledged,
//! announced, stored or served; a peer whose data fails is reported and dropped.

mod addr;
mod announce;
mod channel;
mod channel_handshake;
mod channel_pex;
mod choke;
mod chunk_signature;
mod config;
mod delivery;
mod discover;
mod discovery_outcome;
mod event;
mod half_open;
mod handshake;
mod held_window;
mod http_origin;
mod in_flight;
mod live_engine;
mod live_part;
mod live_peer;
mod live_stream;
mod liveness;
mod memory_bound;
mod misbehaviour;
mod origin_error;
mod outstanding;
mod peer_holdings;
mod recv;
mod redial;
mod request;
mod sans_io;
mod saved_copies;
mod schedule;
mod send;
mod send_pacing;
mod serve_queue;
mod timers;
mod usefulness;

pub use crate::live::{
    LIVE_CHUNKS, LiveInfo, LiveParams, ntp_from_unix_micros, unix_micros_from_ntp,
};
pub use addr::{PeerAddr, is_private};
pub use config::{ContentError, ContentInfo, EngineConfig, EngineError, PickerKind};
pub use discover::{CANDIDATE_CHUNK_SIZES, Discovery};
pub use discovery_outcome::{DiscoveryConfigError, DiscoveryError, DiscoveryEvent, ProbeFailure};
pub use event::{ChannelStats, CloseReason, Event, SendState, Stats};
pub use http_origin::{HttpOriginConfig, OriginFile, OriginRequest};
pub use live_engine::LivePushError;
pub use live_part::LivePartError;
pub use misbehaviour::{HandshakeMismatch, Misbehaviour};
pub use origin_error::OriginError;
pub use sans_io::{Connect, SansIo};

use crate::Bin;
use crate::avail::Availability;
use crate::binmap::Binmap;
use crate::codec::CodecConfig;
use crate::merkle::{Hash, LengthCheck, MerkleTree, VerifyingTree};
use crate::picker::Picker;
use crate::rate_limit::TokenBucket;
use crate::rng::Rng;
use crate::store::ChunkStore;
use crate::time::Time;
use channel::Channel;
use core::fmt;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Events kept at most; the oldest go first if the adapter never reads them.
const MAX_EVENTS: usize = 65_536;
/// Mixed into the engine's seed for the stream [`Engine::pick_twist`] is drawn from.
const PICK_TWIST_STREAM: u64 = 0x7069_636b_5f74_7769;

/// One peer's part in one swarm.
pub struct Engine<A: PeerAddr, S: ChunkStore> {
    config: EngineConfig,
    content: ContentInfo,
    chunk_count: u64,
    root_bin: Bin,
    /// The Merkle tree of static content, or a live stream's signed munros.
    integrity: live_stream::Integrity,
    store: S,
    /// Chunks verified and stored, and how many.
    have: Binmap,
    have_count: u64,
    /// Chunks that entered `have`, ever: unlike `have_count`, it never goes back, so it
    /// tells whether anything is new to announce after chunks were let go of.
    have_gained: u64,
    /// Chunks we have, have requested, or that lie past the end: what pickers avoid.
    exclude: Binmap,
    avail: Availability,
    picker: Box<dyn Picker + Send>,
    /// Boxed: channels move in and out of the map around every datagram.
    channels: BTreeMap<u32, Box<Channel<A>>>,
    by_addr: BTreeMap<A, u32>,
    /// Handshakes answered, waiting for the initiator's next datagram.
    half_open: half_open::HalfOpenTable<A>,
    banned: BTreeSet<A>,
    /// Addresses that turned out to be our own (never connected to again).
    own_addrs: BTreeSet<A>,
    /// Peers that refused us a channel (they were full), to be asked again later.
    redials: redial::Redials<A>,
    /// Opening handshakes we refuse for want of room: each gets a close (bounded).
    refusals: VecDeque<(A, u32)>,
    /// Peers whose transport takes several DATA in one datagram, up to this many bytes
    /// ([`Engine::set_data_batching`]); kept until the transport is lost.
    batched_to: BTreeMap<A, usize>,
    /// A store write failed: no new requests until [`Engine::resume_storing`].
    storing_paused: bool,
    /// Chunks that failed verification, checked for what they prove of the content
    /// length given; once it is disproved nothing more is asked for
    /// ([`Event::WrongContentLength`]).
    length_check: LengthCheck,
    rng: Rng,
    /// The order this engine picks chunks in, drawn once. Engines of one swarm each go
    /// through the content in an order of their own, so they hold different chunks to
    /// trade, while one engine's picks stay together (whole aligned blocks in turn): its
    /// binmaps stay small, and the chunks it asks a peer for lie side by side on disk.
    /// A fresh twist for every pick scattered them over the whole content.
    pick_twist: u64,
    events: VecDeque<Event<A>>,
    stats: Stats,
    upload: TokenBucket,
    download: TokenBucket,
    /// Round-robin position among channels for sending.
    cursor: u32,
    /// When the rate limits will next allow what is waiting for them.
    upload_ready_at: Option<Time>,
    download_ready_at: Option<Time>,
    next_stats: Option<Time>,
    complete_reported: bool,
    /// The chunk count last reported in a Progress event.
    progress_reported: u64,
    /// The playhead, and the window of chunks wanted from it under the memory bound and
    /// the read-ahead.
    held: held_window::HeldWindow,
    /// False: nothing is announced or served to peers ([`Engine::set_uploading`]).
    uploading: bool,
    /// The HTTP origin, if the adapter enabled one.
    origin: Option<Box<http_origin::HttpOrigin>>,
    /// Chunks the adapter saved outside the engine (a page's OPFS).
    saved: saved_copies::SavedCopies,
    /// Some chunk was requested from more than one peer (endgame): arrivals cancel the
    /// other copies.
    endgame: bool,
    /// A channel closed holding requests, or chunks were believed held again: every
    /// channel picks anew at once (an idle one would otherwise wait for its next datagram
    /// or timer, maybe half a minute).
    pick_again: bool,
    /// When `handle_timeout` last ran, until a datagram arrives: no deadline is due at or
    /// before it (see [`Engine::poll_timeout`]).
    timers_ran_at: Option<Time>,
    /// Reused per datagram: a chunk read from the store, the hashes sent or received
    /// with one.
    scratch: Vec<u8>,
    hash_scratch: Vec<(Bin, Hash)>,
}

impl<A: PeerAddr, S: ChunkStore> fmt::Debug for Engine<A, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("root", &self.content.root)
            .field("have", &self.have_count)
            .field("chunks", &self.chunk_count)
            .field("channels", &self.channels.len())
            .finish()
    }
}

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// A leecher: it knows the content's metadata and holds nothing yet (whatever `store`
    /// holds is ignored until verified by download).
    pub fn new(
        config: EngineConfig,
        content: ContentInfo,
        store: S,
        now: Time,
    ) -> Result<Self, EngineError> {
        let tree = VerifyingTree::new(
            content.hash,
            content.root,
            content.chunk_size as usize,
            content.content_len,
        )
        .map_err(|e| EngineError::Content(ContentError::Tree(e)))?;
        Engine::with_tree(config, content, tree, store, now)
    }

    /// A seeder: it holds all of the content described by `tree` in `store`.
    pub fn new_seeder(
        config: EngineConfig,
        tree: &MerkleTree,
        store: S,
        now: Time,
    ) -> Result<Self, EngineError> {
        let content = ContentInfo {
            root: tree.root(),
            hash: tree.algorithm(),
            chunk_size: u32::try_from(tree.chunk_size()).map_err(|_| {
                EngineError::Content(ContentError::ChunkSizeTooLarge(tree.chunk_size()))
            })?,
            content_len: tree.content_len(),
        };
        let verifying = VerifyingTree::from_tree(tree);
        let mut engine = Engine::with_tree(config, content, verifying, store, now)?;
        let all = engine.content_bins();
        for b in all {
            engine.have.set(b);
            engine.exclude.set(b);
        }
        engine.have_count = engine.chunk_count;
        engine.have_gained = engine.chunk_count;
        engine.complete_reported = true;
        engine.progress_reported = engine.chunk_count;
        engine.stats.chunks_have = engine.chunk_count;
        Ok(engine)
    }

    fn with_tree(
        config: EngineConfig,
        content: ContentInfo,
        tree: VerifyingTree,
        store: S,
        now: Time,
    ) -> Result<Self, EngineError> {
        let chunk_count = tree
            .chunk_count()
            .ok_or(EngineError::Content(ContentError::SizeUnknown))?;
        let root_bin =
            Bin::covering(chunk_count).ok_or(EngineError::Content(ContentError::NoChunks))?;
        config::check_datagram_fits(&content, root_bin, config.mtu)?;
        Engine::with_integrity(
            config,
            content,
            live_stream::Integrity::Static(tree),
            chunk_count,
            store,
            now,
        )
    }

    /// The engine for `chunk_count` chunks (a live stream: its address space).
    fn with_integrity(
        config: EngineConfig,
        content: ContentInfo,
        integrity: live_stream::Integrity,
        chunk_count: u64,
        store: S,
        now: Time,
    ) -> Result<Self, EngineError> {
        config.validate()?;
        let root_bin =
            Bin::covering(chunk_count).ok_or(EngineError::Content(ContentError::NoChunks))?;
        let mut exclude = Binmap::new();
        // Chunks past the end are never wanted.
        for b in Bin::from_chunk_range(chunk_count, root_bin.last_chunk()) {
            exclude.set(b);
        }
        let burst = |rate: u64| rate.max(4 * (content.chunk_size as u64 + 512));
        let next_stats = config.stats_interval.map(|d| now + d);
        let max_half_open = config.max_half_open;
        let held =
            held_window::HeldWindow::new(chunk_count, content.chunk_size, config.max_held_bytes);
        let mut engine = Engine {
            picker: config.picker.build(),
            rng: Rng::new(config.seed),
            // Its own stream, so the engine's other draws are those of its seed as before.
            pick_twist: Rng::new(config.seed ^ PICK_TWIST_STREAM).next_u64(),
            upload: config
                .upload_limit
                .map_or_else(TokenBucket::unlimited, |r| {
                    TokenBucket::new(r, burst(r) / 4, now)
                }),
            download: config
                .download_limit
                .map_or_else(TokenBucket::unlimited, |r| {
                    TokenBucket::new(r, burst(r) / 4, now)
                }),
            config,
            content,
            chunk_count,
            root_bin,
            integrity,
            store,
            have: Binmap::new(),
            have_count: 0,
            have_gained: 0,
            exclude,
            avail: Availability::new(),
            channels: BTreeMap::new(),
            by_addr: BTreeMap::new(),
            half_open: half_open::HalfOpenTable::new(max_half_open),
            banned: BTreeSet::new(),
            own_addrs: BTreeSet::new(),
            redials: redial::Redials::new(),
            refusals: VecDeque::new(),
            batched_to: BTreeMap::new(),
            storing_paused: false,
            length_check: LengthCheck::default(),
            events: VecDeque::new(),
            stats: Stats {
                chunk_count,
                ..Stats::default()
            },
            cursor: 0,
            upload_ready_at: None,
            download_ready_at: None,
            next_stats,
            complete_reported: false,
            progress_reported: 0,
            held,
            uploading: true,
            origin: None,
            saved: saved_copies::SavedCopies::default(),
            endgame: false,
            pick_again: false,
            timers_ran_at: None,
            scratch: Vec::new(),
            hash_scratch: Vec::new(),
        };
        // Under a bound, only the window from the start is wanted at first.
        engine.move_window(0..chunk_count);
        Ok(engine)
    }

    /// Bytes in `chunk` (the last one may be short; 0 past the end).
    fn chunk_len(&self, chunk: u64) -> usize {
        crate::store::chunk_span(
            self.content.content_len,
            self.content.chunk_size as usize,
            chunk,
        )
        .map_or(0, |r| (r.end - r.start) as usize)
    }

    /// The bins covering exactly the content's chunks.
    fn content_bins(&self) -> Vec<Bin> {
        Bin::from_chunk_range(0, self.chunk_count - 1).collect()
    }

    /// The content this engine shares.
    pub fn content(&self) -> &ContentInfo {
        &self.content
    }

    /// Chunks in the content.
    pub fn chunk_count(&self) -> u64 {
        self.chunk_count
    }

    /// Chunks verified and stored.
    pub fn have(&self) -> &Binmap {
        &self.have
    }

    /// True once every chunk is verified and stored.
    pub fn is_complete(&self) -> bool {
        self.have_count >= self.chunk_count
    }

    /// Whether availability (how many peers hold each chunk) is kept: while chunks are
    /// still picked from static content. Live peers' maps slide, and the live picker needs
    /// no counts.
    fn tracks_availability(&self) -> bool {
        !self.is_complete() && !self.is_live()
    }

    /// The Merkle tree of static content (`None` for a live stream).
    fn tree(&self) -> Option<&VerifyingTree> {
        match &self.integrity {
            live_stream::Integrity::Static(t) => Some(t),
            live_stream::Integrity::Live(_) => None,
        }
    }

    fn tree_mut(&mut self) -> Option<&mut VerifyingTree> {
        match &mut self.integrity {
            live_stream::Integrity::Static(t) => Some(t),
            live_stream::Integrity::Live(_) => None,
        }
    }

    /// The chunk store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The chunk store, mutably (e.g. for the adapter to free space after
    /// [`Event::StoreFailed`]).
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Consumes the engine, returning its store (e.g. the downloaded content).
    pub fn into_store(self) -> S {
        self.store
    }

    /// The settings the engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Opens a channel to `peer` (the initiator's handshake goes out on the next
    /// [`poll_transmit`](Self::poll_transmit)), unless one exists, the peer was banned or
    /// is ourselves, or the engine is full: the outcome says which.
    pub fn connect(&mut self, peer: A, now: Time) -> Connect {
        if self.by_addr.contains_key(&peer) {
            return Connect::AlreadyConnected;
        }
        if self.banned.contains(&peer) {
            return Connect::Banned;
        }
        if self.own_addrs.contains(&peer) {
            return Connect::OwnAddress;
        }
        if self.channels.len() >= self.config.max_peers {
            return Connect::Full;
        }
        let id = self.fresh_channel_id();
        self.new_channel(peer, id, now);
        if let Some(ch) = self.channels.get_mut(&id) {
            ch.handshake.open(now);
        }
        Connect::Started
    }

    /// Closes the channel to `peer` with an explicit close.
    pub fn close(&mut self, peer: &A) {
        if let Some(ch) = self
            .by_addr
            .get(peer)
            .and_then(|id| self.channels.get_mut(id))
        {
            ch.liveness
                .close(CloseReason::ClosedLocally, ch.handshake.remote_id() != 0);
        }
    }

    /// Closes every channel (call `poll_transmit` afterwards to send the closes).
    pub fn close_all(&mut self) {
        let peers: Vec<A> = self.by_addr.keys().cloned().collect();
        for p in peers {
            self.close(&p);
        }
    }

    /// The transport to `peer` is gone (WebRTC connection closed): forget the channel
    /// without sending anything.
    pub fn peer_lost(&mut self, peer: &A) {
        self.redials.forget(peer);
        self.batched_to.remove(peer);
        if let Some(id) = self.by_addr.get(peer).copied() {
            self.remove_channel(id, CloseReason::ClosedByPeer);
        }
    }

    /// Lets DATA to `peer` share datagrams of up to `max_len` bytes (`None`: one chunk per
    /// datagram, the default). Only for a peer that said it reads them (RFC 7574 allows
    /// several full-size chunks in a datagram, but a reader that takes DATA to the
    /// datagram's end does not) over a transport that carries such datagrams whole, such
    /// as a data channel. Each batch goes while the path to the peer loses nothing: one
    /// lost datagram then costs all its chunks. Holds for the peer's later channels too,
    /// until [`peer_lost`](Self::peer_lost). `max_len` is capped at the codec's limit.
    pub fn set_data_batching(&mut self, peer: &A, max_len: Option<usize>) {
        match max_len {
            Some(len) => {
                let len = len.min(CodecConfig::default().max_datagram_len);
                self.batched_to.insert(peer.clone(), len);
            }
            None => {
                self.batched_to.remove(peer);
            }
        }
    }

    /// Changes the congestion-control priority towards `peer` (0 = LEDBAT, N = N TCPs),
    /// on the live channel.
    pub fn set_priority(&mut self, peer: &A, priority: u32) {
        if let Some(ch) = self
            .by_addr
            .get(peer)
            .and_then(|id| self.channels.get_mut(id))
        {
            ch.sending.set_priority(priority);
        }
    }

    /// Marks `peer` as an origin (or not): a seeder of last resort, such as the site's own
    /// server. Requests go to it only for chunks the picker says are due (playback needs
    /// them next) or that no other connected peer holds, so the swarm carries the rest and
    /// the origin's upload stays low (what CDN offload means). Off by default.
    pub fn set_origin(&mut self, peer: &A, origin: bool) {
        if let Some(ch) = self
            .by_addr
            .get(peer)
            .and_then(|id| self.channels.get_mut(id))
        {
            ch.origin = origin;
        }
    }

    /// Moves the picker's playhead (VoD: seek or playback progress), and with it the
    /// window of chunks wanted under [`EngineConfig::max_held_bytes`]. A live viewer
    /// aimed so (a page playing a segment of a live playlist) keeps its aim when it tunes
    /// in, and fetches within [`set_read_ahead`](Self::set_read_ahead) of it.
    pub fn set_playhead(&mut self, chunk: u64) {
        self.aim_live();
        self.move_playhead(chunk);
    }

    /// Moves the playhead without the caller's aim (a live viewer tuning in).
    pub(super) fn move_playhead(&mut self, chunk: u64) {
        let old = self.wanted();
        let chunk = self.held.set_playhead(chunk);
        self.picker.set_playhead(chunk);
        self.move_window(old);
    }

    /// Whether to upload: with `false` (a viewer on a metered connection, say) no HAVE is
    /// sent and every peer is choked, so nobody asks us for anything; what peers were
    /// told before stays told (RFC 7574 has no message taking a HAVE back), and asking
    /// for it meets a CHOKE. With `true` again, peers are unchoked and told what we hold.
    pub fn set_uploading(&mut self, uploading: bool) {
        if self.uploading == uploading {
            return;
        }
        self.uploading = uploading;
        if !uploading {
            for ch in self.channels.values_mut() {
                ch.stop_serving();
            }
        }
    }

    /// Whether we upload ([`set_uploading`](Self::set_uploading)).
    pub fn is_uploading(&self) -> bool {
        self.uploading
    }

    /// Fetches at most `chunks` from the playhead on (`None`: no such bound), from peers
    /// and the HTTP origin alike: a viewer who leaves early has not made the swarm or the
    /// origin send the rest. What is held is kept and served whatever the bound. A live
    /// viewer takes it only once aimed with [`set_playhead`](Self::set_playhead).
    pub fn set_read_ahead(&mut self, chunks: Option<u64>) {
        let old = self.wanted();
        self.held.set_read_ahead(chunks);
        self.move_window(old);
    }

    /// Where the chunks wanted now end (exclusive): under
    /// [`EngineConfig::max_held_bytes`] or [`set_read_ahead`](Self::set_read_ahead) the end
    /// of the window from the playhead, else the chunk count. Chunks from there on are not
    /// fetched until the playhead moves.
    pub fn wanted_end(&self) -> u64 {
        self.wanted().end
    }

    /// How many connected peers said they hold `chunk` (a live viewer deciding whether to
    /// wait for peers or take a segment from the web server).
    pub fn peers_holding(&self, chunk: u64) -> usize {
        let Some(bin) = Bin::chunk(chunk) else {
            return 0;
        };
        self.channels
            .values()
            .filter(|c| {
                c.handshake.is_established() && !c.liveness.is_closing() && c.holdings.holds(bin)
            })
            .count()
    }

    /// Connected (or connecting) peers.
    pub fn peers(&self) -> impl Iterator<Item = &A> {
        self.by_addr.keys()
    }

    /// Some peer refused us a channel for want of room and will be asked again (a fetch
    /// whose only peers are full is waiting, not abandoned).
    pub fn redialing(&self) -> bool {
        self.redials.pending()
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event<A>> {
        if self.events.is_empty() && self.progress_reported != self.have_count && !self.is_live() {
            self.push_progress();
        }
        self.events.pop_front()
    }

    fn push_progress(&mut self) {
        self.progress_reported = self.have_count;
        self.push_event(Event::Progress {
            have: self.have_count,
            total: self.chunk_count,
        });
    }

    /// The engine's current figures (also emitted as [`Event::Stats`] when configured).
    pub fn stats(&self) -> Stats {
        Stats {
            chunks_have: self.have_count,
            chunk_count: self.live_edge().unwrap_or(self.chunk_count),
            peers: self.channels.len(),
            half_open: self.half_open.len(),
            origin_held_ms: self.origin.as_deref().map_or(0, |o| o.held_ms()),
            ..self.stats.clone()
        }
    }

    /// Per-channel figures (window, RTT, queuing delay…), for charts and `--stats-json`.
    pub fn channel_stats(&self) -> Vec<ChannelStats<A>> {
        self.channels
            .values()
            .map(|ch| ChannelStats {
                peer: ch.addr.clone(),
                established: ch.handshake.is_established(),
                send_state: ch.send_state(ch.serve_queue.has_data()),
                cwnd: ch.sending.cwnd(),
                srtt: ch.sending.srtt(),
                queuing_delay: ch.sending.queuing_delay(),
                priority: ch.sending.priority(),
                in_flight: ch.in_flight.len(),
                requests_outstanding: ch.requests.len(),
                choked_by_peer: ch.choke.choked_by_peer(),
                choking: ch.choke.is_choking(),
                serve_queue: ch.serve_queue.len(),
                peer_chunks: ch
                    .holdings
                    .map()
                    .count_filled_in(self.root_bin)
                    .min(self.chunk_count),
                bytes_uploaded: ch.bytes_up,
                bytes_downloaded: ch.bytes_down,
            })
            .collect()
    }

    fn push_event(&mut self, event: Event<A>) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// A channel ID used by no channel and no half-open handshake.
    fn fresh_channel_id(&mut self) -> u32 {
        let mut id = self.rng.channel_id();
        while self.channels.contains_key(&id) || self.half_open.contains(id) {
            id = self.rng.channel_id();
        }
        id
    }

    fn new_channel(&mut self, peer: A, id: u32, now: Time) {
        let codec = self.base_codec();
        let ch = Channel::new(peer.clone(), id, codec, &self.config.congestion, now);
        self.channels.insert(id, Box::new(ch));
        self.by_addr.insert(peer, id);
    }

    /// `now` on the wall clock DATA timestamps use (see
    /// [`EngineConfig::wall_clock_offset`]).
    fn wall_clock(&self, now: Time) -> Time {
        now + self.config.wall_clock_offset
    }

    /// Requests chunks again after a [`Event::StoreFailed`] (the adapter freed space, or
    /// switched stores). Peers are judged on their deliveries from `now` on: the pause was
    /// ours.
    pub fn resume_storing(&mut self, now: Time) {
        self.storing_paused = false;
        for ch in self.channels.values_mut() {
            ch.delivery.judge_from(now);
        }
    }

    /// Forgets a channel: its requests return to the pool, its map leaves availability.
    fn remove_channel(&mut self, id: u32, reason: CloseReason) {
        let Some(ch) = self.channels.remove(&id) else {
            return;
        };
        if self.by_addr.get(&ch.addr) == Some(&id) {
            self.by_addr.remove(&ch.addr);
        }
        for (chunk, _) in ch.requests.iter() {
            self.release_request(chunk);
        }
        self.pick_again |= !ch.requests.is_empty();
        if ch.handshake.is_established() && self.tracks_availability() {
            if ch.holdings.is_complete() {
                self.avail.remove_seeder();
            } else {
                self.avail.remove_peer(ch.holdings.map());
            }
        }
        // What the others were presumed to have let go may now be held by nobody else.
        self.restore_presumed_gone();
        self.push_event(Event::PeerClosed {
            peer: ch.addr,
            reason,
        });
    }

    /// A request for `chunk` ended without the chunk: let pickers choose it again (if it
    /// is still wanted).
    fn release_request(&mut self, chunk: u64) {
        if let Some(b) = Bin::chunk(chunk)
            && !self.have.is_filled(b)
            && self.is_wanted(chunk)
            && !self.saved_pending(chunk)
        {
            self.exclude.reset(b);
        }
    }

    /// Refuses an opening handshake from `peer` (its channel `remote_id`) for want of room:
    /// a close goes back, so that it asks again later instead of waiting on us.
    fn refuse(&mut self, peer: A, remote_id: u32) {
        self.stats.handshakes_refused += 1;
        // One close per incoming handshake or answered one at most, no larger than it, and
        // a queue bounded like the half-open table (a crowd arriving at once all hear).
        if self.refusals.len() < self.config.max_half_open {
            self.refusals.push_back((peer, remote_id));
        }
    }

    /// Drops a peer that broke the rules and never talks to it again.
    fn ban(&mut self, id: u32, why: Misbehaviour) {
        if let Some(ch) = self.channels.get(&id) {
            self.banned.insert(ch.addr.clone());
            self.redials.forget(&ch.addr);
        }
        self.remove_channel(id, CloseReason::Misbehaving(why));
    }
}

impl<A: PeerAddr, S: ChunkStore> SansIo for Engine<A, S> {
    type Addr = A;
    type Event = Event<A>;

    fn connect(&mut self, peer: A, now: Time) -> Connect {
        Engine::connect(self, peer, now)
    }

    fn peer_lost(&mut self, peer: &A) {
        Engine::peer_lost(self, peer);
    }

    fn set_data_batching(&mut self, peer: &A, max_len: Option<usize>) {
        Engine::set_data_batching(self, peer, max_len);
    }

    fn handle_datagram(&mut self, now: Time, from: A, bytes: &[u8]) {
        Engine::handle_datagram(self, now, from, bytes);
    }

    fn handle_timeout(&mut self, now: Time) {
        Engine::handle_timeout(self, now);
    }

    fn poll_timeout(&self) -> Option<Time> {
        Engine::poll_timeout(self)
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<A> {
        Engine::poll_transmit(self, now, buf)
    }

    fn poll_event(&mut self) -> Option<Event<A>> {
        Engine::poll_event(self)
    }
}
