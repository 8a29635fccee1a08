//! Live streams in the engine: what follows from the stream's decisions (`LiveStream`,
//! `live_stream.rs`) for channels, the store, the picker and events, and the live
//! engine's constructors and source API.

use super::channel::Channel;
use super::chunk_signature::ChunkSignature;
use super::config::{ContentError, ContentInfo, EngineConfig, EngineError, PickerKind};
use super::event::Event;
use super::handshake::SwarmParams;
use super::live_stream::{Integrity, LiveProof, LiveStream};
use super::{Engine, PeerAddr};
use crate::Bin;
use crate::codec::{CodecConfig, signature_size};
use crate::live::{
    LIVE_CHUNKS, LiveError, LiveInfo, LiveParams, LiveSigningKey, LiveVerifier, SignedMunro,
    SignedWithin, SpecFormat, ntp_from_unix_micros,
};
use crate::merkle::Hash;
use crate::store::ChunkStore;
use crate::time::Time;

/// Parameters the engine cannot run a live stream with.
fn check_params(params: &LiveParams) -> Result<(), EngineError> {
    if params.discard_window == 0 {
        return Err(EngineError::Config(
            "the live discard window must be at least 1 chunk",
        ));
    }
    if params.chunk_size == 0 {
        return Err(EngineError::Config(
            "the chunk size must be at least 1 byte",
        ));
    }
    Ok(())
}

/// The content description the engine's shared code uses for a live stream: no root, a
/// length covering the whole address space (every chunk may be full).
fn live_content(params: &LiveParams) -> ContentInfo {
    ContentInfo {
        root: Hash::zero(params.hash),
        hash: params.hash,
        chunk_size: params.chunk_size,
        content_len: LIVE_CHUNKS * u64::from(params.chunk_size),
    }
}

/// A live DATA datagram must fit: the chunk, the munro, its signature and one uncle per
/// layer below it, and up to an MTU of control messages.
fn check_datagram_fits(params: &LiveParams, sig_len: usize, mtu: usize) -> Result<(), EngineError> {
    let per_hash = 1 + 16 + params.hash.size();
    // Sign All sends no hash; a munro comes with its own and one uncle per layer.
    let layers = match params.signs_every_chunk() {
        true => 0,
        false => params.chunks_per_signature.trailing_zeros() as usize + 1,
    };
    let signed = 1 + 16 + 8 + sig_len;
    let data = 1 + 16 + 8 + params.chunk_size as usize;
    let max = CodecConfig::default().max_datagram_len;
    if mtu + layers * per_hash + signed + data > max {
        return Err(EngineError::Content(
            ContentError::ChunkTooLargeForDatagram {
                chunk_size: params.chunk_size,
                max,
            },
        ));
    }
    Ok(())
}

fn live_error(e: LiveError) -> EngineError {
    match e {
        LiveError::BadParameters(why) => EngineError::Config(why),
        _ => EngineError::Config("invalid live parameters"),
    }
}

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// A viewer of a live stream: it verifies every chunk under munros signed by
    /// `info.key`. The picker is the live one (from the edge, within the discard window),
    /// whatever `config.picker` says; the discard window bounds what is held, so
    /// `max_held_bytes` is not needed. `store` must take chunks anywhere in
    /// [`LIVE_CHUNKS`], the last one possibly short
    /// ([`SparseStore::live`](crate::store::SparseStore::live)).
    pub fn new_live(
        mut config: EngineConfig,
        info: LiveInfo,
        store: S,
        now: Time,
    ) -> Result<Self, EngineError> {
        check_params(&info.params)?;
        let format = SpecFormat {
            addressing: config.chunk_addressing,
            chunk_size: info.params.chunk_size,
        };
        config.picker = PickerKind::Live {
            discard_window: info.params.discard_window,
        };
        let sign_all = info.params.signs_every_chunk();
        let stream = LiveStream::viewer(info, format).map_err(live_error)?;
        let mut engine = Engine::with_live(config, stream, store, now)?;
        if sign_all {
            // No claim of the edge is proven before a chunk verifies (see the module).
            engine.picker.unanchor();
        }
        Ok(engine)
    }

    /// The source of a live stream, signing with `key`: chunks go in through
    /// [`push_live_chunk`](Self::push_live_chunk).
    pub fn new_live_source(
        mut config: EngineConfig,
        key: LiveSigningKey,
        params: LiveParams,
        store: S,
        now: Time,
    ) -> Result<Self, EngineError> {
        check_params(&params)?;
        let format = SpecFormat {
            addressing: config.chunk_addressing,
            chunk_size: params.chunk_size,
        };
        // A run of its own, so viewers take no munro of an earlier run of the same key.
        let session = crate::live::session::session_from_seed(config.seed);
        let stream = LiveStream::source(key, params, format, session).map_err(live_error)?;
        config.picker = PickerKind::Live {
            discard_window: params.discard_window,
        };
        Engine::with_live(config, stream, store, now)
    }

    fn with_live(
        config: EngineConfig,
        stream: LiveStream,
        store: S,
        now: Time,
    ) -> Result<Self, EngineError> {
        let info = stream.info();
        let params = info.params;
        check_datagram_fits(&params, info.key.algorithm().signature_len(), config.mtu)?;
        Engine::with_integrity(
            config,
            live_content(&params),
            Integrity::Live(Box::new(stream)),
            LIVE_CHUNKS,
            store,
            now,
        )
    }

    /// The caller aims a live viewer's playhead (see `set_playhead`).
    pub(super) fn aim_live(&mut self) {
        if let Some(l) = self.live_mut() {
            l.aim();
        }
    }

    /// The live stream, if this engine plays or sources one.
    pub(super) fn live(&self) -> Option<&LiveStream> {
        match &self.integrity {
            Integrity::Live(l) => Some(l),
            Integrity::Static(_) => None,
        }
    }

    pub(super) fn live_mut(&mut self) -> Option<&mut LiveStream> {
        match &mut self.integrity {
            Integrity::Live(l) => Some(l),
            Integrity::Static(_) => None,
        }
    }

    /// Whether this engine takes part in a live stream.
    pub fn is_live(&self) -> bool {
        self.live().is_some()
    }

    /// The live stream's description (`None` for static content).
    pub fn live_info(&self) -> Option<&LiveInfo> {
        self.live().map(LiveStream::info)
    }

    /// One past the newest chunk under a signed munro (`None` for static content, 0 before
    /// the first munro).
    pub fn live_edge(&self) -> Option<u64> {
        self.live().map(LiveStream::edge)
    }

    /// The first chunk still in the discard window (`None` for static content).
    pub fn live_floor(&self) -> Option<u64> {
        self.live().map(LiveStream::floor)
    }

    /// The chunks that exist for this engine now: all of static content; for a live
    /// stream, from the discard window's start to the edge.
    pub(super) fn addressable(&self) -> core::ops::Range<u64> {
        match self.live() {
            Some(l) => l.addressable(),
            None => 0..self.chunk_count,
        }
    }

    /// Whether this is a Sign All stream (its signatures travel without hashes).
    pub(super) fn signs_every_chunk(&self) -> bool {
        self.live().is_some_and(LiveStream::signs_every_chunk)
    }

    /// What a channel's handshake must agree on.
    pub(super) fn swarm_params(&self) -> SwarmParams<'_> {
        self.integrity.swarm_params(&self.content)
    }

    /// The signature length on this swarm's channels (the codec's default otherwise).
    pub(super) fn live_signature_size(&self) -> Option<usize> {
        self.live()
            .and_then(|l| signature_size(l.info().key.algorithm().dnssec_number()))
    }

    /// Adds the next chunk of the stream (a source only) and returns its index. It is held
    /// and announced once its munro is signed, every `chunks_per_signature` chunks (or at
    /// [`finish_live`](Self::finish_live)). The chunk is stored first: a store error
    /// leaves the stream as it was.
    pub fn push_live_chunk(&mut self, data: &[u8], now: Time) -> Result<u64, LivePushError> {
        let timestamp = ntp_from_unix_micros(self.wall_clock(now).as_micros());
        let chunk_size = self.content.chunk_size as usize;
        let Some(source) = self.live_mut().and_then(LiveStream::source_mut) else {
            return Err(LivePushError::NotASource);
        };
        let chunk = source.next_chunk();
        if data.is_empty() || data.len() > chunk_size {
            return Err(LivePushError::Live(LiveError::WrongLength(data.len())));
        }
        if chunk >= LIVE_CHUNKS {
            return Err(LivePushError::Full);
        }
        self.store
            .write_chunk(chunk, data)
            .map_err(LivePushError::Store)?;
        let Some(source) = self.live_mut().and_then(LiveStream::source_mut) else {
            return Err(LivePushError::NotASource);
        };
        match source.push_chunk(data, timestamp) {
            Ok(Some(munro)) => self.signed(munro),
            Ok(None) => {}
            Err(e) => {
                self.store.evict_chunk(chunk);
                return Err(LivePushError::Live(e));
            }
        }
        Ok(chunk)
    }

    /// The stream ended (a source only): the chunks not signed yet are signed and
    /// announced. Nothing more can be pushed.
    pub fn finish_live(&mut self, now: Time) -> Result<(), LivePushError> {
        let timestamp = ntp_from_unix_micros(self.wall_clock(now).as_micros());
        let Some(source) = self.live_mut().and_then(LiveStream::source_mut) else {
            return Err(LivePushError::NotASource);
        };
        let munros = source.finish(timestamp).map_err(LivePushError::Live)?;
        for m in munros {
            self.signed(m);
        }
        Ok(())
    }

    /// The source signed `munro`: its chunks are held and announced.
    fn signed(&mut self, munro: SignedMunro) {
        let bin = munro.bin;
        self.push_event(Event::LiveSigned {
            munro: munro.clone(),
        });
        self.munro_accepted(munro);
        if let Some((first, last)) = bin.chunk_range() {
            for c in first..=last {
                if let Some(b) = Bin::chunk(c) {
                    self.have.set(b);
                    self.exclude.set(b);
                    self.have_count += 1;
                    self.have_gained += 1;
                }
            }
        }
        self.discard_behind_window();
    }

    /// A munro was signed or accepted: the edge moves on, and it is told on every channel.
    pub(super) fn munro_accepted(&mut self, munro: SignedMunro) {
        let Some(moved) = self.live_mut().and_then(|l| l.accept_munro(munro)) else {
            return;
        };
        let gone = moved.out_of_reach;
        if !gone.is_empty() {
            // What peers announced beyond the new bound is not taken any more.
            for ch in self.channels.values_mut() {
                for b in Bin::from_chunk_range(gone.start, gone.end - 1) {
                    ch.holdings.let_go(b);
                }
            }
        }
        self.push_event(Event::LiveEdge {
            end: moved.end,
            signed_at_unix_micros: moved.signed_at_unix_micros,
        });
    }

    /// The dates a signature may have now (NTP): from `live_max_age` before the wall clock
    /// (older is stale) to `live_max_ahead` after it, and for the first one a viewer takes,
    /// from `live_tune_in_max_age` before it.
    pub(super) fn signed_within(&self, now: Time) -> SignedWithin {
        self.signed_within_tuning_in(now, self.config.live_tune_in_max_age)
    }

    /// As [`signed_within`](Self::signed_within), with the first signature taken at most
    /// `tune_in` old.
    pub(super) fn signed_within_tuning_in(
        &self,
        now: Time,
        tune_in: core::time::Duration,
    ) -> SignedWithin {
        let wall = self.wall_clock(now).as_micros();
        let micros = |d: core::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let before = |d| ntp_from_unix_micros(wall.saturating_sub(micros(d)));
        SignedWithin {
            not_before: before(self.config.live_max_age),
            not_after: ntp_from_unix_micros(
                wall.saturating_add(micros(self.config.live_max_ahead)),
            ),
            tune_in_not_before: before(tune_in),
        }
    }

    /// A viewer's verifier (`None` for a source or static content).
    pub(super) fn live_viewer_mut(&mut self) -> Option<&mut LiveVerifier> {
        self.live_mut()?.viewer_mut()
    }

    /// The source restarted (a genuine munro of a newer run of it came,
    /// `live::session`): everything of the earlier run is let go of, here and in what we
    /// know of peers (`ch`, the channel whose datagram brought it, included), and the
    /// stream is joined anew, following only the run that signed at `timestamp`.
    pub(super) fn restart_live_viewer(&mut self, ch: Option<&mut Channel<A>>, timestamp: u64) {
        let old = self.wanted();
        if !self.live_mut().is_some_and(|l| l.restart(timestamp)) {
            return;
        }
        while let Some(b) = self.have.find_filled(0..LIVE_CHUNKS) {
            for c in b.base_offset()..b.base_offset() + b.base_length() {
                self.store.evict_chunk(c);
            }
            self.have_count = self.have_count.saturating_sub(b.base_length());
            self.have.reset(b);
        }
        if let Some(ch) = ch {
            forget_earlier_run(ch);
            // It told us of the new run.
            ch.live.set_other_run(false);
        }
        for other in self.channels.values_mut() {
            forget_earlier_run(other);
            // Until it sends a munro of the new run, what it announces may be the old run's.
            other.live.set_other_run(true);
        }
        // Nothing held, nothing asked: what the earlier run's chunks and requests kept
        // from the pickers is free again.
        self.exclude.clear();
        // A picker as a newcomer's: it hooks in at the new run's edge.
        self.picker = self.config.picker.build();
        if self.signs_every_chunk() {
            self.picker.unanchor();
        }
        self.move_window(old);
        self.push_event(Event::LiveRestarted);
    }

    /// A SIGNED_INTEGRITY from a peer, with the INTEGRITY messages before it: a munro is
    /// accepted if its signature is the source's and it is recent. `Err` bans the peer.
    pub(super) fn on_signed_integrity(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        bin: Bin,
        timestamp: u64,
        signature: &[u8],
        hashes: &[(Bin, Hash)],
    ) -> Result<(), LiveError> {
        let within = self.signed_within(now);
        let Some(live) = self.live_mut() else {
            return Ok(());
        };
        if !live.is_viewer() {
            // Only the source signs: what others claim is of no use to it.
            return Ok(());
        }
        if live.signs_every_chunk() {
            return keep_chunk_signature(live, ch, bin, timestamp, signature, within);
        }
        let Some(verifier) = live.viewer_mut() else {
            return Ok(());
        };
        let Some(&(_, hash)) = hashes.iter().find(|(b, _)| *b == bin) else {
            // Its hash was not sent first (RFC 7574 §6.1.2): it cannot be checked, and
            // proves nothing against the peer.
            return Ok(());
        };
        let munro = SignedMunro {
            bin,
            timestamp,
            hash,
            signature: signature.to_vec(),
        };
        let mut added = verifier.add_munro(&munro, within);
        if let Err(LiveError::NewSession(_)) = added {
            self.restart_live_viewer(Some(ch), munro.timestamp);
            added = match self.live_viewer_mut() {
                Some(v) => v.add_munro(&munro, within),
                None => return Ok(()),
            };
        }
        match added {
            Ok(_) => ch.live.set_other_run(false),
            Err(LiveError::OtherSession(_)) => ch.live.set_other_run(true),
            Err(_) => {}
        }
        match added {
            Ok(true) => {
                self.stats.munros_accepted += 1;
                self.munro_accepted(munro);
                self.discard_behind_window();
                Ok(())
            }
            // Known, or behind the window (a race with our window moving), of an earlier
            // run of the source (replayed, or relayed by a peer still on it), or dated
            // ahead of our clock: harmless, and not taken.
            Ok(false)
            | Err(
                LiveError::BehindWindow(_)
                | LiveError::OtherSession(_)
                | LiveError::NewSession(_)
                | LiveError::TooOldToTuneIn(_)
                | LiveError::Ahead { .. },
            ) => Ok(()),
            Err(e) => {
                self.stats.munros_rejected += 1;
                Err(e)
            }
        }
    }

    /// The accepted (or signed) munro covering `chunk`.
    pub(super) fn live_munro_bin(&self, chunk: u64) -> Option<Bin> {
        self.live()?.munro_of(chunk).map(|m| m.bin)
    }

    /// Verifies a live chunk under its munro.
    pub(super) fn verify_live_chunk(
        &mut self,
        chunk: u64,
        data: &[u8],
        uncles: &[(Bin, Hash)],
    ) -> Result<(), LiveError> {
        match self.live_viewer_mut() {
            Some(v) => v.verify_chunk(chunk, data, uncles),
            // A source holds every chunk it signed; nothing else exists.
            None => Err(LiveError::NoMunro(chunk)),
        }
    }

    /// Sign All: verifies `chunk` with the signature `ch` sent before it. Verified, the
    /// chunk moves the edge; `NoMunro` when no signature came for it.
    pub(super) fn verify_signed_chunk(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        chunk: u64,
        data: &[u8],
    ) -> Result<(), LiveError> {
        let Some(sig) = ch.live.take_signature(chunk) else {
            return Err(LiveError::NoMunro(chunk));
        };
        let within = self.signed_within(now);
        let Some(v) = self.live_viewer_mut() else {
            return Err(LiveError::NoMunro(chunk));
        };
        let mut verified =
            v.verify_signed_chunk(chunk, data, sig.timestamp, &sig.signature, within);
        if let Err(LiveError::NewSession(_)) = verified {
            self.restart_live_viewer(Some(&mut *ch), sig.timestamp);
            let Some(v) = self.live_viewer_mut() else {
                return Err(LiveError::NoMunro(chunk));
            };
            verified = v.verify_signed_chunk(chunk, data, sig.timestamp, &sig.signature, within);
        }
        let munro = verified?;
        self.stats.munros_accepted += 1;
        let tunes_in = self.live().is_some_and(LiveStream::tunes_in_next);
        self.munro_accepted(munro);
        if tunes_in {
            // The first proof of where the stream is: picking starts from here.
            self.move_playhead(chunk);
        }
        self.discard_behind_window();
        Ok(())
    }

    /// The proof to send with `chunk`: the munro and its signature when the peer may not
    /// hold it (`known` is the lowest layer whose ancestor of the chunk the peer holds a
    /// chunk under, as for static content), and the uncles below that layer.
    pub(super) fn live_proof(&self, chunk: u64, known: u32) -> Option<LiveProof> {
        self.live()?.proof(chunk, known)
    }

    /// The newest munro, if the peer on `ch` has not been sent it yet (secure tune-in).
    pub(super) fn munro_to_tell(&self, ch: &Channel<A>) -> Option<&SignedMunro> {
        self.live()?.munro_to_tell(ch.live.munro_told())
    }

    /// Slides the discard window behind the edge: what falls out of it is let go of, here
    /// and in what we know of peers.
    pub(super) fn discard_behind_window(&mut self) {
        let old = self.wanted();
        let Some(floor) = self.live_mut().and_then(LiveStream::slide_window) else {
            return;
        };
        // `find_filled` gives whole bins inside the range: each is let go of at once.
        while let Some(b) = self.have.find_filled(0..floor) {
            for c in b.base_offset()..b.base_offset() + b.base_length() {
                self.store.evict_chunk(c);
            }
            self.have_count = self.have_count.saturating_sub(b.base_length());
            self.have.reset(b);
        }
        for ch in self.channels.values_mut() {
            ch.requests.cancel_below(floor);
            ch.live.drop_signatures_below(floor);
            for b in Bin::from_chunk_range(0, floor - 1) {
                ch.holdings.let_go(b);
                ch.announcing.unannounce(b);
                ch.in_flight.forget(b);
                ch.serve_queue.cancel(b);
            }
        }
        self.move_window(old);
    }

    /// A peer's discard window (option 7), applied to what it announced: chunks it must
    /// have let go of are forgotten.
    pub(super) fn apply_peer_window(ch: &mut Channel<A>) {
        let Some(window) = ch.live.window() else {
            return;
        };
        let Some(newest) = ch.holdings.map().filled_ranges().last().map(|r| r.end) else {
            return;
        };
        let floor = newest.saturating_sub(window);
        if floor > 0 {
            for b in Bin::from_chunk_range(0, floor - 1) {
                ch.holdings.let_go(b);
            }
        }
    }
}

/// Sign All: a peer's chunk signature, kept on its channel until the chunk comes if the
/// stream takes it (`LiveStream::take_chunk_signature`). `Err` bans the peer.
fn keep_chunk_signature<A>(
    live: &mut LiveStream,
    ch: &mut Channel<A>,
    bin: Bin,
    timestamp: u64,
    signature: &[u8],
    within: SignedWithin,
) -> Result<(), LiveError> {
    let Some(claim) = live.take_chunk_signature(bin, timestamp, within)? else {
        return Ok(());
    };
    if claim.our_run {
        // It signs for our run: what it announces is of our run.
        ch.live.set_other_run(false);
    }
    ch.live.keep_signature(ChunkSignature {
        chunk: claim.chunk,
        timestamp,
        signature: signature.to_vec(),
    });
    Ok(())
}

/// A channel after its peer's stream restarted (`restart_live_viewer`): requests are
/// cancelled and what it and we announced is forgotten, as of chunks that do not exist.
fn forget_earlier_run<A>(ch: &mut Channel<A>) {
    ch.requests.cancel_all();
    ch.live.forget_run();
    ch.holdings.forget_all();
    ch.announcing.unannounce_all();
    ch.in_flight.forget_all();
    ch.serve_queue.forget();
}

/// Requests looked at when choosing the least-sent chunk to serve next.
const SERVE_SCAN: usize = 32;

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// Live: where in `ch`'s serve queue (among its first requests) the chunk sent fewest
    /// times so far is, the earliest asked on a tie. Everyone asks the source first for
    /// every new chunk; served in order, each chunk would go to every peer before the next
    /// went to anyone, and an overloaded source's queue would only grow. Fewest copies
    /// first spreads distinct chunks over the peers, who pass them on, and who take over
    /// requests that wait here too long (`schedule.rs`). `None`: not live, or nothing
    /// queued that the peer lacks.
    pub(super) fn least_sent_queued(&self, ch: &Channel<A>) -> Option<usize> {
        let live = self.live()?;
        let queued = ch
            .serve_queue
            .first_requests(SERVE_SCAN)
            .filter(|&(_, c)| self.peer_lacks(ch, c));
        live.least_sent(queued)
    }

    /// Live: `chunk` went out once more.
    pub(super) fn count_copy_sent(&mut self, chunk: u64) {
        if let Some(live) = self.live_mut() {
            live.copy_sent(chunk);
        }
    }
}

/// Why a live chunk could not be added at the source.
#[derive(Debug)]
pub enum LivePushError {
    /// This engine is not a live source.
    NotASource,
    /// The chunk is empty or too long, or the stream has ended.
    Live(LiveError),
    /// The store refused the chunk.
    Store(crate::store::StoreError),
    /// The stream used up its chunk addresses.
    Full,
}

impl core::fmt::Display for LivePushError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LivePushError::NotASource => f.write_str("this engine is not a live source"),
            LivePushError::Live(e) => e.fmt(f),
            LivePushError::Store(e) => write!(f, "storing a live chunk failed: {e}"),
            LivePushError::Full => f.write_str("the live stream used up its chunk addresses"),
        }
    }
}

impl std::error::Error for LivePushError {}
