//! Incoming datagrams: handshakes, then each message in order.

use super::channel::Channel;
use super::event::{CloseReason, Event};
use super::half_open::HalfOpen;
use super::handshake::check_peer_options;
use super::misbehaviour::Misbehaviour;
use super::{Engine, PeerAddr, is_private};
use crate::Bin;
use crate::binmap::Binmap;
use crate::codec::{ChunkSpec, CodecConfig, Handshake, Message, decode_datagram};
use crate::live::LiveError;
use crate::merkle::{Hash, VerifyError, WrongLength};
use crate::store::ChunkStore;
use crate::time::Time;
use core::time::Duration;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};

/// Hashes kept per channel while waiting for the DATA they protect.
const MAX_PENDING_HASHES: usize = 256;
/// Peers offered per PEX request.
const PEX_ANSWERS: usize = 4;
/// PEX only offers peers heard from this recently (RFC 7574 §3.10).
const PEX_FRESHNESS: Duration = Duration::from_secs(60);

/// What the caller must do with a channel after processing.
enum Verdict {
    Keep,
    Close(CloseReason),
    Ban(Misbehaviour),
}

/// Chunks with a hash missing for which a peer's peaks are searched for another shape of
/// the tree (a wrong content length), per peer: enough for the first datagrams of an
/// honest one, whose genuine chunks then install that shape for the rest.
const MISSING_HASH_SEARCHES: u8 = 8;

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// Processes one datagram from `from`, received at `now`. Malformed or unexpected input
    /// is dropped (and counted); a peer whose data fails verification is dropped and banned.
    pub fn handle_datagram(&mut self, now: Time, from: A, bytes: &[u8]) {
        self.stats.datagrams_received += 1;
        self.timers_ran_at = None;
        if self.banned.contains(&from) {
            self.stats.datagrams_dropped += 1;
            return;
        }
        let base = self.base_codec();
        let Ok(datagram) = decode_datagram(bytes, &base) else {
            self.stats.datagrams_dropped += 1;
            return;
        };
        if datagram.channel == 0 {
            self.handle_opening(now, from, bytes);
            return;
        }
        let id = datagram.channel;
        let Some(mut ch) = self
            .channels
            .remove(&id)
            .or_else(|| self.promote(now, id, &from))
        else {
            self.stats.datagrams_dropped += 1;
            return;
        };
        if ch.addr != from {
            self.channels.insert(id, ch);
            self.stats.datagrams_dropped += 1;
            return;
        }
        let verdict = self.handle_on_channel(now, &mut ch, bytes);
        self.finish(id, ch, verdict);
        if std::mem::take(&mut self.pick_again) {
            self.schedule_requests(now, None);
        } else {
            self.schedule_requests(now, Some(id));
        }
    }

    pub(super) fn base_codec(&self) -> CodecConfig {
        CodecConfig {
            chunk_addressing: self.config.chunk_addressing,
            hash_size: self.content.hash.size(),
            chunk_size: self.content.chunk_size,
            signature_size: self
                .live_signature_size()
                .unwrap_or(CodecConfig::default().signature_size),
            ..CodecConfig::default()
        }
    }

    /// Puts a processed channel back, or ends it.
    fn finish(&mut self, id: u32, ch: Box<Channel<A>>, verdict: Verdict) {
        self.channels.insert(id, ch);
        match verdict {
            Verdict::Keep => {}
            Verdict::Close(reason) => self.remove_channel(id, reason),
            Verdict::Ban(why) => self.ban(id, why),
        }
    }

    /// A datagram to channel 0: a peer opening a channel to us. It is answered from the
    /// half-open table; the channel is made when the initiator's next datagram proves the
    /// address (see `half_open.rs`).
    fn handle_opening(&mut self, now: Time, from: A, bytes: &[u8]) {
        let base = self.base_codec();
        let Ok(datagram) = decode_datagram(bytes, &base) else {
            return;
        };
        let mut messages = datagram.messages();
        let Some(Ok(Message::Handshake(hs))) = messages.next() else {
            self.stats.datagrams_dropped += 1;
            return;
        };
        if hs.is_close() || check_peer_options(&self.swarm_params(), &hs.options, true).is_err() {
            self.stats.datagrams_dropped += 1;
            return;
        }
        if let Some(&existing) = self.by_addr.get(&from) {
            let Some(ch) = self.channels.get_mut(&existing) else {
                return;
            };
            if ch.handshake.awaits_answer() && ch.local_id == hs.source_channel {
                // Our own opening handshake came back: that address is ours.
                self.own_addrs.insert(from);
                self.remove_channel(existing, CloseReason::OwnAddress);
                return;
            }
            if ch.handshake.remote_id() == hs.source_channel {
                // Our answer was lost, and the HAVEs that rode with it: send both again.
                ch.handshake.send_again();
                ch.announcing.forget_haves_sent();
                return;
            }
            if ch.handshake.awaits_answer() && !ch.handshake.is_established() {
                // Both sides opened at once: the lower channel ID keeps the initiator role,
                // and the other side yields the same way.
                if ch.local_id < hs.source_channel {
                    return;
                }
                self.remove_channel(existing, CloseReason::ClosedByPeer);
            }
            // An established peer opening anew has restarted, or someone spoofs its
            // address: the channel is replaced only when the answer is taken up (promote),
            // which proves the address.
        }
        if let Some(id) = self.half_open.id_of(&from) {
            if let Some(e) = self
                .half_open
                .get_mut(id)
                .filter(|e| e.remote_id == hs.source_channel)
            {
                if e.refused {
                    self.refuse(from, hs.source_channel);
                } else {
                    self.half_open.answer_again(id, now);
                }
                return;
            }
            // The peer restarted and opens anew.
            self.half_open.remove(id);
        }
        if !self.by_addr.contains_key(&from) && self.channels.len() >= self.config.max_peers {
            self.refuse(from, hs.source_channel);
            return;
        }
        let mut codec = base;
        codec.apply_handshake(&hs.options);
        let id = self.fresh_channel_id();
        let mut entry = HalfOpen::new(from, hs.source_channel, codec, now);
        entry.peer_window = hs.options.live_discard_window;
        self.half_open.insert(id, entry);
    }

    /// The initiator's next datagram reached the channel ID our answer gave it: the
    /// half-open handshake becomes a channel, if there is room for one.
    fn promote(&mut self, now: Time, id: u32, from: &A) -> Option<Box<Channel<A>>> {
        let pending = self.half_open.get_mut(id)?;
        if pending.addr != *from {
            return None;
        }
        let full = self.channels.len() >= self.config.max_peers && !self.by_addr.contains_key(from);
        if pending.refused || full {
            // Filled up since we answered: say so, or it would wait on us for chunks. The
            // entry stays (until it expires) so that every later datagram on this channel
            // is refused too, should the close be lost.
            pending.refused = true;
            let (addr, remote_id) = (pending.addr.clone(), pending.remote_id);
            self.refuse(addr, remote_id);
            return None;
        }
        let entry = self.half_open.remove(id)?;
        if let Some(&old) = self.by_addr.get(from) {
            // The peer restarted: its old channel is gone on its side.
            self.remove_channel(old, CloseReason::ClosedByPeer);
        }
        self.new_channel(entry.addr, id, now);
        let mut ch = self.channels.remove(&id)?;
        ch.handshake
            .promoted(entry.remote_id, entry.answered_at, entry.answer_resent);
        ch.codec = entry.codec;
        ch.announcing.announced_with_answer(entry.announced);
        ch.live.set_window(entry.peer_window);
        ch.liveness.heard_from(now);
        Some(ch)
    }

    fn handle_on_channel(&mut self, now: Time, ch: &mut Channel<A>, bytes: &[u8]) -> Verdict {
        let Ok(datagram) = decode_datagram(bytes, &ch.codec) else {
            return Verdict::Keep;
        };
        ch.liveness.heard_from(now);
        // Only an answer (or its repeat) starts with a handshake; anything else, a bare
        // keep-alive included, is the peer taking us in.
        if ch.handshake.answered_only()
            && !matches!(datagram.messages().next(), Some(Ok(Message::Handshake(_))))
        {
            ch.handshake.taken_in();
            self.redials.forget(&ch.addr);
        }
        let mut hashes: Vec<(Bin, Hash)> = std::mem::take(&mut ch.pending_hashes);
        let mut saw_data = false;
        let mut first = true;
        for msg in datagram.messages() {
            let msg = match msg {
                Ok(m) => m,
                // RFC 7574 §7: no error messages; a peer that sends garbage is abandoned.
                Err(e) => {
                    return Verdict::Close(CloseReason::Misbehaving(Misbehaviour::Malformed(e)));
                }
            };
            if let Message::Handshake(hs) = msg {
                if let Some(v) = self.handle_handshake(now, ch, &hs, first) {
                    return v;
                }
                first = false;
                continue;
            }
            first = false;
            if !ch.handshake.is_established() {
                // The initiator's third datagram completes the handshake for a responder.
                if ch.handshake.awaits_answer() {
                    return Verdict::Keep;
                }
                self.establish(now, ch);
            }
            saw_data |= matches!(msg, Message::Data { .. });
            let v = self.handle_message(now, ch, msg, &mut hashes);
            if !matches!(v, Verdict::Keep) {
                return v;
            }
        }
        if !ch.handshake.is_established() && !ch.handshake.awaits_answer() {
            // A keep-alive or empty datagram also completes the responder's handshake.
            self.establish(now, ch);
        }
        ch.holdings.note_heard();
        if !saw_data {
            hashes.truncate(MAX_PENDING_HASHES);
            ch.pending_hashes = hashes;
        }
        Verdict::Keep
    }

    /// A HANDSHAKE on an open channel: the responder's answer, a close, or a repeat.
    fn handle_handshake(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        hs: &Handshake<'_>,
        first: bool,
    ) -> Option<Verdict> {
        if hs.is_close() {
            if !ch.handshake.awaits_answer() && !ch.handshake.answered_only() {
                return Some(Verdict::Close(CloseReason::ClosedByPeer));
            }
            // A close instead of an answer, or right after it: the peer is full. Ask again
            // later while we still want chunks.
            if !self.is_complete() {
                self.redials.refused(ch.addr.clone(), now, &mut self.rng);
            }
            return Some(Verdict::Close(CloseReason::Refused));
        }
        if !first || !ch.handshake.awaits_answer() {
            return None; // a repeat; harmless
        }
        if let Err(why) = check_peer_options(&self.swarm_params(), &hs.options, false) {
            return Some(Verdict::Close(CloseReason::Misbehaving(
                Misbehaviour::Handshake(why),
            )));
        }
        ch.handshake.answered(hs.source_channel);
        ch.codec.apply_handshake(&hs.options);
        ch.live.set_window(hs.options.live_discard_window);
        self.establish(now, ch);
        None
    }

    pub(super) fn establish(&mut self, now: Time, ch: &mut Channel<A>) {
        if !ch.handshake.establish() {
            return;
        }
        // A peer that took us in is asked no more (one that answered only may still refuse:
        // then its back-off goes on; see `handle_on_channel`).
        if !ch.handshake.answered_only() {
            self.redials.forget(&ch.addr);
        }
        // Karn's rule for handshakes: after a retry the answer may be to either copy.
        if let Some(sent) = ch.handshake.round_trip_start() {
            ch.sending.rtt_sample(now.saturating_since(sent));
        }
        if self.tracks_availability() {
            if ch.holdings.is_complete() {
                self.avail.add_seeder();
            } else {
                self.avail.add_peer(ch.holdings.map());
            }
        }
        if self.config.pex {
            ch.pex.ask_at(now);
        }
        ch.liveness.keepalive_from_rtt(ch.sending.srtt());
        self.push_event(Event::PeerConnected {
            peer: ch.addr.clone(),
        });
    }

    fn handle_message(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        msg: Message<'_>,
        hashes: &mut Vec<(Bin, Hash)>,
    ) -> Verdict {
        match msg {
            Message::Have(spec) => self.on_have(now, ch, &spec),
            Message::Ack { chunks, delay_us } => self.on_ack(now, ch, &chunks, delay_us),
            Message::Request(spec) => self.on_request(now, ch, &spec),
            Message::Cancel(spec) => {
                // What is still queued is dropped; the stale queue entries are skipped
                // when they come up.
                if let Some((first, last)) = self.clip(&spec) {
                    for b in Bin::from_chunk_range(first, last) {
                        ch.serve_queue.cancel(b);
                    }
                }
            }
            Message::Integrity { chunks, hash } => {
                let mut bins = chunks.bins(self.content.chunk_size);
                if let (Some(bin), None, Some(hash)) =
                    (bins.next(), bins.next(), Hash::from_slice(hash))
                    && hashes.len() < MAX_PENDING_HASHES
                {
                    hashes.push((bin, hash));
                }
            }
            Message::Data {
                chunks,
                timestamp,
                payload,
            } => return self.on_data(now, ch, &chunks, timestamp, payload, hashes),
            Message::PexReq => self.on_pex_request(now, ch),
            Message::PexResV4(a) => self.on_pex_peer(now, ch, SocketAddr::V4(a)),
            Message::PexResV6(a) => self.on_pex_peer(now, ch, SocketAddr::V6(a)),
            Message::Choke => {
                ch.choke.peer_chokes(true);
                for c in ch.requests.drop_all() {
                    self.release_request(c);
                }
            }
            Message::Unchoke => ch.choke.peer_chokes(false),
            Message::SignedIntegrity {
                chunks,
                timestamp,
                signature,
            } => {
                // One munro per message; anything else is no munro.
                let mut bins = chunks.bins(self.content.chunk_size);
                if let (Some(bin), None) = (bins.next(), bins.next())
                    && let Err(e) =
                        self.on_signed_integrity(now, ch, bin, timestamp, signature, hashes)
                {
                    return Verdict::Ban(Misbehaviour::Live(e));
                }
            }
            // Certificate PEX belongs to a feature we do not negotiate; a peer sending it
            // anyway is ignored, not dropped.
            Message::PexResCert(_) | Message::Handshake(_) => {}
        }
        Verdict::Keep
    }

    /// The chunks of `spec` that exist for us, or `None`: the content's, or a live
    /// stream's from the discard window to the edge (the sliding filter over HAVEs).
    fn clip(&self, spec: &ChunkSpec) -> Option<(u64, u64)> {
        let (first, last) = spec.chunk_range(self.content.chunk_size)?;
        let exists = self.addressable();
        if first >= exists.end || last < exists.start {
            return None;
        }
        Some((first.max(exists.start), last.min(exists.end - 1)))
    }

    /// The peer says it now holds chunks `first..=last`.
    pub(super) fn peer_gained(&mut self, now: Time, ch: &mut Channel<A>, first: u64, last: u64) {
        // Its own word now, not our presumption.
        ch.holdings.confirmed(first, last);
        if self.peer_holds(ch, first, last) {
            ch.usefulness.exchanged(now);
            if !ch.origin {
                self.leave_to_peers(first, last);
            }
        }
    }

    /// A peer now holds chunks `first..=last`: those still waiting at an origin, and not
    /// due yet, are cancelled there and wanted again, so that the peer is asked for them.
    /// Pages that start together ask an origin for the same chunks nobody holds yet; an
    /// origin should not send what the swarm already has. On demand only: a live stream's
    /// source serves chunks as they appear, when no peer can have them yet.
    fn leave_to_peers(&mut self, first: u64, last: u64) {
        if self.is_live() {
            return;
        }
        let mut released = Vec::new();
        let picker = &self.picker;
        for o in self.channels.values_mut().filter(|o| o.origin) {
            let moved: Vec<u64> = o
                .requests
                .chunks_in(first..=last)
                .filter(|&c| Bin::chunk(c).is_some_and(|b| !picker.is_due(b)))
                .collect();
            for c in moved {
                o.requests.withdraw(c);
                released.push(c);
            }
        }
        for c in released {
            self.release_request(c);
        }
    }

    /// Records that the peer holds chunks `first..=last`; true if it holds one we lack.
    /// Availability is kept only while we still pick chunks; a peer holding everything
    /// counts as a seeder there (O(1) to add and remove).
    pub(super) fn peer_holds(&mut self, ch: &mut Channel<A>, first: u64, last: u64) -> bool {
        if ch.holdings.is_complete() {
            return false;
        }
        let mut offered = false;
        let track = ch.handshake.is_established() && self.tracks_availability();
        for b in Bin::from_chunk_range(first, last) {
            if ch.holdings.holds(b) {
                continue;
            }
            if track {
                self.avail.apply_have(ch.holdings.map(), b);
            }
            ch.holdings.gained(b);
            offered |= !self.have.is_filled(b);
        }
        if self.is_live() {
            Self::apply_peer_window(ch);
            return offered;
        }
        // Asked on every ACK: the content's few covering bins, looked up left to right,
        // answer at the first that is not full, where a search for the first missing chunk
        // walked down to it.
        if Bin::from_chunk_range(0, self.chunk_count.saturating_sub(1))
            .all(|b| ch.holdings.holds(b))
        {
            ch.holdings.now_complete();
            if track {
                self.avail.remove_peer(ch.holdings.map());
                self.avail.add_seeder();
            }
        }
        offered
    }

    fn on_have(&mut self, now: Time, ch: &mut Channel<A>, spec: &ChunkSpec) {
        if ch.live.of_other_run() {
            return;
        }
        if let Some((first, last)) = self.clip(spec) {
            self.peer_gained(now, ch, first, last);
        }
    }

    fn on_ack(&mut self, now: Time, ch: &mut Channel<A>, spec: &ChunkSpec, delay_us: i64) {
        let Some((first, last)) = self.clip(spec) else {
            return;
        };
        let in_flight_before = ch.in_flight.len() as u32;
        let acked = ch
            .in_flight
            .acknowledge(first, last, now, ch.sending.min_rtt());
        // Queued retransmissions of these chunks are moot now.
        for b in Bin::from_chunk_range(first, last) {
            ch.serve_queue.acknowledged(b);
        }
        self.peer_gained(now, ch, first, last);
        if let Some(s) = acked.rtt_sample {
            ch.sending.rtt_sample(s);
        }
        if acked.count > 0 {
            let srtt = ch.sending.srtt();
            ch.sending.delay_sample(now, delay_us);
            // Only LEDBAT's additive increase is shared: spare the walk over the channels
            // on every other ACK.
            let flows = if ch.sending.shares_increase() {
                self.coupled_flows()
            } else {
                1
            };
            ch.sending.acked(now, acked.count, in_flight_before, flows);
            ch.liveness.keepalive_from_rtt(srtt);
        }
    }

    /// The LEDBAT flows that share the additive increase at an ACK: the channels in
    /// congestion avoidance with data in flight, and the one the ACK is for (out of the
    /// map meanwhile).
    fn coupled_flows(&self) -> u32 {
        let others = self
            .channels
            .values()
            .filter(|c| c.sending.ledbat_avoiding() && !c.in_flight.is_empty())
            .count();
        u32::try_from(others).unwrap_or(u32::MAX).saturating_add(1)
    }

    /// Queues what `spec` asks for that we hold, the peer lacks and is not already on its
    /// way. Each binmap search either queues a run of chunks or ends the range, so a
    /// request costs O(log n) per run queued however wide it is (a REQUEST of the whole
    /// content from a peer claiming to hold it all costs one search).
    fn on_request(&mut self, now: Time, ch: &mut Channel<A>, spec: &ChunkSpec) {
        if !self.uploading && !ch.choke.is_choking() {
            ch.stop_serving();
            return;
        }
        // Choked, it missed our CHOKE (not acknowledged, maybe lost): it is said again.
        if !ch.choke.peer_asked() {
            return;
        }
        ch.usefulness.exchanged(now);
        let Some((first, last)) = self.clip(spec) else {
            return;
        };
        for range in Bin::from_chunk_range(first, last) {
            // A peer asks for what it lacks: what it announced and asks for again, it let go
            // of (a peer within a memory bound).
            self.peer_let_go(ch, range);
            if !self.queue_to_serve(now, ch, range, None) {
                // The queue is full: the rest waits in `deferred`, what is already queued
                // or sent in it is skipped when it comes up.
                ch.serve_queue.defer(range);
            }
        }
    }

    /// Appends to `serve` the chunks of `range` that we hold, the peer lacks and are not
    /// queued or on their way (and, with `among`, are set in that map), until the queue
    /// holds `max_serve_queue`. False when it filled up before `range` was done.
    pub(super) fn queue_to_serve(
        &self,
        now: Time,
        ch: &mut Channel<A>,
        range: Bin,
        among: Option<&Binmap>,
    ) -> bool {
        let max = self.config.max_serve_queue;
        if range.is_base() && among.is_none() {
            // Most requests name one chunk: four look-ups, where the search below would
            // walk the four maps twice (once to find it, once to find nothing more).
            if ch.serve_queue.len() >= max {
                return false;
            }
            if self.have.is_filled(range)
                && ch.holdings.holds_none_of(range)
                && ch.serve_queue.queued().is_empty(range)
                && !ch.in_flight.any_of(range)
            {
                let chunk = range.base_offset();
                ch.serve_queue.push(chunk, chunk, now);
            }
            return ch.serve_queue.len() < max;
        }
        loop {
            if ch.serve_queue.len() >= max {
                return false;
            }
            let wanted = [
                (&self.have, true),
                (ch.holdings.map(), false),
                (ch.serve_queue.queued(), false),
                (ch.in_flight.chunks(), false),
            ];
            let run = match among {
                None => Binmap::find_all(wanted, range, 0),
                Some(m) => {
                    let [a, b, c, d] = wanted;
                    Binmap::find_all([a, b, c, d, (m, true)], range, 0)
                }
            };
            let Some(run) = run else {
                return true;
            };
            let room = (max - ch.serve_queue.len()) as u64;
            let start = run.base_offset();
            let end = run.last_chunk().min(start + room - 1);
            ch.serve_queue.push(start, end, now);
        }
    }

    fn on_data(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        spec: &ChunkSpec,
        timestamp: u64,
        payload: &[u8],
        hashes: &mut Vec<(Bin, Hash)>,
    ) -> Verdict {
        let live = self.is_live();
        // A live stream's DATA is not clipped to the window: what lies outside it is
        // dropped chunk by chunk below (`on_chunk`).
        let range = if live {
            spec.chunk_range(self.content.chunk_size)
                .filter(|&(_, last)| last < self.chunk_count)
        } else {
            self.clip(spec)
        };
        let Some((first, last)) = range else {
            return Verdict::Ban(Misbehaviour::DataOutsideContent);
        };
        ch.delivery.data_arrived(now);
        // Both clocks count from the Unix epoch (digest §1.6); the offset between two hosts
        // cancels out in LEDBAT, which compares samples with their minimum.
        let delay = self
            .wall_clock(now)
            .signed_micros_since(Time::from_micros(timestamp));
        let cs = self.content.chunk_size as usize;
        let mut offset = 0usize;
        for chunk in first..=last {
            // The last chunk of a DATA takes the rest, up to a chunk: a live stream's last
            // chunk may be short, and so may a static content's if the length we were given
            // is wrong (verification checks the length and tells which).
            let len = if chunk == last {
                payload.len().saturating_sub(offset).min(cs)
            } else {
                self.chunk_len(chunk)
            };
            let Some(data) = payload.get(offset..offset + len) else {
                return Verdict::Ban(Misbehaviour::DataTruncated { chunk });
            };
            offset += len;
            match self.on_chunk(now, ch, chunk, data, hashes) {
                Ok(true) => {
                    let deadline = now + self.config.max_ack_delay;
                    ch.announcing.ack(chunk, delay, deadline);
                }
                Ok(false) => {}
                Err(verdict) => return verdict,
            }
        }
        if offset != payload.len() {
            return Verdict::Ban(Misbehaviour::DataTooLong);
        }
        hashes.clear();
        Verdict::Keep
    }

    /// Verifies one chunk; only verified data is stored, acknowledged or announced.
    /// `Ok(true)`: acknowledge it (we hold it now); `Ok(false)`: drop it unacknowledged, so
    /// its sender sends it again; `Err`: end the channel.
    fn on_chunk(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        chunk: u64,
        data: &[u8],
        hashes: &[(Bin, Hash)],
    ) -> Result<bool, Verdict> {
        let Some(leaf) = Bin::chunk(chunk) else {
            return Err(Verdict::Ban(Misbehaviour::ChunkOutOfRange));
        };
        ch.bytes_down += data.len() as u64;
        let requested_at = ch.requests.asked_at(chunk);
        if self.have.is_filled(leaf) {
            self.forget_request(ch, chunk);
            self.stats.bytes_duplicate += data.len() as u64;
            return Ok(true);
        }
        if self.is_live() {
            return self.on_live_chunk(now, ch, chunk, data, hashes);
        }
        if self.length_check.disproved().is_some() {
            // Nothing verifies against a wrong length: the adapter is told, and stops.
            self.unrequest(ch, chunk);
            return Ok(false);
        }
        if let Err(reason) = self.check_peaks(hashes) {
            // Not genuine means banned: searched once per peer at most.
            if self.genuine_misfit(chunk, data, hashes, true) {
                return Ok(self.take_misfit(now, ch, chunk));
            }
            self.unrequest(ch, chunk);
            return Err(self.reject(ch, chunk, reason));
        }
        // Hashes for this chunk's path; anything else in the datagram is not for us.
        let mut uncles = std::mem::take(&mut self.hash_scratch);
        uncles.clear();
        uncles.extend(
            hashes
                .iter()
                .filter(|(b, _)| !b.contains(leaf) && b.parent().contains(leaf)),
        );
        let verified = match self.tree_mut() {
            Some(tree) => tree.verify_chunk(chunk, data, &uncles),
            None => Err(VerifyError::SizeUnknown),
        };
        self.hash_scratch = uncles;
        if let Err(reason) = verified {
            // A missing hash bans nobody, so a peer could send such chunks without end: the
            // search for a shape among the peaks it sends (dozens of hashes each) is made
            // a few times per peer only, the known shapes always.
            let missing = matches!(reason, VerifyError::MissingHash(_));
            let search = ch.delivery.may_search_shape(missing, MISSING_HASH_SEARCHES);
            if self.genuine_misfit(chunk, data, hashes, search) {
                return Ok(self.take_misfit(now, ch, chunk));
            }
            if missing {
                // A hash we lack is not proof of bad faith: the datagram that carried it
                // may be lost, and its sender retransmits with every hash. The chunk is
                // dropped unacknowledged and its request stays: if no usable copy comes,
                // it expires like an unanswered one, and a peer that never sends what we
                // can verify is dropped by the withholding rules (timers.rs).
                self.stats.chunks_unverifiable += 1;
                return Ok(false);
            }
            self.unrequest(ch, chunk);
            return Err(self.reject(ch, chunk, reason));
        }
        self.keep_delivered(now, ch, chunk, data, requested_at)
    }

    /// A chunk that failed verification may be genuine all the same: the content's real
    /// tree has another shape than the length we were given says, and the chunk and the
    /// peaks sent with it fit that one. Its sender is then not at fault, and true is
    /// returned. Where the chunk also disproves the length given, that is reported once
    /// ([`Event::WrongContentLength`]) and nothing more is asked for. Without
    /// `search_peaks`, only the shapes already known are tried (`LengthCheck::check`).
    fn genuine_misfit(
        &mut self,
        chunk: u64,
        data: &[u8],
        hashes: &[(Bin, Hash)],
        search_peaks: bool,
    ) -> bool {
        let before = self.length_check.disproved();
        let super::live_stream::Integrity::Static(tree) = &self.integrity else {
            return false;
        };
        if self
            .length_check
            .check(tree, chunk, data, hashes, search_peaks)
            .is_none()
        {
            return false;
        }
        if let (None, Some(shown)) = (before, self.length_check.disproved()) {
            let stated = self.content.content_len;
            self.push_event(Event::WrongContentLength(WrongLength { stated, shown }));
        }
        true
    }

    /// A genuine chunk that the length we were given does not fit, from `ch`: not kept,
    /// but acknowledged (true), so that its sender goes on to the next rather than send it
    /// again; and `ch` is asked for the end of what it holds.
    fn take_misfit(&mut self, now: Time, ch: &mut Channel<A>, chunk: u64) -> bool {
        self.unrequest(ch, chunk);
        self.stats.chunks_unverifiable += 1;
        self.ask_for_its_end(now, ch);
        true
    }

    /// `ch` sends genuine chunks that the length we were given does not fit: it is asked
    /// for the last chunk it holds within that length, which shows where the content
    /// really ends, or that it goes on past it.
    fn ask_for_its_end(&mut self, now: Time, ch: &mut Channel<A>) {
        if self.length_check.disproved().is_some() {
            return;
        }
        let n = self.chunk_count;
        let Some(last) = ch
            .holdings
            .map()
            .filled_ranges()
            .take_while(|r| r.start < n)
            .last()
            .map(|r| r.end.min(n) - 1)
        else {
            return;
        };
        let Some(bin) = Bin::chunk(last) else {
            return;
        };
        if ch.requests.contains(last) || self.have.is_filled(bin) {
            return;
        }
        self.exclude.set(bin);
        ch.ask(now, bin);
    }

    /// A chunk from `ch` passed verification: it is stored and kept, and the peer counts
    /// as delivering.
    fn keep_delivered(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        chunk: u64,
        data: &[u8],
        requested_at: Option<Time>,
    ) -> Result<bool, Verdict> {
        if !self.store_chunk(chunk, data) {
            // Storage trouble is ours, not the peer's: the chunk stays wanted.
            self.unrequest(ch, chunk);
            return Ok(false);
        }
        self.forget_request(ch, chunk);
        ch.delivery.delivered(now, requested_at);
        ch.usefulness.exchanged(now);
        let from = ch.addr.clone();
        self.chunk_kept(chunk, data.len(), Event::ChunkVerified { chunk, from });
        Ok(true)
    }

    /// Writes a verified chunk to the store. On failure nothing more is asked for until the
    /// adapter says so ([`Engine::resume_storing`]), and false is returned.
    pub(super) fn store_chunk(&mut self, chunk: u64, data: &[u8]) -> bool {
        match self.store.write_chunk(chunk, data) {
            Ok(()) => true,
            Err(error) => {
                self.storing_paused = true;
                self.push_event(Event::StoreFailed { chunk, error });
                false
            }
        }
    }

    /// A verified chunk is in the store: it is ours (announced to peers on the next
    /// transmits), counted, and reported with `event`.
    pub(super) fn chunk_kept(&mut self, chunk: u64, len: usize, event: Event<A>) {
        let Some(leaf) = Bin::chunk(chunk) else {
            return;
        };
        self.have.set(leaf);
        self.have_count += 1;
        self.have_gained += 1;
        self.exclude.set(leaf);
        self.saved_chunk_held(chunk);
        // A chunk read back from a saved copy was not downloaded (counted apart).
        if !matches!(event, Event::ChunkRestored { .. }) {
            self.stats.chunks_verified += 1;
            self.stats.bytes_downloaded += len as u64;
        }
        self.push_event(event);
        // Progress is reported when the adapter has read everything else (`poll_event`),
        // once per batch rather than once per chunk; the last one before Complete.
        if self.have_count >= self.chunk_count && !self.complete_reported {
            self.complete_reported = true;
            // Nothing left to pick: availability is no longer needed.
            self.avail = crate::avail::Availability::new();
            self.push_progress();
            self.push_event(Event::Complete);
        }
        self.keep_within_bound();
    }

    /// A live chunk: verified under its signed munro (which came in this datagram or
    /// before). Without one, or without a hash, it is dropped unacknowledged, as a static
    /// chunk missing a hash: its datagram's companion may be lost.
    fn on_live_chunk(
        &mut self,
        now: Time,
        ch: &mut Channel<A>,
        chunk: u64,
        data: &[u8],
        hashes: &[(Bin, Hash)],
    ) -> Result<bool, Verdict> {
        let requested_at = ch.requests.asked_at(chunk);
        let Some(leaf) = Bin::chunk(chunk) else {
            return Err(Verdict::Ban(Misbehaviour::ChunkOutOfRange));
        };
        let verified = if self.signs_every_chunk() {
            self.verify_signed_chunk(now, ch, chunk, data)
        } else {
            // The uncles below its munro; other hashes in the datagram (another munro sent
            // for tune-in, say) are not for this chunk.
            let top = self.live_munro_bin(chunk).unwrap_or(leaf);
            let uncles: Vec<(Bin, Hash)> = hashes
                .iter()
                .filter(|(b, _)| top.contains(*b) && !b.contains(leaf) && b.parent().contains(leaf))
                .copied()
                .collect();
            self.verify_live_chunk(chunk, data, &uncles)
        };
        match verified {
            Ok(()) => self.keep_delivered(now, ch, chunk, data, requested_at),
            Err(
                LiveError::NoMunro(_)
                | LiveError::MissingHash(_)
                | LiveError::BehindWindow(_)
                | LiveError::OtherSession(_)
                | LiveError::NewSession(_)
                | LiveError::TooOldToTuneIn(_)
                | LiveError::Ahead { .. },
            ) => {
                self.stats.chunks_unverifiable += 1;
                Ok(false)
            }
            Err(e) => {
                self.unrequest(ch, chunk);
                let reason = match e {
                    LiveError::Mismatch(bin) | LiveError::BadSignature(bin) => {
                        VerifyError::Mismatch { bin }
                    }
                    LiveError::HashNotOnPath(b) => VerifyError::HashNotOnPath(b),
                    _ => VerifyError::WrongLength {
                        expected: self.content.chunk_size as usize,
                        got: data.len(),
                    },
                };
                self.note_rejected(ch, chunk, reason);
                Err(Verdict::Ban(Misbehaviour::Live(e)))
            }
        }
    }

    /// Peak hashes (sent before the first chunk, digest §2.3) are checked against the root
    /// as a set; a wrong set is as bad as a wrong chunk.
    fn check_peaks(&mut self, hashes: &[(Bin, Hash)]) -> Result<(), VerifyError> {
        let chunk_count = self.chunk_count;
        let Some(tree) = self.tree_mut() else {
            return Ok(());
        };
        // Checked without allocating: past the first chunk every peak is verified.
        let peaks = || Bin::peaks(chunk_count);
        if peaks().nth(1).is_none() || peaks().all(|p| tree.is_verified(p)) {
            return Ok(());
        }
        let given: Vec<(Bin, Hash)> = peaks()
            .filter_map(|p| hashes.iter().find(|(b, _)| *b == p).copied())
            .collect();
        if given.len() == peaks().count() {
            tree.add_peaks(&given)?;
        }
        Ok(())
    }

    fn reject(&mut self, ch: &mut Channel<A>, chunk: u64, reason: VerifyError) -> Verdict {
        self.note_rejected(ch, chunk, reason);
        Verdict::Ban(Misbehaviour::BadChunk { chunk, reason })
    }

    /// A chunk from `ch` failed verification: counted and reported.
    fn note_rejected(&mut self, ch: &Channel<A>, chunk: u64, reason: VerifyError) {
        self.stats.chunks_rejected += 1;
        self.push_event(Event::ChunkRejected {
            chunk,
            from: ch.addr.clone(),
            reason,
        });
    }

    /// `chunk` arrived but could not be used: it is wanted again, from anyone.
    fn unrequest(&mut self, ch: &mut Channel<A>, chunk: u64) {
        self.forget_request(ch, chunk);
        self.release_request(chunk);
    }

    /// `chunk` arrived from `ch`: it is no longer outstanding anywhere. In the endgame
    /// other peers may have it requested too: they are told to cancel.
    fn forget_request(&mut self, ch: &mut Channel<A>, chunk: u64) {
        let here = ch.requests.delivered(chunk);
        if self.endgame {
            for other in self.channels.values_mut() {
                other.requests.cancel(chunk);
            }
        } else if !here {
            for other in self.channels.values_mut() {
                if other.requests.delivered(chunk) {
                    break;
                }
            }
        }
    }

    fn on_pex_request(&mut self, now: Time, ch: &mut Channel<A>) {
        let requester_private = ch.addr.socket_addr().is_none_or(|a| is_private(&a));
        let mut candidates: Vec<SocketAddr> = self
            .channels
            .values()
            .filter(|o| {
                o.handshake.is_established()
                    && now.saturating_since(o.liveness.last_heard()) <= PEX_FRESHNESS
            })
            .filter_map(|o| o.addr.socket_addr())
            .filter(|a| requester_private || !is_private(a))
            .collect();
        while candidates.len() > PEX_ANSWERS {
            let i = self.rng.below(candidates.len() as u64) as usize;
            candidates.swap_remove(i);
        }
        ch.pex.answer(candidates);
    }

    fn on_pex_peer(&mut self, now: Time, ch: &Channel<A>, addr: SocketAddr) {
        if !super::addr::pex_address_usable(&addr, ch.addr.socket_addr().as_ref()) {
            return;
        }
        let Some(peer) = A::from_socket_addr(addr) else {
            return;
        };
        if self.by_addr.contains_key(&peer) || self.banned.contains(&peer) {
            return;
        }
        self.push_event(Event::PeerDiscovered { peer: peer.clone() });
        self.connect(peer, now);
    }
}

/// PEX addresses as the codec wants them.
pub(crate) fn pex_message(addr: SocketAddr) -> Message<'static> {
    match addr {
        SocketAddr::V4(a) => Message::PexResV4(SocketAddrV4::new(*a.ip(), a.port())),
        SocketAddr::V6(a) => Message::PexResV6(SocketAddrV6::new(*a.ip(), a.port(), 0, 0)),
    }
}
