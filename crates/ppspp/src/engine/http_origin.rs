//! An HTTP origin: the content and its tree file (docs/FORMATS.md) on a plain web server
//! or CDN, read by byte range. The engine decides what to read and checks every byte
//! against the root exactly as it checks a peer's; the adapter only performs the requests
//! it is given ([`Engine::poll_origin_request`]) and hands back what came
//! ([`Engine::handle_origin_response`], [`Engine::handle_origin_failure`]).
//!
//! What goes to the origin:
//! - the first chunks, at once, for a fast first frame;
//! - chunks playback needs next (the picker's due span, and where playback waits: the rest
//!   of the segment it waits for, at least as many chunks as the due span holds,
//!   [`Engine::set_waiting_for`]) that no connected peer holds, or that a peer was asked
//!   for and has not delivered within the deadline (`peer_deadline`; `waiting_deadline`,
//!   shorter, for what playback waits for); a connected page waits its turn (a few tens of
//!   ms, drawn per run of chunks) before asking for a due chunk nobody holds, so pages
//!   playing in step do not each fetch it (`ORIGIN_TURNS`);
//! - where playback waits but may wait for peers a while ([`Engine::set_waiting_slack`]: a
//!   player asking for a segment far ahead), what it waits for is fetched as due chunks
//!   are, and nothing but the head while peers are still connecting, until that slack is
//!   spent;
//! - once no peer has been connected for `alone_after` (an HTTP-only page: from the start),
//!   the picker's whole urgent span instead of the due span. Connections the adapter is
//!   still setting up ([`Engine::set_peers_coming`]) count as peers here: a slow ICE
//!   exchange is no reason to fetch the read-ahead from the origin;
//! - with a picker that has no playhead (whole files), whatever no connected peer holds,
//!   once a peer is connected or none has been for a while.
//!
//! What was asked of the origin is kept from the pickers for `origin_deadline` only; after
//! it a peer that holds it may be asked too, so a slow or silent origin holds up nothing
//! a peer can deliver.
//!
//! Everything else comes from peers, so the origin serves about one copy to the swarm; what
//! came from it is announced and served on to peers like any verified chunk. A chunk that
//! fails verification is never asked of the origin again (peers still are); a tree file
//! that does not match the root, or a server that cannot serve ranges, ends the origin's use.

mod backoff;
mod config;
mod due;
mod origin;
mod presence;
mod requests;
mod tree_parts;

pub use config::HttpOriginConfig;
pub(super) use origin::HttpOrigin;
pub use requests::{OriginFile, OriginRequest};

use super::event::Event;
use super::live_stream::Integrity;
use super::origin_error::OriginError;
use super::{Engine, PeerAddr};
use crate::Bin;
use crate::merkle::VerifyError;
use crate::merkle::tree_file::TreeFileHeader;
use crate::store::ChunkStore;
use crate::time::Time;
use core::ops::Range;
use core::time::Duration;
use due::{Swarm, Take};
use origin::Playback;
use requests::Wanted;

impl<A: PeerAddr, S: ChunkStore> Engine<A, S> {
    /// Uses an HTTP origin from now on: the adapter makes the requests
    /// [`poll_origin_request`](Self::poll_origin_request) returns (see the module docs of
    /// `engine::http_origin` for which chunks go there). Calling it again starts over.
    /// A live stream has no file on an origin: there the call does nothing.
    pub fn enable_http_origin(&mut self, config: HttpOriginConfig, now: Time) {
        if self.is_live() {
            return;
        }
        let mut config = config;
        config.max_requests = config.max_requests.max(1);
        let salt = self.rng.next_u64();
        self.origin = Some(Box::new(HttpOrigin::new(config, now, salt)));
    }

    /// Playback waits for `chunks` (`None`: it does not wait): before its first frame, or
    /// with a stall coming. `chunks.start` is the first chunk it lacks, `chunks.end` where
    /// the media segment it waits for ends if the adapter knows (anything up to `start` if
    /// not). The HTTP origin then serves those chunks, and at least as many from `start` as
    /// the due span holds (at most the urgent span's length), where no peer holds them,
    /// wherever the picker's playhead is: a segment bigger than the due span must not wait
    /// on chunks nobody is asked for. Seeders ([`set_origin`](Self::set_origin)) are not
    /// affected.
    pub fn set_waiting_for(&mut self, chunks: Option<Range<u64>>) {
        // The picker asks peers only for what is just ahead while playback waits.
        self.picker.set_waiting(chunks.is_some());
        if let Some(o) = self.origin.as_deref_mut() {
            o.patient_until = None;
            o.waiting_for = chunks;
        }
    }

    /// What playback waits for ([`set_waiting_for`](Self::set_waiting_for)) may wait for
    /// peers for `slack` from `now` (`None` or zero: it may not): a player that asks for a
    /// segment while it holds seconds of media ahead, less what it keeps in reserve. Until
    /// then those chunks are fetched as due chunks are, not at once: while peers are still
    /// connecting (none connected, the page not alone) the origin serves nothing but the
    /// head, and once one is connected a peer that holds a chunk gets `peer_deadline` and
    /// a chunk nobody holds goes to the origin after the page's turn. A page whose first
    /// peer comes a few seconds late then takes from it what its player asks for ahead,
    /// rather than everything it buffers from HTTP. Set it after each `set_waiting_for`
    /// (which clears it).
    pub fn set_waiting_slack(&mut self, slack: Option<Duration>, now: Time) {
        if let Some(o) = self.origin.as_deref_mut() {
            o.patient_until = slack.filter(|s| !s.is_zero()).map(|s| now + s);
        }
    }

    /// Asks the HTTP origin for nothing more than `chunks` ahead of the playhead (`None`:
    /// only the engine's own read-ahead bounds it), whatever the rule: alone, a page
    /// fetches this far from HTTP rather than its whole urgent span. What playback waits
    /// for is served all the same. A site pays for every byte its origin sends.
    pub fn set_origin_read_ahead(&mut self, chunks: Option<u64>) {
        if let Some(o) = self.origin.as_deref_mut() {
            o.read_ahead = chunks.map(|c| c.max(1));
        }
    }

    /// Whether the adapter is setting up connections to peers (WebRTC's ICE exchange, say):
    /// while it is (for at most three `alone_after`s), the page does not count as alone,
    /// and the origin serves only what playback needs next rather than the whole
    /// read-ahead. Call it after [`enable_http_origin`](Self::enable_http_origin).
    pub fn set_peers_coming(&mut self, coming: bool) {
        if let Some(o) = self.origin.as_deref_mut() {
            o.presence.set_coming(coming);
        }
    }

    /// True while an HTTP origin is in use (enabled, and not given up after a permanent
    /// failure).
    pub fn has_http_origin(&self) -> bool {
        self.origin
            .as_ref()
            .is_some_and(|o| !o.backoff.is_disabled())
    }

    /// The origin's wake-up came: the adapter polls it next (`poll_origin_request` after
    /// every call), so what fell due by `now` is no reason to wake again.
    pub(super) fn origin_woken(&mut self, now: Time) {
        if let Some(o) = self.origin.as_deref_mut() {
            o.polled(now);
        }
    }

    /// Whether `chunk` is being fetched from the HTTP origin.
    pub(super) fn origin_fetching(&self, chunk: u64) -> bool {
        self.origin
            .as_deref()
            .is_some_and(|o| o.requests.is_fetching(chunk))
    }

    /// The next HTTP request to make, if any. Drain it (until `None`) after every call that
    /// hands the engine something, as with [`poll_transmit`](Self::poll_transmit).
    pub fn poll_origin_request(&mut self, now: Time) -> Option<OriginRequest> {
        let connected = self
            .channels
            .values()
            .any(|c| c.handshake.is_established() && !c.liveness.is_closing());
        let complete = self.is_complete();
        let paused = self.storing_paused || self.length_check.disproved().is_some();
        let content = self.content;
        let origin = self.origin.as_deref_mut()?;
        origin.observe(now, connected);
        if complete || paused || !origin.may_ask(now) {
            return None;
        }
        // Content may go out before the header is in: it waits, parked, for its hashes.
        // Records cannot: their size is in the header.
        if let Some(request) = origin.ask_header(now, &content) {
            self.stats.origin_requests += 1;
            return Some(request);
        }
        // Records for parked chunks first (their request failed, say): they hold memory.
        if let Some(groups) = origin.tree.missing_for_parked() {
            return self.ask_records(now, groups);
        }
        let alone = origin.presence.is_alone(now);
        let run = self.origin_run(now, alone)?;
        let origin = self.origin.as_deref_mut()?;
        if let Some(groups) = origin.tree.missing_records(run.clone()) {
            return self.ask_records(now, groups);
        }
        for c in run.clone() {
            self.exclude.set_chunk(c);
        }
        self.stats.origin_requests += 1;
        Some(origin.ask_chunks(now, run, &content))
    }

    fn ask_records(&mut self, now: Time, groups: Range<u64>) -> Option<OriginRequest> {
        let request = self.origin.as_deref_mut()?.ask_records(now, groups)?;
        self.stats.origin_requests += 1;
        Some(request)
    }

    /// The chunks to ask of the origin next: a run of consecutive chunks it may serve, or
    /// `None`.
    fn origin_run(&mut self, now: Time, alone: bool) -> Option<Range<u64>> {
        let playback = Playback {
            alone,
            due: self.picker.due_chunks(),
            urgent: self.picker.urgent_chunks(),
            playhead: self.held.playhead(),
            chunk_count: self.chunk_count,
            chunk_size: self.content.chunk_size,
            patient: self
                .origin
                .as_deref()
                .and_then(|o| o.patient_until)
                .is_some_and(|t| now < t),
        };
        let origin = self.origin.as_deref_mut()?;
        let plan = origin.plan(&playback);
        origin.note_hold(now, &plan);
        let have = &self.have;
        origin.due.note(
            now,
            plan.span.clone().unwrap_or(0..0),
            plan.waiting.clone().unwrap_or(0..0),
            |c| have.has_chunk(c),
        );
        let may = |engine: &Self, c: u64| {
            plan.rule(c)
                .is_some_and(|r| engine.origin_may_take(now, c, r))
        };
        let mut first = (0..plan.head).find(|&c| may(self, c));
        for s in [plan.waiting.clone(), plan.span.clone()]
            .into_iter()
            .flatten()
        {
            if first.is_none() {
                first = s.into_iter().find(|&c| may(self, c));
            }
        }
        if first.is_none() && plan.span.is_none() && !plan.connecting {
            let n = self.chunk_count;
            let avail = &self.avail;
            first = self
                .origin
                .as_deref_mut()?
                .next_unheld(&self.exclude, n, |c| avail.rarity(c) == 0);
        }
        let first = first?;
        let mut end = first + 1;
        while end < self.chunk_count && end - first < plan.max_run && may(self, end) {
            end += 1;
        }
        Some(first..end)
    }

    /// Whether the origin may be asked for `chunk` now under `rule`.
    fn origin_may_take(&self, now: Time, chunk: u64, rule: Take) -> bool {
        let Some(origin) = self.origin.as_deref() else {
            return false;
        };
        let Some(bin) = Bin::chunk(chunk) else {
            return false;
        };
        if chunk >= self.chunk_count
            || !self.is_wanted(chunk)
            || self.have.is_filled(bin)
            || origin.requests.is_fetching(chunk)
            || origin.is_distrusted(chunk)
            || self.saved_pending(chunk)
        {
            return false;
        }
        let swarm = Swarm {
            asked: self.channels.values().any(|c| c.requests.contains(chunk)),
            unheld: self.avail.rarity(chunk) == 0,
            connected: origin.presence.connected(),
        };
        origin.due.allows(now, chunk, rule, swarm)
    }

    /// The body of request `id`, exactly the bytes of its range.
    pub fn handle_origin_response(&mut self, now: Time, id: u64, bytes: &[u8]) {
        let content = self.content;
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        let Some(wanted) = origin.requests.answered(id) else {
            return; // answered after a failure was reported, or after a restart
        };
        let expected = origin.expected_len(&wanted, &content);
        if bytes.len() as u64 != expected && wanted != Wanted::Header {
            let got = bytes.len() as u64;
            self.origin_failed(now, wanted, OriginError::WrongLength { expected, got });
            return;
        }
        origin.backoff.succeeded();
        match wanted {
            Wanted::Header => self.take_header(now, bytes),
            Wanted::Records(groups) => self.take_records(groups, bytes),
            Wanted::Chunks(run) => {
                self.stats.bytes_from_origin += bytes.len() as u64;
                let cs = content.chunk_size as usize;
                for (i, c) in run.enumerate() {
                    let start = i * cs;
                    let end = (start + cs).min(bytes.len());
                    self.take_origin_chunk(c, &bytes[start..end]);
                }
            }
        }
    }

    /// The header (and perhaps group 0's record) arrived.
    fn take_header(&mut self, now: Time, bytes: &[u8]) {
        let content = self.content;
        // An origin is enabled for static content only.
        let Some(tree) = self.tree_mut() else {
            return;
        };
        let header = TreeFileHeader::decode(
            bytes,
            content.hash,
            &content.root,
            content.chunk_size,
            content.content_len,
        )
        .and_then(|h| h.add_peaks_to(tree).map(|()| h));
        let header = match header {
            Ok(h) => h,
            Err(e) => {
                self.origin_failed(now, Wanted::Header, OriginError::BadTree(e));
                return;
            }
        };
        let first_record = header
            .first_record_follows()
            .then(|| header.record_range(0).ok())
            .flatten()
            .and_then(|r| bytes.get(r.start as usize..r.end as usize))
            .map(<[u8]>::to_vec);
        if let Some(o) = self.origin.as_deref_mut() {
            o.tree.set_header(header);
        }
        match first_record {
            Some(record) => self.take_records(0..1, &record),
            None => self.retry_parked(),
        }
    }

    /// The records of `groups` arrived: each is checked against the root; a bad one makes
    /// its chunks distrusted (the tree file is the origin's too).
    fn take_records(&mut self, groups: Range<u64>, bytes: &[u8]) {
        let (Some(origin), Integrity::Static(tree)) =
            (self.origin.as_deref_mut(), &mut self.integrity)
        else {
            return;
        };
        for e in origin.add_records(tree, groups, bytes) {
            self.push_event(Event::OriginFailed {
                error: OriginError::BadTree(e),
                retry_in: None,
                disabled: false,
            });
        }
        self.retry_parked();
    }

    /// Parked chunks whose hashes are in now (or never will be) are taken or released.
    fn retry_parked(&mut self) {
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        for (c, data) in origin.unpark_ready() {
            self.take_origin_chunk(c, &data);
        }
    }

    /// One chunk from the origin (just come, or parked until its hashes came): verified,
    /// then kept and announced; or parked until its hashes come; or, if it fails, reported
    /// and wanted from peers.
    fn take_origin_chunk(&mut self, chunk: u64, data: &[u8]) {
        let Some(bin) = Bin::chunk(chunk) else {
            return;
        };
        // Not being fetched any more, whatever comes of it: a chunk still marked so is
        // never asked of the origin again once let go of (a seek back under the memory
        // bound). Parking marks it again.
        if let Some(o) = self.origin.as_deref_mut() {
            o.requests.fetched(chunk);
        }
        if self.have.is_filled(bin) {
            self.stats.bytes_duplicate += data.len() as u64;
            return;
        }
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        if origin.is_distrusted(chunk) {
            self.release_origin_chunk(chunk);
            return;
        }
        let hashes_known = origin.tree.hashes_known(chunk);
        let Some(tree) = self.tree_mut() else {
            return;
        };
        match tree.verify_chunk(chunk, data, &[]) {
            Ok(()) => {
                self.cancel_at_peers(chunk);
                if self.store_chunk(chunk, data) {
                    self.chunk_kept(chunk, data.len(), Event::ChunkFromOrigin { chunk });
                } else {
                    self.release_origin_chunk(chunk);
                }
            }
            Err(VerifyError::MissingHash(_)) if !hashes_known => {
                if let Some(o) = self.origin.as_deref_mut() {
                    o.requests.fetch(chunk);
                    o.tree.park(chunk, data.to_vec());
                }
            }
            Err(reason) => {
                if let Some(o) = self.origin.as_deref_mut() {
                    o.distrust(chunk);
                }
                self.stats.chunks_origin_corrupt += 1;
                self.release_origin_chunk(chunk);
                self.push_event(Event::OriginCorrupt { chunk, reason });
            }
        }
    }

    /// A chunk the origin was asked for did not come (usable): it is wanted again, from
    /// peers or (unless distrusted) the origin, unless a peer has it on its way.
    fn release_origin_chunk(&mut self, chunk: u64) {
        if let Some(o) = self.origin.as_deref_mut() {
            o.requests.fetched(chunk);
        }
        let asked = self.channels.values().any(|c| c.requests.contains(chunk));
        if !asked {
            self.release_request(chunk);
        }
    }

    /// The origin delivered `chunk`: peers asked for it too are told to cancel.
    pub(super) fn cancel_at_peers(&mut self, chunk: u64) {
        for ch in self.channels.values_mut() {
            ch.requests.cancel(chunk);
        }
    }

    /// Chunk requests in flight for `origin_deadline` are left to peers as well: the
    /// pickers may ask a peer that holds them, and the origin's answer, should it come
    /// first, is kept as usual. Called from `handle_timeout`.
    pub(super) fn share_slow_origin_chunks(&mut self, now: Time) {
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        let deadline = origin.config.origin_deadline;
        for c in origin.requests.share_late(now, deadline) {
            self.release_request(c);
        }
    }

    /// Request `id` failed. A permanent failure (or too many in a row) ends the origin's
    /// use; otherwise requests wait, doubling the wait per failure in a row.
    pub fn handle_origin_failure(&mut self, now: Time, id: u64, error: OriginError) {
        let Some(wanted) = self
            .origin
            .as_deref_mut()
            .and_then(|o| o.requests.answered(id))
        else {
            return;
        };
        self.origin_failed(now, wanted, error);
    }

    fn origin_failed(&mut self, now: Time, wanted: Wanted, error: OriginError) {
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        for c in origin.forget(&wanted) {
            self.release_origin_chunk(c);
        }
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        let retry_in = origin.backoff.failed(now, error.is_permanent());
        let disabled = origin.backoff.is_disabled();
        if disabled {
            self.disable_origin();
        }
        self.push_event(Event::OriginFailed {
            error,
            retry_in,
            disabled,
        });
    }

    /// The origin is no longer used: what it was asked for is wanted from peers.
    fn disable_origin(&mut self) {
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        for c in origin.give_up() {
            self.release_origin_chunk(c);
        }
    }
}
