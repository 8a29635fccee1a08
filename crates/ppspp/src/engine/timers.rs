//! Everything that happens because time passed: handshake retries, loss detection and
//! retransmission, request expiry, keep-alives, the dead-peer rule, PEX and choking.

use super::channel::Channel;
use super::event::{CloseReason, Event};
use super::misbehaviour::Misbehaviour;
use super::request::request_expiry;
use super::{Connect, Engine, PeerAddr};
use crate::store::ChunkStore;
use crate::time::Time;
use core::time::Duration;

/// A peer that delivered before but none of what we asked for in this long (and in three
/// expiry windows) is dropped. A slow peer still delivers: even a LEDBAT flow yielding to
/// TCP keeps a window of two; only a peer that withholds stays silent.
const WITHHOLDING: Duration = Duration::from_secs(30);
/// A peer that announced chunks and never delivered one, through this many distinct expiry
/// windows, is withholding on purpose (RFC 7574's "HAVE for data it lacks") and is banned;
/// for a peer holding part of the content only windows with a chunk nobody else has count.
const NEVER_DELIVERED_ROUNDS: u32 = 3;
/// Our HAVEs are re-announced in full this often on an idle channel: a lost HAVE would
/// otherwise hide chunks from the peer for good.
const HAVE_REFRESH: Duration = Duration::from_secs(30);
/// The least a deadline the timers could not act on waits before they look again.
const RECHECK: Duration = Duration::from_millis(1);
/// A responder waits this long for the initiator's third datagram.
const UNANSWERED_RESPONSE: Duration = Duration::from_secs(30);
/// While we lack chunks, a peer that has offered none we lack and asked us for none since
/// it connected, this long, is closed: it only holds a slot (it may come back, e.g. through
/// PEX, once it has news). One that was of use once stays.
pub(crate) const NOTHING_TO_EXCHANGE: Duration = Duration::from_secs(30);
/// A peer that sent nothing at all for this long while our requests waited is gone (it
/// quit without a close, or the path died): close it rather than wait for the RFC's
/// three-minute dead-peer rule, so its requests go to others.
const SILENT_WITH_REQUESTS: Duration = Duration::from_secs(15);

/// What a channel's timers decided.
enum TimerVerdict {
    Close(CloseReason),
    Ban(Misbehaviour),
}

/// Every deadline of one channel, in one table: [`Engine::poll_timeout`] wakes for the
/// earliest and `channel_timers` acts on those that passed, so the two cannot drift apart
/// (a deadline only one of them knew either never fired or woke the driver for nothing).
/// `None`: that deadline does not apply now.
#[derive(Default)]
struct Deadlines {
    /// The initiator's next handshake (while it is set, no other deadline applies).
    handshake_retry: Option<Time>,
    /// RFC 7574's dead-peer rule.
    dead_peer: Option<Time>,
    /// An UNCHOKE no REQUEST followed goes again.
    unchoke_resend: Option<Time>,
    /// The oldest DATA in flight counts as lost.
    retransmission: Option<Time>,
    /// A peer silent while our requests waited is closed.
    silent_with_requests: Option<Time>,
    /// The oldest request goes back to the pool.
    request_expiry: Option<Time>,
    /// A peer of no use so far is closed.
    nothing_to_exchange: Option<Time>,
    /// Our HAVEs are announced again in full.
    have_refresh: Option<Time>,
    /// A PEX request goes out.
    pex_request: Option<Time>,
    /// Pacing and the upload limit let the next DATA go (`poll_transmit` sends it).
    next_data: Option<Time>,
    /// A keep-alive is due (`poll_transmit` sends it).
    keepalive: Option<Time>,
    /// ACKs held for company must go (`poll_transmit` sends them).
    acks: Option<Time>,
    /// HAVEs held for company must go (`poll_transmit` sends them).
    haves: Option<Time>,
}

impl Deadlines {
    fn earliest(&self) -> Option<Time> {
        [
            self.handshake_retry,
            self.dead_peer,
            self.unchoke_resend,
            self.retransmission,
            self.silent_with_requests,
            self.request_expiry,
            self.nothing_to_exchange,
            self.have_refresh,
            self.pex_request,
            self.next_data,
            self.keepalive,
            self.acks,
            self.haves,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// True if `deadline` applies and has passed.
fn passed(deadline: Option<Time>, now: Time) -> bool {
    deadline.is_some_and(|t| t <= now)
}

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// The deadline table of `ch` (see [`Deadlines`]).
    fn deadlines(&self, ch: &Channel<A>) -> Deadlines {
        if let Some(next) = ch.handshake.retry_at() {
            return Deadlines {
                handshake_retry: Some(next),
                ..Deadlines::default()
            };
        }
        let has_data = ch.serve_queue.has_data();
        let keepalive = ch.liveness.keepalive().min(HAVE_REFRESH);
        Deadlines {
            handshake_retry: None,
            dead_peer: ch.liveness.dead_peer_at(),
            unchoke_resend: ch.choke.unchoke_resend_at(),
            retransmission: ch
                .in_flight
                .loss_deadline(ch.sending.rtt(), self.config.pacing_granularity),
            silent_with_requests: (!ch.requests.is_empty() && ch.delivery.expired_since_delivery())
                .then(|| ch.liveness.last_heard() + SILENT_WITH_REQUESTS),
            request_expiry: ch
                .requests
                .oldest()
                .map(|t| t + request_expiry(ch.planning_rtt())),
            nothing_to_exchange: (!self.is_complete())
                .then(|| ch.usefulness.check_due(NOTHING_TO_EXCHANGE))
                .flatten(),
            have_refresh: Some(
                (ch.announcing.refreshed_at() + HAVE_REFRESH)
                    .max(ch.liveness.last_sent() + keepalive),
            ),
            pex_request: ch.pex.request_due(),
            // While the upload limit holds data back, its refill is the deadline.
            next_data: (has_data && ch.in_flight.len() < ch.sending.window()).then(|| {
                (ch.sending.next_data() - self.config.pacing_granularity)
                    .max(self.upload_ready_at.unwrap_or(Time::ZERO))
            }),
            keepalive: Some(ch.liveness.keepalive_at()),
            acks: ch.announcing.acks_due_at(),
            haves: ch.announcing.haves_due_at().filter(|_| self.has_news(ch)),
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) should next be called (`None`: only
    /// when a datagram arrives). Once `handle_timeout(now)` has run, the deadline is later
    /// than `now` until the next datagram: a driver never spins on it.
    pub fn poll_timeout(&self) -> Option<Time> {
        let next = self.earliest_deadline()?;
        match self.timers_ran_at {
            // Whatever was due then was done; what is still due could not be (a send held
            // by a window or limit that only a datagram or time frees) and is looked at
            // again one pacing step later.
            Some(ran) if next <= ran => Some(ran + self.config.pacing_granularity.max(RECHECK)),
            _ => Some(next),
        }
    }

    fn earliest_deadline(&self) -> Option<Time> {
        // Output that is ready now goes out through `poll_transmit`, which adapters drain
        // after every call; only waiting produces a deadline here.
        [
            self.upload_ready_at,
            self.download_ready_at,
            self.next_stats,
            self.half_open.next_expiry(UNANSWERED_RESPONSE),
            self.origin.as_ref().and_then(|o| o.wake_at()),
            self.redials.next_at(),
            self.pick_again.then_some(Time::ZERO),
        ]
        .into_iter()
        .flatten()
        .chain(
            self.channels
                .values()
                .filter_map(|ch| self.deadlines(ch).earliest()),
        )
        .min()
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
        self.half_open.expire(now, UNANSWERED_RESPONSE);
        self.share_slow_origin_chunks(now);
        self.origin_woken(now);
        self.redial(now);
        let ids: Vec<u32> = self.channels.keys().copied().collect();
        for id in ids {
            match self.channel_timers(now, id) {
                Some(TimerVerdict::Close(reason)) => self.remove_channel(id, reason),
                Some(TimerVerdict::Ban(why)) => self.ban(id, why),
                None => {}
            }
        }
        self.rebalance_chokes(now);
        self.pick_again = false;
        self.schedule_requests(now, None);
        self.timers_ran_at = Some(now);
    }

    /// Asks again the peers that refused us and are due, while we want chunks.
    fn redial(&mut self, now: Time) {
        if self.is_complete() {
            self.redials.clear();
            return;
        }
        for peer in self.redials.due(now) {
            match self.connect(peer.clone(), now) {
                Connect::Started | Connect::AlreadyConnected => {}
                // We are full ourselves: later.
                Connect::Full => self.redials.refused(peer, now, &mut self.rng),
                Connect::Banned | Connect::OwnAddress | Connect::Finished => {
                    self.redials.forget(&peer)
                }
            }
        }
    }

    fn channel_timers(&mut self, now: Time, id: u32) -> Option<TimerVerdict> {
        let room_for_peers = self.channels.len() < self.config.max_peers;
        let due = self.deadlines(self.channels.get(&id)?);
        let ch = self.channels.get_mut(&id)?;
        if ch.handshake.awaits_answer() {
            if passed(due.handshake_retry, now) {
                if ch.handshake.out_of_tries() {
                    return Some(TimerVerdict::Close(CloseReason::Unreachable));
                }
                ch.handshake.send_again();
            }
            return None;
        }
        if passed(due.dead_peer, now) {
            return Some(TimerVerdict::Close(CloseReason::Timeout));
        }
        if passed(due.unchoke_resend, now) {
            ch.choke.resend_unchoke(now);
        }
        // Loss detection: DATA unacknowledged past its loss deadline is lost.
        let granularity = self.config.pacing_granularity;
        let serve_queue = &mut ch.serve_queue;
        let lost = ch
            .in_flight
            .take_lost(now, ch.sending.rtt(), granularity, |c| serve_queue.lost(c));
        if lost.count > 0 {
            ch.sending.data_lost(now, lost.last_sent);
        }
        if passed(due.silent_with_requests, now) {
            return Some(TimerVerdict::Close(CloseReason::Timeout));
        }
        // Requests not served within two planning windows go back to the pool.
        let expiry = request_expiry(ch.planning_rtt());
        let expired = ch.requests.expire(now, expiry);
        if !expired.is_empty() {
            // A peer that holds only part of the content may have let expired chunks go
            // (an engine bounded in memory does, and RFC 7574 has no way to say so): that
            // is no sign of withholding while someone else can give us every one of them.
            // A peer that holds everything, or one we have no other source for, is judged.
            let claims_all = ch.holdings.is_complete();
            let withheld = claims_all || expired.iter().any(|&c| !self.held_elsewhere(c));
            let ch = self.channels.get_mut(&id)?;
            ch.delivery.requests_expired(now, expiry, withheld);
            // While our store cannot take chunks, what the peer sends is dropped unanswered:
            // its silence proves nothing.
            let judged = !self.storing_paused;
            let never = judged && ch.delivery.never_delivered(NEVER_DELIVERED_ROUNDS);
            let silent = judged && ch.delivery.since_delivery(now) >= WITHHOLDING.max(3 * expiry);
            if let Some(mut ch) = self.channels.remove(&id) {
                for &c in &expired {
                    self.request_expired(&mut ch, c);
                }
                self.channels.insert(id, ch);
            }
            for c in expired {
                self.release_request(c);
            }
            if never {
                return Some(TimerVerdict::Ban(Misbehaviour::NeverDelivered));
            }
            if silent {
                return Some(TimerVerdict::Close(CloseReason::Misbehaving(
                    Misbehaviour::StoppedDelivering,
                )));
            }
        }
        let ch = self.channels.get_mut(&id)?;
        if passed(due.nothing_to_exchange, now) {
            // Checked here, once per period, rather than on every HAVE: the peer may hold
            // news from before (while it choked us, say), or we may be serving it.
            let offers = ch.holdings.is_complete()
                || crate::binmap::Binmap::find_all(
                    [(ch.holdings.map(), true), (&self.have, false)],
                    self.root_bin,
                    0,
                )
                .is_some();
            let serving = ch.serve_queue.has_data() || !ch.in_flight.is_empty();
            if !offers && !serving && ch.requests.is_empty() {
                return Some(TimerVerdict::Close(CloseReason::NothingToExchange(
                    NOTHING_TO_EXCHANGE,
                )));
            }
            ch.usefulness.still_of_use(now);
        }
        if passed(due.have_refresh, now) {
            ch.announcing.refresh(now);
        }
        if passed(due.pex_request, now) {
            ch.pex.request_timer(now, room_for_peers);
        }
        None
    }

    /// Serves at most `max_unchoked` peers: peers asking beyond that are choked until a
    /// slot frees up.
    fn rebalance_chokes(&mut self, now: Time) {
        if !self.uploading {
            return; // every peer is choked (`set_uploading`)
        }
        let busy =
            |c: &super::channel::Channel<A>| c.serve_queue.has_data() || !c.in_flight.is_empty();
        let serving = self
            .channels
            .values()
            .filter(|c| !c.choke.is_choking() && busy(c))
            .count();
        let mut free = self.config.max_unchoked.saturating_sub(serving);
        for ch in self.channels.values_mut() {
            if ch.choke.is_choking() && free > 0 {
                ch.choke.unchoke(now);
                free -= 1;
            }
        }
        if serving > self.config.max_unchoked {
            let mut excess = serving - self.config.max_unchoked;
            for ch in self.channels.values_mut().rev() {
                if excess == 0 {
                    break;
                }
                if !ch.choke.is_choking() && busy(ch) {
                    ch.stop_serving();
                    excess -= 1;
                }
            }
        }
    }
}
