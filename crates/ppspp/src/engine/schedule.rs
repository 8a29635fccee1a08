//! Asking peers for chunks: Algorithm 1's budget per channel, the picker's choice, and the
//! download rate limit.

use super::request::request_budget;
use super::{Engine, PeerAddr};
use crate::picker::PickContext;
use crate::store::ChunkStore;
use crate::time::Time;

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// Tops up the requests of one channel (`Some(id)`) or of all.
    pub(crate) fn schedule_requests(&mut self, now: Time, only: Option<u32>) {
        self.relax_priorities();
        if self.is_complete() {
            return;
        }
        let Engine {
            channels,
            picker,
            exclude,
            avail,
            rng,
            download,
            download_ready_at,
            config,
            content,
            root_bin,
            chunk_count,
            ..
        } = self;
        let ids: Vec<u32> = match only {
            Some(id) => vec![id],
            None => channels.keys().copied().collect(),
        };
        for id in ids {
            let Some(ch) = channels.get_mut(&id) else {
                continue;
            };
            if !ch.established || ch.choked_by_peer || ch.closing.is_some() {
                continue;
            }

            let outstanding = ch.requests.len() as u64;
            let mut budget = request_budget(
                now,
                ch.planning_rtt(),
                &ch.dip,
                outstanding,
                config.min_request_pipeline,
            )
            .min(config.max_request_pipeline.saturating_sub(outstanding));
            while budget > 0 {
                let ctx = PickContext {
                    exclude,
                    avail,
                    range: *root_bin,
                    chunk_count: *chunk_count,
                    twist: rng.next_u64(),
                };
                let Some(mut bin) = picker.pick(&ctx, &ch.peer_have, budget) else {
                    break;
                };
                if ch.origin {
                    // One chunk at a time, and only if due or held by nobody else (the
                    // origin itself counts once in the availability).
                    bin = crate::picker::narrow(bin, 1);
                    if !picker.is_due(bin) && avail.rarity(bin.base_offset()) > 1 {
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
                    && p > ch.cc.priority()
                    && picker.is_urgent(bin)
                {
                    ch.cc.set_priority(p);
                    ch.urgent = true;
                }
                exclude.set(bin);
                if ch.requests.is_empty() {
                    // A new wait for this peer starts now (see WITHHOLDING).
                    ch.last_delivery = now;
                }
                if let Some((first, last)) = bin.chunk_range() {
                    for c in first..=last {
                        ch.requests.insert(c, now);
                        ch.request_order.push_back((now, c));
                    }
                }
                ch.pending_requests.push(bin);
                budget = budget.saturating_sub(bin.base_length());
            }
        }
    }

    /// Channels with nothing urgent left go back to the configured priority.
    fn relax_priorities(&mut self) {
        let base = self.config.congestion.priority;
        for ch in self.channels.values_mut().filter(|c| c.urgent) {
            let urgent_left = ch
                .requests
                .keys()
                .any(|c| crate::Bin::chunk(*c).is_some_and(|b| self.picker.is_urgent(b)));
            if !urgent_left {
                ch.urgent = false;
                ch.cc.set_priority(base);
            }
        }
    }
}
