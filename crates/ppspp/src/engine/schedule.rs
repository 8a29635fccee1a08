//! Asking peers for chunks: Algorithm 1's budget per channel, the picker's choice, and the
//! download rate limit.

use super::request::{plan_ahead, request_budget};
use super::{Engine, PeerAddr};
use crate::picker::PickContext;
use crate::store::ChunkStore;
use crate::time::Time;
use core::time::Duration;
use std::collections::BTreeMap;

/// With this few chunks missing, and all of them requested, chunks are also asked of other
/// peers that hold them (BitTorrent's endgame): one slow or vanished peer must not hold
/// the last chunks hostage. The first copy to arrive wins; the others are cancelled.
const ENDGAME_CHUNKS: u64 = 32;
/// With up to this many missing, a channel with nothing left to pick also takes over
/// requests that waited elsewhere longer than it would take itself (its planning window):
/// fast peers finish what overloaded ones cannot.
const STEAL_CHUNKS: u64 = 1024;
/// While playback waits, the least time a due chunk waits at a peer that passed its
/// request over before an origin is asked for it too: short against a stall, long enough
/// for a DATA overtaken on the way (data channels are unordered) to arrive.
const WAITING_STEAL_AFTER: Duration = Duration::from_millis(100);

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// Tops up the requests of one channel (`Some(id)`) or of all.
    pub(crate) fn schedule_requests(&mut self, now: Time, only: Option<u32>) {
        self.relax_priorities();
        if self.is_complete() || self.storing_paused || self.length_check.disproved().is_some() {
            return;
        }
        let Engine {
            channels,
            picker,
            exclude,
            avail,
            pick_twist,
            download,
            download_ready_at,
            config,
            content,
            root_bin,
            chunk_count,
            have,
            have_count,
            endgame,
            integrity,
            ..
        } = self;
        // A live stream is always at its end: requests that wait at an overloaded peer (the
        // source, first to hold every chunk) are taken over by peers that got the chunk
        // since, but every chunk is not asked of everyone (no endgame).
        let missing = if integrity.is_live() {
            STEAL_CHUNKS
        } else {
            chunk_count.saturating_sub(*have_count)
        };
        // Built once per call, and only when a channel reaches the endgame below: each
        // chunk requested, when first, and whether a peer it waits at passed it over.
        let mut waiting: Option<Vec<(Time, u64, bool)>> = None;
        // One channel (a datagram arrived) needs no list of them all.
        let all: Vec<u32> = match only {
            Some(_) => Vec::new(),
            None => channels.keys().copied().collect(),
        };
        // Origins that hold everything, counted when an origin is first scheduled: each
        // is in the availability, but none of them is the swarm an origin defers to.
        let mut origin_seeders: Option<usize> = None;
        for id in only.into_iter().chain(all) {
            if origin_seeders.is_none() && channels.get(&id).is_some_and(|c| c.origin) {
                let complete = channels
                    .values()
                    .filter(|c| {
                        c.origin && c.handshake.is_established() && c.holdings.is_complete()
                    })
                    .count();
                origin_seeders = Some(complete);
            }
            let Some(ch) = channels.get_mut(&id) else {
                continue;
            };
            if !ch.handshake.is_established()
                || ch.choke.choked_by_peer()
                || ch.liveness.is_closing()
            {
                continue;
            }

            let outstanding = ch.requests.len() as u64;
            let mut budget = request_budget(
                now,
                ch.planning_rtt(),
                ch.delivery.inter_arrival(),
                outstanding,
                config.min_request_pipeline,
            )
            .min(config.max_request_pipeline.saturating_sub(outstanding));
            if ch.delivery.expired_since_delivery() {
                // A probe, not a pipeline, until it delivers again.
                budget = budget.min(1u64.saturating_sub(outstanding));
            }
            while budget > 0 {
                let ctx = PickContext {
                    exclude,
                    avail,
                    range: *root_bin,
                    chunk_count: *chunk_count,
                    twist: *pick_twist,
                };
                let Some(mut bin) = picker.pick(&ctx, ch.holdings.map(), budget) else {
                    break;
                };
                if ch.origin {
                    // One chunk at a time, and only if due or held by no peer but origins.
                    bin = crate::picker::narrow(bin, 1);
                    let origins = origin_seeders.unwrap_or(0).max(1);
                    if !picker.is_due(bin) && avail.rarity(bin.base_offset()) > origins {
                        break;
                    }
                }
                // The download limit is spent when asking, so what we ask for can arrive
                // at the allowed rate.
                let bytes = |b: crate::Bin| b.base_length() * u64::from(content.chunk_size);
                while !download.try_take(now, bytes(bin)) {
                    if bin.is_base() {
                        *download_ready_at = download.wait_for(now, bytes(bin)).map(|d| now + d);
                        return;
                    }
                    bin = bin.left();
                }
                if let Some(p) = config.urgent_priority
                    && p > ch.sending.priority()
                    && picker.is_urgent(bin)
                {
                    ch.sending.set_priority(p);
                    ch.urgent = true;
                }
                exclude.set(bin);
                ch.ask(now, bin);
                budget = budget.saturating_sub(bin.base_length());
            }
            if budget == 0 || missing == 0 || missing > STEAL_CHUNKS {
                continue;
            }
            // Endgame: the picker found nothing unrequested here; ask for missing chunks
            // this peer holds that others were asked for, all of them near the very end,
            // else those waiting longer than this peer would take (an origin: only those
            // due).
            let steal_after = plan_ahead(ch.planning_rtt());
            // While playback waits, an origin (asked for due chunks one at a time, with no
            // queue of requests ahead of them: it delivers one in about a round trip) takes
            // them over sooner from peers not answering them in turn (none answered since, or
            // later ones first): a bounded page's HAVE stands after it lets a chunk go, so
            // such a peer never sends it; a busy one answering in order keeps its requests.
            let steal_passed_after = if ch.origin && picker.is_waiting() {
                (ch.planning_rtt() * 2)
                    .max(WAITING_STEAL_AFTER)
                    .min(steal_after)
            } else {
                steal_after
            };
            // The cheap test first: with nothing waiting that long at another peer (say,
            // with one peer only), no stealing.
            let oldest = channels
                .iter()
                .filter(|(other, _)| **other != id)
                .filter_map(|(_, c)| c.requests.oldest())
                .min();
            let endgame_now = missing <= ENDGAME_CHUNKS;
            if !endgame_now && oldest.is_none_or(|t| now.saturating_since(t) < steal_passed_after) {
                continue;
            }
            // Missing chunks requested elsewhere, oldest request first.
            let waiting = waiting.get_or_insert_with(|| {
                let mut at: BTreeMap<u64, (Time, bool)> = BTreeMap::new();
                for other in channels.values() {
                    for (c, t) in other.requests.iter() {
                        let passed = other.delivery.passed_over(t);
                        at.entry(c)
                            .and_modify(|(a, p)| {
                                *a = (*a).min(t);
                                *p |= passed;
                            })
                            .or_insert((t, passed));
                    }
                }
                let mut by_time: Vec<(Time, u64, bool)> =
                    at.into_iter().map(|(c, (t, p))| (t, c, p)).collect();
                by_time.sort_unstable();
                by_time
            });
            let Some(ch) = channels.get_mut(&id) else {
                continue;
            };
            let candidates = waiting
                .iter()
                .take_while(|(t, _, _)| {
                    endgame_now || now.saturating_since(*t) >= steal_passed_after
                })
                .filter(|(t, _, passed)| {
                    endgame_now || *passed || now.saturating_since(*t) >= steal_after
                })
                .map(|(_, c, _)| *c);
            for c in candidates {
                let Some(b) = crate::Bin::chunk(c) else {
                    continue;
                };
                if budget == 0 {
                    break;
                }
                if have.is_filled(b)
                    || ch.requests.contains(c)
                    || !ch.holdings.holds(b)
                    || (ch.origin && !picker.is_due(b))
                    || !download.try_take(now, u64::from(content.chunk_size))
                {
                    continue;
                }
                *endgame = true;
                exclude.set(b);
                ch.ask(now, b);
                budget -= 1;
            }
        }
    }

    /// Channels with nothing urgent left go back to the configured priority.
    fn relax_priorities(&mut self) {
        let base = self.config.congestion.priority;
        for ch in self.channels.values_mut().filter(|c| c.urgent) {
            let urgent_left = ch
                .requests
                .iter()
                .any(|(c, _)| crate::Bin::chunk(c).is_some_and(|b| self.picker.is_urgent(b)));
            if !urgent_left {
                ch.urgent = false;
                ch.sending.set_priority(base);
            }
        }
    }
}
