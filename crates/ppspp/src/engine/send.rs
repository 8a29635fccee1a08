//! Outgoing datagrams: handshakes, control messages, and DATA with its hashes.

use super::channel::{Channel, InFlight, MAX_KEEPALIVE};
use super::handshake::our_options;
use super::recv::pex_message;
use super::{Engine, PeerAddr, Transmit};
use crate::Bin;
use crate::binmap::Binmap;
use crate::codec::{ChunkSpec, CodecConfig, Handshake, Message, encode_message};
use crate::merkle::Hash;
use crate::store::ChunkStore;
use crate::time::Time;
use core::time::Duration;

/// Initiator handshake attempts before the peer counts as unreachable (1+2+4+8+16 s).
pub(crate) const HANDSHAKE_TRIES: u32 = 5;
/// Messages of one kind per datagram, so control datagrams stay near one MTU.
const MAX_ACKS: usize = 48;
const MAX_HAVES: usize = 16;
const MAX_REQUESTS: usize = 32;
/// Chunks in flight vouch for hashes only inside blocks of 2^this chunks (`integrity_for`).
const LEAN_LAYERS: u32 = 4;

/// Appends messages to one datagram; a message the codec refuses is skipped (it could only
/// come from a range the negotiated addressing cannot express).
struct Writer {
    out: Vec<u8>,
    codec: CodecConfig,
    messages: usize,
}

impl Writer {
    fn new(channel: u32, codec: CodecConfig) -> Writer {
        Writer {
            out: channel.to_be_bytes().to_vec(),
            codec,
            messages: 0,
        }
    }

    fn push(&mut self, msg: &Message<'_>) {
        if encode_message(msg, &self.codec, &mut self.out).is_ok() {
            self.messages += 1;
            if let Message::Handshake(h) = msg {
                self.codec.apply_handshake(&h.options);
            }
        }
    }

    fn spec(&self, bin: Bin) -> Option<ChunkSpec> {
        ChunkSpec::from_bin(bin, self.codec.chunk_addressing, self.codec.chunk_size).ok()
    }
}

/// Adds HAVEs for what `have` holds beyond `announced`, each the largest complete interval
/// around the news, so every chunk is announced about log n times. True once nothing is
/// left to announce.
fn push_news(announced: &mut Binmap, have: &Binmap, root_bin: Bin, w: &mut Writer) -> bool {
    for _ in 0..MAX_HAVES {
        let Some(news) = Binmap::find_complement(announced, have, root_bin, 0) else {
            return true;
        };
        let bin = match have.cover(news) {
            b if !b.is_none() && root_bin.contains(b) => b,
            _ => news,
        };
        announced.set(bin);
        if let Some(spec) = w.spec(bin) {
            w.push(&Message::Have(spec));
        }
    }
    false
}

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// The next datagram to send, if any. Call until it returns `None` after every
    /// `handle_*` call.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Transmit<A>> {
        if let Some(answer) = self.answer_half_open(now) {
            return Some(answer);
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
            let built = self.build(now, &mut ch);
            let to = ch.addr.clone();
            // A closing channel ends once its close (if any) is out.
            let ended = ch.closing.take_if(|c| !c.notify);
            self.channels.insert(id, ch);
            if let Some(closing) = ended {
                self.remove_channel(id, closing.reason);
            }
            if let Some(payload) = built {
                self.cursor = id;
                self.stats.datagrams_sent += 1;
                return Some(Transmit { to, payload });
            }
        }
        None
    }

    fn build(&mut self, now: Time, ch: &mut Channel<A>) -> Option<Vec<u8>> {
        if let Some(closing) = &ch.closing {
            if !closing.notify {
                return None;
            }
            let mut w = Writer::new(ch.remote_id, ch.codec);
            w.push(&Message::Handshake(Handshake::close()));
            ch.closing.as_mut()?.notify = false;
            return Some(self.sent(now, ch, w));
        }
        if let Some(retry) = &ch.handshake {
            // Initiator: only the opening handshake until the answer arrives.
            if !ch.send_handshake && now < retry.next {
                return None;
            }
            return Some(self.opening(now, ch));
        }
        let mut w = Writer::new(ch.remote_id, ch.codec);
        if ch.send_handshake {
            ch.send_handshake = false;
            ch.handshake_resent |= ch.handshake_sent.is_some();
            ch.handshake_sent = Some(now);
            let options = our_options(&(&self.content).into(), None, ch.codec.chunk_addressing);
            w.push(&Message::Handshake(Handshake {
                source_channel: ch.local_id,
                options,
            }));
        }
        self.push_haves(ch, &mut w);
        if !ch.established {
            // A responder says nothing more before the initiator's third datagram.
            return (w.messages > 0).then(|| self.sent(now, ch, w));
        }
        self.push_control(ch, &mut w);
        if self.push_data(now, ch, &mut w) {
            return Some(self.sent(now, ch, w));
        }
        if w.messages > 0 {
            return Some(self.sent(now, ch, w));
        }
        if now.saturating_since(ch.last_send) >= ch.keepalive {
            // A keep-alive is the bare channel ID; the interval doubles while idle.
            ch.keepalive = (ch.keepalive * 2).min(MAX_KEEPALIVE);
            return Some(self.sent(now, ch, w));
        }
        None
    }

    fn sent(&mut self, now: Time, ch: &mut Channel<A>, w: Writer) -> Vec<u8> {
        ch.last_send = now;
        ch.sent_since_recv = ch.sent_since_recv.saturating_add(1);
        w.out
    }

    /// The initiator's first datagram (datagram 1 of the three-way handshake).
    fn opening(&mut self, now: Time, ch: &mut Channel<A>) -> Vec<u8> {
        ch.send_handshake = false;
        ch.handshake_resent |= ch.handshake_sent.is_some();
        ch.handshake_sent = Some(now);
        if let Some(retry) = ch.handshake.as_mut() {
            retry.next = now + Duration::from_secs(1 << retry.tries.min(HANDSHAKE_TRIES));
            retry.tries += 1;
        }
        let root = self.content.root;
        let options = our_options(
            &(&self.content).into(),
            Some(root.as_bytes()),
            ch.codec.chunk_addressing,
        );
        let mut w = Writer::new(0, ch.codec);
        w.push(&Message::Handshake(Handshake {
            source_channel: ch.local_id,
            options,
        }));
        // Our HAVEs ride along only in the datagrams that follow: the opening one must stay
        // small, and a retry must not claim they were delivered.
        self.sent(now, ch, w)
    }

    /// Answers a handshake from the half-open table: our handshake and HAVEs of what we
    /// hold, as libswift answers.
    fn answer_half_open(&mut self, now: Time) -> Option<Transmit<A>> {
        let (id, entry) = self.half_open.next_due()?;
        let mut w = Writer::new(entry.remote_id, entry.codec);
        let options = our_options(&(&self.content).into(), None, entry.codec.chunk_addressing);
        w.push(&Message::Handshake(Handshake {
            source_channel: id,
            options,
        }));
        if self.have_count > 0 {
            push_news(&mut entry.announced, &self.have, self.root_bin, &mut w);
        }
        entry.answer_resent |= entry.answered_at.is_some();
        entry.answered_at = Some(now);
        self.stats.datagrams_sent += 1;
        Some(Transmit {
            to: entry.addr.clone(),
            payload: w.out,
        })
    }

    /// HAVEs for verified chunks the peer has not been told about.
    fn push_haves(&mut self, ch: &mut Channel<A>, w: &mut Writer) {
        // The search walks both maps: skip it while nothing was verified since the last one
        // found everything announced (it ran on every datagram built).
        if ch.peer_complete || self.have_count == 0 || ch.haves_done_at == Some(self.have_count) {
            return;
        }
        if push_news(&mut ch.have_out, &self.have, self.root_bin, w) {
            ch.haves_done_at = Some(self.have_count);
        }
    }

    fn push_control(&mut self, ch: &mut Channel<A>, w: &mut Writer) {
        let acks: Vec<(u64, i64)> = ch
            .pending_acks
            .drain(..ch.pending_acks.len().min(MAX_ACKS))
            .collect();
        for (chunk, delay_us) in acks {
            if let Some(spec) = Bin::chunk(chunk).and_then(|b| w.spec(b)) {
                w.push(&Message::Ack {
                    chunks: spec,
                    delay_us,
                });
            }
        }
        if let Some(choke) = ch.pending_choke.take() {
            w.push(if choke {
                &Message::Choke
            } else {
                &Message::Unchoke
            });
        }
        for bin in std::mem::take(&mut ch.pending_cancels) {
            if let Some(spec) = w.spec(bin) {
                w.push(&Message::Cancel(spec));
            }
        }
        let requests: Vec<Bin> = ch
            .pending_requests
            .drain(..ch.pending_requests.len().min(MAX_REQUESTS))
            .collect();
        for bin in requests {
            if let Some(spec) = w.spec(bin) {
                w.push(&Message::Request(spec));
            }
        }
        if std::mem::take(&mut ch.pending_pex_req) {
            w.push(&Message::PexReq);
        }
        for addr in std::mem::take(&mut ch.pending_pex_res) {
            w.push(&pex_message(addr));
        }
    }

    /// Adds INTEGRITY and DATA if the window, pacing and upload limit allow; true if it did.
    fn push_data(&mut self, now: Time, ch: &mut Channel<A>, w: &mut Writer) -> bool {
        let slack = self.config.pacing_granularity;
        if ch.in_flight.len() >= ch.window() || now + slack < ch.next_data {
            return false;
        }
        let Some((chunk, retransmission)) = self.next_chunk(ch) else {
            return false;
        };
        let len = self.chunk_len(chunk) as u64;
        match self.upload.wait_for(now, len) {
            Some(d) if d.is_zero() => {}
            wait => {
                self.upload_ready_at = wait.map(|d| now + d);
                // Not yet: put it back in front and wait for tokens.
                if retransmission {
                    ch.retransmit.push_front(chunk);
                } else {
                    ch.serve.push_front((chunk, now));
                }
                ch.enqueue(chunk);
                return false;
            }
        }
        self.scratch.clear();
        let mut data = std::mem::take(&mut self.scratch);
        let read = self.store.read_chunk(chunk, &mut data);
        if !matches!(read, Ok(true)) {
            // The store lost it (or never had it): nothing to send for this request.
            self.scratch = data;
            return false;
        }
        let Some(spec) = Bin::chunk(chunk).and_then(|b| w.spec(b)) else {
            self.scratch = data;
            return false;
        };
        let lean = !retransmission && ch.path_is_clean(now);
        for (bin, hash) in self.integrity_for(ch, chunk, lean) {
            if let Some(s) = w.spec(bin) {
                w.push(&Message::Integrity {
                    chunks: s,
                    hash: hash.as_bytes(),
                });
            }
        }
        w.push(&Message::Data {
            chunks: spec,
            timestamp: self.wall_clock(now).as_micros(),
            payload: &data,
        });
        self.upload.try_take(now, len);
        ch.in_flight.push_back(InFlight {
            chunk,
            sent: now,
            retransmission,
        });
        if let Some(b) = Bin::chunk(chunk) {
            ch.sent.set(b);
        }
        ch.cc.on_sent(now, ch.in_flight.len() as u32, ch.rtt.srtt());
        // Pace from the schedule, not from now, so a burst of at most `slack` is the only
        // deviation from one window per round trip.
        ch.next_data = ch.next_data.max(now - slack) + ch.send_interval();
        ch.bytes_up += len;
        self.stats.bytes_uploaded += len;
        if retransmission {
            self.stats.retransmissions += 1;
        }
        self.scratch = data;
        true
    }

    /// The next chunk to send: retransmissions first, then requests in arrival order,
    /// skipping entries no longer queued (cancelled, acknowledged) and what the peer got
    /// meanwhile or we cannot serve.
    fn next_chunk(&mut self, ch: &mut Channel<A>) -> Option<(u64, bool)> {
        while let Some(c) = ch.retransmit.pop_front() {
            if ch.unqueue(c) && self.peer_lacks(ch, c) {
                return Some((c, true));
            }
        }
        while let Some((c, _)) = ch.serve.pop_front() {
            if ch.unqueue(c) && self.peer_lacks(ch, c) {
                return Some((c, false));
            }
        }
        None
    }

    fn peer_lacks(&self, ch: &Channel<A>, chunk: u64) -> bool {
        Bin::chunk(chunk).is_some_and(|b| self.have.is_filled(b) && !ch.peer_have.is_filled(b))
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
    /// leaning costs a whole window of them, which after a slow-start overshoot on a long
    /// path costs much of its throughput; docs/EXPERIMENTS.md has the figures).
    /// Retransmissions carry every hash past what was acknowledged.
    fn integrity_for(&self, ch: &Channel<A>, chunk: u64, lean: bool) -> Vec<(Bin, Hash)> {
        // The walk stops below the lowest ancestor of `chunk` that holds a chunk the peer
        // knows: that ancestor's other child is known, and so is everything above. Found
        // by a binary search over the layers (an ancestor's emptiness only ends going up)
        // rather than a binmap look-up per node and sibling on every DATA.
        let root_layer = self.root_bin.layer();
        let ancestor = |layer: u32| Bin::new(layer, chunk >> layer).unwrap_or(self.root_bin);
        let (mut lo, mut hi) = (1, root_layer + 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if ch.peer_have.is_empty(ancestor(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let mut known = hi;
        if lean {
            known = known.min(
                (1..=LEAN_LAYERS.min(root_layer))
                    .find(|&layer| !ch.sent.is_empty(ancestor(layer)))
                    .unwrap_or(known),
            );
        }
        let mut list = Vec::new();
        if known > root_layer
            && let Some(peaks) = self.tree.peaks()
        {
            list.extend(peaks);
        }
        for u in self.tree.uncles(chunk, |b| b.layer() + 1 >= known) {
            if !list.iter().any(|(b, _)| *b == u.0) {
                list.push(u);
            }
        }
        list
    }
}
