//! Everything that happens because time passed: handshake retries, loss detection and
//! retransmission, request expiry, keep-alives, the dead-peer rule, PEX and choking.

use super::event::{CloseReason, Event};
use super::request::plan_ahead;
use super::send::HANDSHAKE_TRIES;
use super::{Engine, PeerAddr};
use crate::Bin;
use crate::store::ChunkStore;
use crate::time::Time;
use core::time::Duration;

/// RFC 7574 §8.15: a peer silent this long, while we sent at least three datagrams, is dead.
const DEAD_PEER: Duration = Duration::from_secs(180);
const DEAD_PEER_DATAGRAMS: u32 = 3;
/// A new PEX request this often while we have room for peers.
const PEX_INTERVAL: Duration = Duration::from_secs(30);
/// Request expiries in a row without a single chunk before a peer that keeps announcing
/// chunks it never delivers is dropped.
const MAX_FRUITLESS_EXPIRIES: u32 = 3;
/// A responder waits this long for the initiator's third datagram.
const UNANSWERED_RESPONSE: Duration = Duration::from_secs(30);

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// When [`handle_timeout`](Self::handle_timeout) should next be called (`None`: only
    /// when a datagram arrives).
    pub fn poll_timeout(&self) -> Option<Time> {
        // Output that is ready now goes out through `poll_transmit`, which adapters drain
        // after every call; only waiting produces a deadline here.
        let mut next = [
            self.upload_ready_at,
            self.download_ready_at,
            self.next_stats,
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(Time::NEVER);
        for ch in self.channels.values() {
            if let Some(retry) = &ch.handshake {
                next = next.min(retry.next);
                continue;
            }
            if !ch.established {
                next = next.min(ch.last_recv + UNANSWERED_RESPONSE);
                continue;
            }
            let has_data = !ch.retransmit.is_empty() || !ch.serve.is_empty();
            if has_data && ch.in_flight.len() < ch.window() {
                next = next.min(ch.next_data - self.config.pacing_granularity);
            }
            if let Some(oldest) = ch.in_flight.front() {
                next = next.min(oldest.sent + ch.rtt.timeout());
            }
            if let Some(oldest) = ch.requests.values().min() {
                next = next.min(*oldest + 2 * plan_ahead(ch.rtt.srtt()));
            }
            next = next.min(ch.last_send + ch.keepalive);
            next = next.min(ch.last_recv + DEAD_PEER);
            if let Some(due) = ch.pex_request_due {
                next = next.min(due);
            }
        }
        (next != Time::NEVER).then_some(next)
    }

    /// Advances timers to `now`. Afterwards drain [`poll_transmit`](Self::poll_transmit).
    pub fn handle_timeout(&mut self, now: Time) {
        if self.upload_ready_at.is_some_and(|t| t <= now) {
            self.upload_ready_at = None;
        }
        if self.download_ready_at.is_some_and(|t| t <= now) {
            self.download_ready_at = None;
        }
        if let (Some(due), Some(every)) = (self.next_stats, self.config.stats_interval)
            && due <= now
        {
            self.next_stats = Some(now + every);
            let stats = self.stats();
            self.push_event(Event::Stats(stats));
        }
        let ids: Vec<u32> = self.channels.keys().copied().collect();
        for id in ids {
            if let Some(reason) = self.channel_timers(now, id) {
                self.remove_channel(id, reason);
            }
        }
        self.rebalance_chokes();
        self.schedule_requests(now, None);
    }

    fn channel_timers(&mut self, now: Time, id: u32) -> Option<CloseReason> {
        let room_for_peers = self.channels.len() < self.config.max_peers;
        let ch = self.channels.get_mut(&id)?;
        if let Some(retry) = &ch.handshake {
            if now >= retry.next {
                if retry.tries >= HANDSHAKE_TRIES {
                    return Some(CloseReason::Unreachable);
                }
                ch.send_handshake = true;
            }
            return None;
        }
        if now.saturating_since(ch.last_recv) >= DEAD_PEER
            && ch.sent_since_recv >= DEAD_PEER_DATAGRAMS
        {
            return Some(CloseReason::Timeout);
        }
        if !ch.established {
            // We answered a handshake and the initiator never came back.
            if now.saturating_since(ch.last_recv) >= UNANSWERED_RESPONSE {
                return Some(CloseReason::Unreachable);
            }
            return None;
        }
        // Loss detection: DATA unacknowledged after the retransmission timeout is lost.
        let rto = ch.rtt.timeout();
        let mut lost = 0u32;
        while ch.in_flight.front().is_some_and(|f| f.sent + rto <= now) {
            if let Some(f) = ch.in_flight.pop_front() {
                lost += 1;
                ch.retransmit.push_back(f.chunk);
            }
        }
        if lost > 0 {
            let silent = ch.last_ack.is_none_or(|t| now.saturating_since(t) >= rto);
            if silent {
                ch.cc.on_timeout(now);
                ch.rtt.on_timeout();
            } else {
                ch.cc.on_loss(now, ch.rtt.srtt());
            }
        }
        // Requests not served within two planning windows go back to the pool.
        let expiry = 2 * plan_ahead(ch.rtt.srtt());
        let expired: Vec<u64> = ch
            .requests
            .iter()
            .filter(|(_, t)| **t + expiry <= now)
            .map(|(c, _)| *c)
            .collect();
        if !expired.is_empty() {
            for c in &expired {
                ch.requests.remove(c);
                if let Some(b) = Bin::chunk(*c) {
                    ch.pending_cancels.push(b);
                }
            }
            ch.expired_without_data += 1;
            let fruitless = ch.expired_without_data >= MAX_FRUITLESS_EXPIRIES;
            for c in expired {
                self.release_request(c);
            }
            if fruitless {
                return Some(CloseReason::Misbehaving(
                    "announced chunks it did not deliver".into(),
                ));
            }
        }
        let ch = self.channels.get_mut(&id)?;
        if ch.pex_request_due.is_some_and(|due| due <= now) {
            ch.pending_pex_req = room_for_peers;
            ch.pex_request_due = room_for_peers.then_some(now + PEX_INTERVAL);
        }
        None
    }

    /// Serves at most `max_unchoked` peers: peers asking beyond that are choked until a
    /// slot frees up.
    fn rebalance_chokes(&mut self) {
        let busy = |c: &super::channel::Channel<A>| !c.serve.is_empty() || !c.in_flight.is_empty();
        let serving = self
            .channels
            .values()
            .filter(|c| !c.choking && busy(c))
            .count();
        let mut free = self.config.max_unchoked.saturating_sub(serving);
        for ch in self.channels.values_mut() {
            if ch.choking && free > 0 {
                ch.choking = false;
                ch.pending_choke = Some(false);
                free -= 1;
            }
        }
        if serving > self.config.max_unchoked {
            let mut excess = serving - self.config.max_unchoked;
            for ch in self.channels.values_mut().rev() {
                if excess == 0 {
                    break;
                }
                if !ch.choking && busy(ch) {
                    ch.choking = true;
                    ch.pending_choke = Some(true);
                    for (c, _) in ch.serve.drain(..) {
                        ch.outgoing.remove(&c);
                    }
                    excess -= 1;
                }
            }
        }
    }
}
