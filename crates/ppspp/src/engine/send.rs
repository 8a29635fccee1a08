//! Outgoing datagrams: handshakes, control messages, and DATA with its hashes.

use super::channel::Channel;
use super::event::Event;
use super::handshake::our_options;
use super::recv::pex_message;
use super::{Engine, PeerAddr};
use crate::Bin;
use crate::binmap::Binmap;
use crate::codec::{
    CHANNEL_ID_LEN, ChunkSpec, CodecConfig, DatagramBuilder, EncodeError, Handshake, Message,
};
use crate::live::SignedMunro;
use crate::merkle::Hash;
use crate::store::ChunkStore;
use crate::time::Time;

/// Messages of one kind per datagram, so control datagrams stay near one MTU.
const MAX_ACKS: usize = 48;
const MAX_HAVES: usize = 16;
const MAX_REQUESTS: usize = 32;
/// Chunks in flight vouch for hashes only inside blocks of 2^this chunks (`integrity_for`).
const LEAN_LAYERS: u32 = 4;

/// The shortest DATA header: type, a 32-bit chunk spec, timestamp.
const DATA_HEADER_LEN: usize = 1 + 4 + 8;

/// Starts a datagram in the caller's buffer. Messages are refused once the datagram would
/// pass `mtu`; only DATA may go beyond it (see [`EngineConfig::mtu`](super::EngineConfig)).
fn begin(buf: &mut Vec<u8>, channel: u32, codec: &CodecConfig, mtu: usize) -> DatagramBuilder {
    let mut codec = *codec;
    codec.max_datagram_len = codec.max_datagram_len.min(mtu);
    DatagramBuilder::with_buffer(core::mem::take(buf), channel, &codec)
}

/// Adds a message if it fits; false when the datagram is full and the message must wait
/// for the next one.
fn fits(w: &mut DatagramBuilder, msg: &Message<'_>) -> bool {
    match w.push(msg) {
        Ok(()) => true,
        Err(EncodeError::Oversized { .. }) => false,
        Err(e) => {
            // Every spec comes from `spec` in the negotiated addressing and every hash from
            // the content's own tree: nothing else can fail to encode.
            debug_assert!(false, "engine built an unencodable {msg:?}: {e}");
            true
        }
    }
}

/// `bin` as a chunk spec in the datagram's addressing (`None`: it cannot be written there).
fn spec(w: &DatagramBuilder, bin: Bin) -> Option<ChunkSpec> {
    ChunkSpec::from_bin(bin, w.config().chunk_addressing, w.config().chunk_size).ok()
}

/// Adds a signed munro: its hash, then its signature (RFC 7574 §6.1.2); under Sign All
/// (`sign_all`) a chunk's signature alone, since it covers the chunk. False when the
/// datagram has no room (nothing is added then).
fn push_munro(w: &mut DatagramBuilder, munro: &SignedMunro, sign_all: bool) -> bool {
    let Some(s) = spec(w, munro.bin) else {
        return false;
    };
    let before = w.len();
    let done = (sign_all
        || fits(
            w,
            &Message::Integrity {
                chunks: s,
                hash: munro.hash.as_bytes(),
            },
        ))
        && fits(
            w,
            &Message::SignedIntegrity {
                chunks: s,
                timestamp: munro.timestamp,
                signature: &munro.signature,
            },
        );
    if !done {
        w.truncate(before);
    }
    done
}

/// Adds HAVEs for what `have` holds beyond `announced`, each the largest complete interval
/// around the news, so every chunk is announced about log n times. True once nothing is
/// left to announce.
fn push_news(
    announced: &mut Binmap,
    have: &Binmap,
    root_bin: Bin,
    w: &mut DatagramBuilder,
) -> bool {
    for _ in 0..MAX_HAVES {
        let Some(news) = Binmap::find_complement(announced, have, root_bin, 0) else {
            return true;
        };
        let bin = match have.cover(news) {
            b if !b.is_none() && root_bin.contains(b) => b,
            _ => news,
        };
        if let Some(spec) = spec(w, bin)
            && !fits(w, &Message::Have(spec))
        {
            return false;
        }
        announced.set(bin);
    }
    false
}

/// What [`Engine::push_control`] added to a datagram.
struct PushedControl {
    /// REQUESTs, the first of the channel's `to_request`.
    requests: usize,
    /// Anything besides REQUESTs.
    others: bool,
}

/// Adds as many pending ACKs as fit and returns how many; the caller removes them from
/// the channel's ACKs once the datagram is sure to go.
fn push_acks<A>(ch: &Channel<A>, w: &mut DatagramBuilder) -> usize {
    let mut taken = 0;
    for &(chunk, delay_us) in ch.announcing.acks().iter().take(MAX_ACKS) {
        if let Some(spec) = Bin::chunk(chunk).and_then(|b| spec(w, b))
            && !fits(
                w,
                &Message::Ack {
                    chunks: spec,
                    delay_us,
                },
            )
        {
            break;
        }
        taken += 1;
    }
    taken
}

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// Writes the next datagram into `buf` (replacing what it held) and returns where it
    /// goes; `None` when nothing is due. Call until `None` after every `handle_*` call.
    pub fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<A> {
        if let Some(to) = self.answer_half_open(now, buf) {
            return Some(to);
        }
        if let Some((to, remote_id)) = self.refusals.pop_front() {
            let mut w = begin(buf, remote_id, &self.base_codec(), self.config.mtu);
            fits(&mut w, &Message::Handshake(Handshake::close()));
            *buf = w.finish();
            self.stats.datagrams_sent += 1;
            return Some(to);
        }
        // Round robin: every channel once, starting after the last one that sent.
        let start = self.cursor;
        let mut next = self
            .channels
            .range(start.saturating_add(1)..)
            .next()
            .map(|(id, _)| *id);
        let mut wrapped = false;
        loop {
            let id = match next {
                Some(id) if !wrapped || id <= start => id,
                Some(_) => break,
                None if !wrapped => {
                    wrapped = true;
                    match self.channels.keys().next() {
                        Some(&id) if id <= start => id,
                        _ => break,
                    }
                }
                None => break,
            };
            next = self
                .channels
                .range(id.saturating_add(1)..)
                .next()
                .map(|(id, _)| *id);
            let Some(mut ch) = self.channels.remove(&id) else {
                continue;
            };
            let built = self.build(now, &mut ch, buf);
            let to = ch.addr.clone();
            // A closing channel ends once its close (if any) is out.
            let ended = ch.liveness.take_ended();
            self.channels.insert(id, ch);
            if let Some(reason) = ended {
                self.remove_channel(id, reason);
            }
            if built {
                self.cursor = id;
                self.stats.datagrams_sent += 1;
                return Some(to);
            }
        }
        None
    }

    /// Builds the channel's next datagram into `buf`; false if it has nothing to send.
    fn build(&mut self, now: Time, ch: &mut Channel<A>, buf: &mut Vec<u8>) -> bool {
        let mtu = self.config.mtu;
        if ch.liveness.is_closing() {
            if !ch.liveness.take_close_notice() {
                return false;
            }
            let mut w = begin(buf, ch.handshake.remote_id(), &ch.codec, mtu);
            fits(&mut w, &Message::Handshake(Handshake::close()));
            return self.sent(now, ch, w, buf);
        }
        if ch.handshake.awaits_answer() {
            // Initiator: only the opening handshake until the answer arrives.
            if !ch.handshake.opening_due(now) {
                return false;
            }
            return self.opening(now, ch, buf);
        }
        let mut w = begin(buf, ch.handshake.remote_id(), &ch.codec, mtu);
        if ch.handshake.take_to_send(now) {
            let options = our_options(&self.swarm_params(), None, ch.codec.chunk_addressing);
            fits(
                &mut w,
                &Message::Handshake(Handshake {
                    source_channel: ch.local_id,
                    options,
                }),
            );
        }
        if let Some(munro) = self.munro_to_tell(ch)
            && push_munro(&mut w, munro, self.signs_every_chunk())
        {
            ch.live.told_munro(self.live_edge().unwrap_or(0));
        }
        self.push_or_hold_haves(now, ch, &mut w);
        if !ch.handshake.is_established() {
            // A responder says nothing more before the initiator's third datagram.
            if w.is_empty() {
                *buf = w.finish();
                return false;
            }
            return self.sent(now, ch, w, buf);
        }
        let bare = w.is_empty();
        let acks = push_acks(ch, &mut w);
        let control = self.push_control(ch, &mut w);
        let data = self.push_data(now, ch, &mut w);
        let keepalive_due = ch.liveness.keepalive_due(now);
        if acks > 0
            && bare
            && !control.others
            && !data
            && !keepalive_due
            && !self.acks_due(ch, now)
            && (control.requests == 0 || ch.requests.awaiting_chunks())
        {
            // Nothing but ACKs and REQUESTs, which may wait for company: each datagram of
            // them takes a packet's place in the viewer's uplink queue, however small.
            w.truncate(CHANNEL_ID_LEN);
            *buf = w.finish();
            return false;
        }
        ch.announcing.acks_sent(acks);
        ch.requests.requests_sent(control.requests);
        if data || !w.is_empty() {
            return self.sent(now, ch, w, buf);
        }
        if keepalive_due {
            // A keep-alive is the bare channel ID; the interval doubles while idle.
            ch.liveness.keepalive_sent();
            return self.sent(now, ch, w, buf);
        }
        *buf = w.finish();
        false
    }

    fn sent(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        w: DatagramBuilder,
        buf: &mut Vec<u8>,
    ) -> bool {
        ch.liveness.sent(now);
        *buf = w.finish();
        true
    }

    /// The initiator's first datagram (datagram 1 of the three-way handshake).
    fn opening(&mut self, now: Time, ch: &mut Channel<A>, buf: &mut Vec<u8>) -> bool {
        ch.handshake.opening_sent(now);
        let params = self.swarm_params();
        let options = our_options(&params, Some(params.swarm_id), ch.codec.chunk_addressing);
        let mut w = begin(buf, 0, &ch.codec, self.config.mtu);
        fits(
            &mut w,
            &Message::Handshake(Handshake {
                source_channel: ch.local_id,
                options,
            }),
        );
        // Our HAVEs ride along only in the datagrams that follow: the opening one must stay
        // small, and a retry must not claim they were delivered.
        self.sent(now, ch, w, buf)
    }

    /// Answers a handshake from the half-open table: our handshake and HAVEs of what we
    /// hold, as libswift answers.
    fn answer_half_open(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<A> {
        let params = self.integrity.swarm_params(&self.content);
        let sign_all = self.signs_every_chunk();
        let (id, entry) = self.half_open.next_due()?;
        let mut w = begin(buf, entry.remote_id, &entry.codec, self.config.mtu);
        let options = our_options(&params, None, entry.codec.chunk_addressing);
        fits(
            &mut w,
            &Message::Handshake(Handshake {
                source_channel: id,
                options,
            }),
        );
        // A live stream's newest munro first: the HAVEs are taken only up to it.
        if let Some(munro) = self.integrity.newest_munro() {
            push_munro(&mut w, munro, sign_all);
        }
        if self.have_count > 0 {
            push_news(&mut entry.announced, &self.have, self.root_bin, &mut w);
        }
        entry.answer_resent |= entry.answered_at.is_some();
        entry.answered_at = Some(now);
        self.stats.datagrams_sent += 1;
        *buf = w.finish();
        Some(entry.addr.clone())
    }

    /// Whether chunks may have been verified that the peer was not told about (a HAVE
    /// search may still find nothing new).
    pub(super) fn has_news(&self, ch: &Channel<A>) -> bool {
        self.uploading
            && !(ch.holdings.is_complete()
                || self.have_count == 0
                || ch.announcing.announced_all_at(self.have_gained))
    }

    /// HAVEs for verified chunks the peer has not been told about, unless they may wait
    /// for company: until `max_have_delay` after the first of them, while nothing else is
    /// due to this peer (a datagram of them alone takes a packet's place in the viewer's
    /// uplink queue; waiting, consecutive chunks go as one HAVE). A channel's first HAVEs,
    /// what we held when the peer met us, go at once: it may be waiting for them to ask
    /// us for anything.
    fn push_or_hold_haves(&mut self, now: Time, ch: &mut Channel<A>, w: &mut DatagramBuilder) {
        if !self.has_news(ch) {
            ch.announcing.no_haves_held();
            return;
        }
        if ch.handshake.is_established() && w.is_empty() && ch.announcing.announced_any() {
            let due = ch.announcing.hold_haves(now + self.config.max_have_delay);
            if now < due && !self.company_due(ch, now) {
                return;
            }
        }
        self.push_haves(ch, w);
        if !self.has_news(ch) {
            ch.announcing.no_haves_held();
        }
    }

    /// Whether something besides HAVEs is likely to go to this peer now (what would carry
    /// held HAVEs along). A guess made before the datagram is built: if it is wrong, HAVEs
    /// go a little early, or wait for the next datagram or their deadline.
    fn company_due(&self, ch: &Channel<A>, now: Time) -> bool {
        let data_ready = ch.serve_queue.has_data()
            && ch.in_flight.len() < ch.sending.window()
            && now + self.config.pacing_granularity >= ch.sending.next_data();
        ch.choke.to_send().is_some()
            || !ch.requests.to_cancel().is_empty()
            || ch.pex.has_to_send()
            || (ch.announcing.has_acks() && self.acks_due(ch, now))
            || (!ch.requests.to_request().is_empty() && !ch.requests.awaiting_chunks())
            || ch.liveness.keepalive_due(now)
            || data_ready
    }

    /// HAVEs for verified chunks the peer has not been told about.
    fn push_haves(&mut self, ch: &mut Channel<A>, w: &mut DatagramBuilder) {
        // The search walks both maps: skip it while nothing was verified since the last one
        // found everything announced (it ran on every datagram built).
        if !self.has_news(ch) {
            return;
        }
        let (have, root_bin) = (&self.have, self.root_bin);
        ch.announcing.announce(self.have_gained, |announced| {
            push_news(announced, have, root_bin, w)
        });
    }

    /// Whether the channel's pending ACKs must go now rather than wait for company.
    fn acks_due(&self, ch: &Channel<A>, now: Time) -> bool {
        ch.announcing.acks_must_go(now, self.config.ack_every)
    }

    /// CHOKE/UNCHOKE, CANCELs, REQUESTs and PEX, as many as fit; the rest wait for the
    /// next datagram. The REQUESTs stay in the channel's `to_request` for the caller to remove
    /// once the datagram is sure to go.
    fn push_control(&mut self, ch: &mut Channel<A>, w: &mut DatagramBuilder) -> PushedControl {
        let mut others = false;
        if let Some(choke) = ch.choke.to_send()
            && fits(
                w,
                if choke {
                    &Message::Choke
                } else {
                    &Message::Unchoke
                },
            )
        {
            ch.choke.sent();
            others = true;
        }
        let mut taken = 0;
        for &bin in ch.requests.to_cancel() {
            if let Some(spec) = spec(w, bin)
                && !fits(w, &Message::Cancel(spec))
            {
                break;
            }
            taken += 1;
        }
        others |= taken > 0;
        ch.requests.cancels_sent(taken);
        let mut requests = 0;
        for &bin in ch.requests.to_request().iter().take(MAX_REQUESTS) {
            if let Some(spec) = spec(w, bin)
                && !fits(w, &Message::Request(spec))
            {
                break;
            }
            requests += 1;
        }
        if ch.pex.request_to_send() && fits(w, &Message::PexReq) {
            ch.pex.request_sent();
            others = true;
        }
        let mut taken = 0;
        for &addr in ch.pex.answers_to_send() {
            if !fits(w, &pex_message(addr)) {
                break;
            }
            taken += 1;
        }
        others |= taken > 0;
        ch.pex.answers_sent(taken);
        PushedControl { requests, others }
    }

    /// Adds INTEGRITY and DATA if the window, pacing and upload limit allow; true if it did.
    /// The chunk and its hashes may take the datagram past the MTU (a chunk is the unit of
    /// transfer); the hashes never go without their chunk (data-atomic datagrams). To a
    /// peer that takes batches ([`Engine::set_data_batching`]) more chunks follow, each
    /// with its hashes, as long as they are due and the path loses nothing: a batch costs
    /// one message, one send and one receive where each chunk cost its own. Pacing spaces
    /// the batches: a batch goes when its first chunk is due, and the next waits for all
    /// of its chunks' intervals.
    fn push_data(&mut self, now: Time, ch: &mut Channel<A>, w: &mut DatagramBuilder) -> bool {
        let slack = self.config.pacing_granularity;
        if now + slack < ch.sending.next_data()
            || !self.push_chunk(now, ch, w, ch.codec.max_datagram_len)
        {
            return false;
        }
        if let Some(&batch) = self.batched_to.get(&ch.addr)
            && ch.path_is_clean(now)
        {
            let max = batch.min(ch.codec.max_datagram_len);
            while w.len() < max && w.takes_data() && self.push_chunk(now, ch, w, max) {}
        }
        true
    }

    /// One chunk and its hashes if the window and upload limit allow, keeping the datagram
    /// within `max_len` bytes.
    fn push_chunk(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        w: &mut DatagramBuilder,
        max_len: usize,
    ) -> bool {
        let slack = self.config.pacing_granularity;
        if ch.in_flight.len() >= ch.sending.window() {
            return false;
        }
        let Some((chunk, retransmission)) = self.next_chunk(now, ch) else {
            return false;
        };
        let len = self.chunk_len(chunk) as u64;
        match self.upload.wait_for(now, len) {
            Some(d) if d.is_zero() => {}
            wait => {
                self.upload_ready_at = wait.map(|d| now + d);
                self.put_back(ch, chunk, retransmission, now);
                return false;
            }
        }
        let Some(data_spec) = Bin::chunk(chunk).and_then(|b| spec(w, b)) else {
            return false;
        };
        if w.len() + DATA_HEADER_LEN + len as usize > max_len {
            // Certain not to fit: no need to read it.
            self.put_back(ch, chunk, retransmission, now);
            return false;
        }
        self.scratch.clear();
        let mut data = std::mem::take(&mut self.scratch);
        let read = self.store.read_chunk(chunk, &mut data);
        if !matches!(read, Ok(true)) {
            // The store lost it (or never had it): nothing to send for this request.
            self.scratch = data;
            if let Err(error) = read {
                self.push_event(Event::StoreReadFailed { chunk, error });
            }
            return false;
        }
        w.set_max_len(max_len);
        let lean = !retransmission && ch.path_is_clean(now);
        let mut hashes = std::mem::take(&mut self.hash_scratch);
        let munro = self.integrity_for(ch, chunk, lean, &mut hashes);
        let before = w.len();
        // A live chunk's munro goes first, with its signature (digest §2.4).
        let sign_all = self.signs_every_chunk();
        let mut pushed = munro.as_ref().is_none_or(|m| push_munro(w, m, sign_all));
        pushed = pushed
            && hashes.iter().all(|(bin, hash)| {
                spec(w, *bin).is_none_or(|s| {
                    fits(
                        w,
                        &Message::Integrity {
                            chunks: s,
                            hash: hash.as_bytes(),
                        },
                    )
                })
            });
        pushed = pushed
            && fits(
                w,
                &Message::Data {
                    chunks: data_spec,
                    timestamp: self.wall_clock(now).as_micros(),
                    payload: &data,
                },
            );
        self.hash_scratch = hashes;
        self.scratch = data;
        if !pushed {
            // The control messages already in the datagram leave no room for this chunk
            // (`Engine::new` makes sure a chunk alone always fits): it goes next time.
            w.truncate(before);
            self.put_back(ch, chunk, retransmission, now);
            return false;
        }
        self.upload.try_take(now, len);
        // When a chunk of this size may go next: pacing alone would wake the engine
        // earlier, to find the limit still empty.
        self.upload_ready_at = self
            .upload
            .wait_for(now, len)
            .filter(|d| !d.is_zero())
            .map(|d| now + d);
        ch.in_flight.record(chunk, now, retransmission);
        ch.sending.data_sent(now, ch.in_flight.len() as u32, slack);
        ch.bytes_up += len;
        self.stats.bytes_uploaded += len;
        self.count_copy_sent(chunk);
        if retransmission {
            self.stats.retransmissions += 1;
        }
        true
    }

    /// Puts a chunk taken from the queues back in front, to go out in a later datagram.
    fn put_back(&mut self, ch: &mut Channel<A>, chunk: u64, retransmission: bool, now: Time) {
        ch.serve_queue.put_back(chunk, retransmission, now);
    }

    /// The next chunk to send: retransmissions first, then requests in arrival order,
    /// skipping entries no longer queued (cancelled, acknowledged) and what the peer got
    /// meanwhile or we cannot serve.
    fn next_chunk(&mut self, now: Time, ch: &mut Channel<A>) -> Option<(u64, bool)> {
        while let Some(c) = ch.serve_queue.next_retransmission() {
            if self.peer_lacks(ch, c) {
                return Some((c, true));
            }
        }
        loop {
            self.refill_serve(now, ch);
            if let Some(i) = self.least_sent_queued(ch)
                && let Some(c) = ch.serve_queue.take_request_at(i)
            {
                return Some((c, false));
            }
            while let Some(c) = ch.serve_queue.next_request() {
                if self.peer_lacks(ch, c) {
                    return Some((c, false));
                }
            }
            // Every entry was stale; `refill_serve` either queues a chunk of the deferred
            // requests now or finds none and forgets them.
            if ch.serve_queue.none_deferred() {
                return None;
            }
        }
    }

    /// Moves requested chunks that found the queue full into it once it is half empty;
    /// when none is left that we could send, the deferred requests are forgotten.
    fn refill_serve(&self, now: Time, ch: &mut Channel<A>) {
        if ch.serve_queue.none_deferred() || ch.serve_queue.len() > self.config.max_serve_queue / 2
        {
            return;
        }
        let deferred = ch.serve_queue.take_deferred();
        let exhausted = Bin::covering(self.addressable().end)
            .is_none_or(|all| self.queue_to_serve(now, ch, all, Some(&deferred)));
        if !exhausted {
            ch.serve_queue.keep_deferred(deferred);
        }
    }

    pub(super) fn peer_lacks(&self, ch: &Channel<A>, chunk: u64) -> bool {
        self.have.has_chunk(chunk) && !ch.holdings.map().has_chunk(chunk)
    }

    /// Hashes to send before `chunk` (data-atomic datagrams, digest §2.2), as libswift
    /// chooses them: the peaks while the peer holds nothing (even a single peak, the root:
    /// libswift's receiver waits for it), then the uncles up to the first node whose
    /// sibling subtree the peer holds a chunk of, so it holds that node's hash.
    ///
    /// With `lean` (a first transmission on a path without recent loss), chunks sent and
    /// not yet acknowledged count as held within the chunk's block of 2^`LEAN_LAYERS`
    /// chunks, as libswift counts them everywhere: their datagrams carry those hashes and
    /// arrive first. A lost datagram then leaves the chunks leaning on it unverifiable
    /// until retransmitted; the block bounds that to a few chunks (libswift's unbounded
    /// leaning costs a whole window of them after a slow-start overshoot on a long path;
    /// docs/EXPERIMENTS.md has the figures). Retransmissions carry every hash past what
    /// was acknowledged. The list replaces what `out` held.
    ///
    /// A live chunk's tree ends at its munro: the uncles go up to it, and the signed munro
    /// is returned, to go first, when the peer holds nothing under it.
    fn integrity_for(
        &self,
        ch: &Channel<A>,
        chunk: u64,
        lean: bool,
        out: &mut Vec<(Bin, Hash)>,
    ) -> Option<SignedMunro> {
        out.clear();
        // The walk stops below the lowest ancestor of `chunk` that holds a chunk the peer
        // knows: that ancestor's other child is known, and so is everything above. Found
        // in one walk down the peer's binmap rather than a look-up per node and sibling
        // on every DATA.
        let root_layer = self.root_bin.layer();
        let chunk_bin = Bin::chunk(chunk).unwrap_or(self.root_bin);
        let mut known = ch
            .holdings
            .map()
            .lowest_set_ancestor(chunk_bin)
            .map_or(root_layer + 1, |layer| layer.clamp(1, root_layer + 1));
        if lean
            && let Some(layer) = ch.in_flight.chunks().lowest_set_ancestor(chunk_bin)
            && layer.max(1) <= LEAN_LAYERS.min(root_layer)
        {
            known = known.min(layer.max(1));
        }
        let Some(tree) = self.tree() else {
            let proof = self.live_proof(chunk, known)?;
            out.extend(proof.uncles);
            return proof.munro;
        };
        if known > root_layer {
            tree.peaks_into(out);
        }
        let peak_count = out.len();
        tree.uncles_into(chunk, |b| b.layer() + 1 >= known, out);
        // A peak is also an uncle when the peer holds nothing: send it once.
        if peak_count > 0 {
            let mut i = peak_count;
            while i < out.len() {
                if out[..peak_count].iter().any(|(b, _)| *b == out[i].0) {
                    out.remove(i);
                } else {
                    i += 1;
                }
            }
        }
        None
    }
}
