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

use super::event::Event;
use super::live_stream::Integrity;
use super::origin_error::OriginError;
use super::{Engine, PeerAddr};
use crate::Bin;
use crate::binmap::Binmap;
use crate::merkle::VerifyError;
use crate::merkle::tree_file::TreeFileHeader;
use crate::store::ChunkStore;
use crate::time::Time;
use core::ops::Range;
use core::time::Duration;
use std::collections::BTreeMap;

/// How the engine uses an HTTP origin. [`HttpOriginConfig::default`] suits a browser.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpOriginConfig {
    /// Requests in flight at most (tree and content together).
    pub max_requests: usize,
    /// Content bytes per request at most (whole chunks; at least one chunk).
    pub max_request_bytes: u64,
    /// The first bytes of the content fetched from the origin at once.
    pub head_bytes: u64,
    /// A due chunk asked of a peer and not delivered for this long is asked of the origin.
    pub peer_deadline: Duration,
    /// The same for a chunk playback waits for ([`Engine::set_waiting_for`]: no first
    /// frame yet, or a stall coming): shorter, as the viewer is already waiting.
    pub waiting_deadline: Duration,
    /// Chunks asked of the origin and not delivered for this long may be asked of peers
    /// too (whichever copy comes first is kept): a slow or silent origin holds nothing up
    /// that a peer can deliver.
    pub origin_deadline: Duration,
    /// With no peer connected (or coming) for this long, the origin serves the whole urgent
    /// span (zero: from the start, as an HTTP-only page wants).
    pub alone_after: Duration,
    /// The first retry's delay after a failed request; it doubles per failure in a row.
    pub retry_base: Duration,
    /// The longest delay between retries.
    pub retry_max: Duration,
    /// Failures in a row after which the origin is no longer used.
    pub max_failures: u32,
}

impl Default for HttpOriginConfig {
    fn default() -> Self {
        HttpOriginConfig {
            max_requests: 4,
            max_request_bytes: 256 << 10,
            head_bytes: 64 << 10,
            peer_deadline: Duration::from_millis(1000),
            waiting_deadline: Duration::from_millis(400),
            origin_deadline: Duration::from_millis(1000),
            alone_after: Duration::from_secs(3),
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(30),
            max_failures: 8,
        }
    }
}

/// Which of the origin's two files a request reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginFile {
    /// The hash tree (`ppspp root FILE --tree OUT`, docs/FORMATS.md).
    Tree,
    /// The content itself.
    Content,
}

/// One HTTP Range request for the adapter to make.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginRequest {
    /// Names the request in [`Engine::handle_origin_response`] or
    /// [`Engine::handle_origin_failure`].
    pub id: u64,
    /// The file to read.
    pub file: OriginFile,
    /// The bytes to read, end exclusive (`Range: bytes=start-(end-1)`); never empty.
    pub range: Range<u64>,
}

/// What a request in flight was for.
#[derive(Clone, Debug)]
enum Wanted {
    /// The header, and perhaps group 0's record after it.
    Header,
    /// The records of these groups.
    Records(Range<u64>),
    /// These chunks.
    Chunks(Range<u64>),
}

/// A request in flight: what for, since when, and whether its chunks were left to peers
/// as well (`origin_deadline`).
#[derive(Clone, Debug)]
struct Issued {
    wanted: Wanted,
    at: Time,
    shared: bool,
}

/// The engine's side of an HTTP origin.
#[derive(Debug)]
pub(super) struct HttpOrigin {
    config: HttpOriginConfig,
    header: Option<TreeFileHeader>,
    header_requested: bool,
    /// Groups whose record is verified, and those on their way (a group is a "chunk" of
    /// these maps).
    records: Binmap,
    records_requested: Binmap,
    requests: BTreeMap<u64, Issued>,
    next_id: u64,
    /// Chunks asked of the origin and not answered yet.
    fetching: Binmap,
    /// Chunks that arrived before the hashes to check them: bounded by the requests in
    /// flight, kept until their record comes.
    parked: BTreeMap<u64, Vec<u8>>,
    /// Chunks the origin served corrupt: never asked of it again.
    distrusted: Binmap,
    /// Failures in a row, and when requests may go out again.
    failures: u32,
    retry_at: Option<Time>,
    /// The origin is no longer used (a permanent failure, or too many in a row).
    disabled: bool,
    /// Since when no peer has been connected (or coming).
    alone_since: Option<Time>,
    /// The adapter is setting up connections to peers (`set_peers_coming`), and since when.
    peers_coming: bool,
    coming_since: Option<Time>,
    /// A peer was connected at the last poll.
    connected: bool,
    /// Where the search for chunks no peer holds goes on (pickers without a playhead).
    scan_from: u64,
    /// Since when each missing chunk of the due span has been due: past the deadline the
    /// origin serves it whoever holds it.
    due_since: BTreeMap<u64, Time>,
    /// The last poll: deadlines before it are no reason to wake.
    polled_at: Time,
    /// The chunks playback waits for, if it waits (`set_waiting_for`).
    waiting_for: Option<Range<u64>>,
    /// Chunks asked of the origin at most ahead of the playhead (`set_origin_read_ahead`).
    read_ahead: Option<u64>,
    /// This page's own salt for [`origin_turn`]: drawn once, so pages differ.
    turn_salt: u64,
}

/// Why the origin may serve a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Take {
    /// One of the first chunks: unless a peer was asked for it.
    Head,
    /// Due for playback: unless a peer holds it or was asked for it, and it has not been
    /// due for longer than the deadline.
    Due,
    /// What playback waits for: as `Due`, with the shorter `waiting_deadline`.
    Waiting,
    /// A picker without a playhead: unless a peer holds it or was asked for it.
    Unheld,
}

/// Connections being set up keep a page from counting as alone for at most this many
/// `alone_after`s.
const COMING_FOR: u32 = 3;

/// Chunks looked at per search for chunks no peer holds, so a poll stays cheap.
const SCAN_LIMIT: u64 = 4096;

/// Pages that play in step lack the same due chunks at the same moment, and each would ask
/// the origin for them: as many copies as pages. So a connected page waits its turn before
/// asking for a due chunk nobody holds, one of `ORIGIN_TURNS` delays `ORIGIN_TURN_STEP`
/// apart, drawn per run of `ORIGIN_TURN_CHUNKS` chunks from its own salt; the page whose
/// turn comes first fetches, the others see its HAVE and ask it instead. Two pages in step
/// draw the same turn for one run in `ORIGIN_TURNS`; the longest wait stays well inside
/// the due span's second or two of media.
const ORIGIN_TURNS: u64 = 8;
const ORIGIN_TURN_STEP: Duration = Duration::from_millis(25);
const ORIGIN_TURN_CHUNKS: u64 = 16;

/// How long this page waits before asking the origin for `chunk` when a peer might fetch
/// it first (see [`ORIGIN_TURNS`]).
fn origin_turn(salt: u64, chunk: u64) -> Duration {
    // splitmix64's finaliser: runs next to each other get unrelated turns.
    let mut z = salt ^ (chunk / ORIGIN_TURN_CHUNKS).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    ORIGIN_TURN_STEP * (z % ORIGIN_TURNS) as u32
}

impl HttpOrigin {
    pub(super) fn new(config: HttpOriginConfig, now: Time, turn_salt: u64) -> HttpOrigin {
        HttpOrigin {
            config,
            header: None,
            header_requested: false,
            records: Binmap::new(),
            records_requested: Binmap::new(),
            requests: BTreeMap::new(),
            next_id: 1,
            fetching: Binmap::new(),
            parked: BTreeMap::new(),
            distrusted: Binmap::new(),
            failures: 0,
            retry_at: None,
            disabled: false,
            alone_since: Some(now),
            peers_coming: false,
            coming_since: None,
            connected: false,
            scan_from: 0,
            due_since: BTreeMap::new(),
            polled_at: now,
            waiting_for: None,
            read_ahead: None,
            turn_salt,
        }
    }

    fn issue(
        &mut self,
        now: Time,
        wanted: Wanted,
        file: OriginFile,
        range: Range<u64>,
    ) -> OriginRequest {
        let id = self.next_id;
        self.next_id += 1;
        self.requests.insert(
            id,
            Issued {
                wanted,
                at: now,
                shared: false,
            },
        );
        OriginRequest { id, file, range }
    }

    /// When the oldest chunk request not yet shared with peers reaches its deadline.
    fn next_share_at(&self) -> Option<Time> {
        self.requests
            .values()
            .filter(|r| !r.shared && matches!(r.wanted, Wanted::Chunks(_)))
            .map(|r| r.at + self.config.origin_deadline)
            .min()
    }

    /// When the origin wants a poll again without anything else happening: a retry's time,
    /// or the moment the page counts as alone.
    pub(super) fn wake_at(&self) -> Option<Time> {
        if self.disabled {
            return None;
        }
        // Deadlines already passed at the last poll are no reason to wake (with no wait
        // for peers, being alone is one of them).
        let alone = self.alone_since.map(|t| t + self.config.alone_after);
        let deadline = self.config.peer_deadline.min(self.config.waiting_deadline);
        let overdue = self
            .due_since
            .iter()
            .flat_map(|(&c, &t)| {
                // A connected page's turn for a due chunk nobody holds comes first.
                let turn = self.connected.then(|| t + origin_turn(self.turn_salt, c));
                [Some(t + deadline), turn]
            })
            .flatten()
            .filter(|&t| t > self.polled_at)
            .min();
        [self.retry_at, alone, overdue, self.next_share_at()]
            .into_iter()
            .flatten()
            .filter(|&t| t > self.polled_at)
            .min()
    }
}

fn is(map: &Binmap, i: u64) -> bool {
    Bin::chunk(i).is_some_and(|b| map.is_filled(b))
}

fn set(map: &mut Binmap, i: u64) {
    if let Some(b) = Bin::chunk(i) {
        map.set(b);
    }
}

fn reset(map: &mut Binmap, i: u64) {
    if let Some(b) = Bin::chunk(i) {
        map.reset(b);
    }
}

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
            o.waiting_for = chunks;
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
            o.peers_coming = coming;
        }
    }

    /// True while an HTTP origin is in use (enabled, and not given up after a permanent
    /// failure).
    pub fn has_http_origin(&self) -> bool {
        self.origin.as_ref().is_some_and(|o| !o.disabled)
    }

    /// The origin's wake-up came: the adapter polls it next (`poll_origin_request` after
    /// every call), so what fell due by `now` is no reason to wake again.
    pub(super) fn origin_woken(&mut self, now: Time) {
        if let Some(o) = self.origin.as_deref_mut() {
            o.polled_at = o.polled_at.max(now);
        }
    }

    /// Whether `chunk` is being fetched from the HTTP origin.
    pub(super) fn origin_fetching(&self, chunk: u64) -> bool {
        self.origin
            .as_deref()
            .is_some_and(|o| is(&o.fetching, chunk))
    }

    /// The next HTTP request to make, if any. Drain it (until `None`) after every call that
    /// hands the engine something, as with [`poll_transmit`](Self::poll_transmit).
    pub fn poll_origin_request(&mut self, now: Time) -> Option<OriginRequest> {
        let connected = self
            .channels
            .values()
            .any(|c| c.established && c.closing.is_none());
        let complete = self.is_complete();
        let paused = self.storing_paused || self.length_check.disproved().is_some();
        let (alg, chunk_size, content_len) = (
            self.content.hash,
            self.content.chunk_size,
            self.content.content_len,
        );
        let origin = self.origin.as_deref_mut()?;
        origin.polled_at = now;
        origin.connected = connected;
        // Connections that take longer than a few `alone_after`s to open may never open
        // (ICE failing behind a firewall): then the page is alone after all.
        origin.coming_since = origin
            .peers_coming
            .then(|| origin.coming_since.unwrap_or(now));
        let coming = origin
            .coming_since
            .is_some_and(|t| now.saturating_since(t) < origin.config.alone_after * COMING_FOR);
        origin.alone_since = if connected || coming {
            None
        } else {
            Some(origin.alone_since.unwrap_or(now))
        };
        if origin.disabled
            || complete
            || paused
            || origin.retry_at.is_some_and(|t| now < t)
            || origin.requests.len() >= origin.config.max_requests
        {
            return None;
        }
        origin.retry_at = None;
        if origin.header.is_none() {
            if origin.header_requested {
                // Content may go out before the header is in: it waits, parked, for its
                // hashes. Records cannot: their size is in the header.
            } else {
                origin.header_requested = true;
                let len = TreeFileHeader::first_read_len(alg, chunk_size, content_len)?;
                self.stats.origin_requests += 1;
                return Some(origin.issue(now, Wanted::Header, OriginFile::Tree, 0..len));
            }
        }
        // Records for parked chunks first (their request failed, say): they hold memory.
        let parked_groups = origin.header.as_ref().and_then(|h| {
            let first = *origin.parked.keys().find(|&&c| {
                let g = h.group_of(c);
                !is(&origin.records, g) && !is(&origin.records_requested, g)
            })?;
            Some(h.group_of(first)..h.group_of(first) + 1)
        });
        if let Some(groups) = parked_groups {
            return self.request_records(now, groups);
        }
        let alone = self.origin.as_deref().is_some_and(|o| {
            o.alone_since
                .is_some_and(|t| now.saturating_since(t) >= o.config.alone_after)
        });
        let run = self.origin_run(now, alone)?;
        let origin = self.origin.as_deref_mut()?;
        if let Some(h) = &origin.header {
            let groups = h.group_of(run.start)..h.group_of(run.end - 1) + 1;
            let missing = groups
                .clone()
                .find(|&g| !is(&origin.records, g) && !is(&origin.records_requested, g));
            if let Some(first) = missing {
                let end = (first..groups.end)
                    .find(|&g| is(&origin.records, g) || is(&origin.records_requested, g))
                    .unwrap_or(groups.end);
                return self.request_records(now, first..end);
            }
        }
        let origin = self.origin.as_deref_mut()?;
        for c in run.clone() {
            set(&mut origin.fetching, c);
            set(&mut self.exclude, c);
        }
        let cs = u64::from(chunk_size);
        let bytes = run.start * cs..(run.end * cs).min(content_len);
        self.stats.origin_requests += 1;
        Some(origin.issue(now, Wanted::Chunks(run), OriginFile::Content, bytes))
    }

    /// A request for the records of `groups` (known to the header, none loaded or asked).
    fn request_records(&mut self, now: Time, groups: Range<u64>) -> Option<OriginRequest> {
        let origin = self.origin.as_deref_mut()?;
        let h = origin.header.as_ref()?;
        let start = h.record_range(groups.start).ok()?.start;
        let end = h.record_range(groups.end - 1).ok()?.end;
        for g in groups.clone() {
            set(&mut origin.records_requested, g);
        }
        self.stats.origin_requests += 1;
        Some(origin.issue(now, Wanted::Records(groups), OriginFile::Tree, start..end))
    }

    /// The chunks to ask of the origin next: a run of consecutive chunks it may serve, or
    /// `None`.
    fn origin_run(&mut self, now: Time, alone: bool) -> Option<Range<u64>> {
        let origin = self.origin.as_deref()?;
        let cs = u64::from(self.content.chunk_size).max(1);
        let max_run = (origin.config.max_request_bytes / cs).max(1);
        let head = origin.config.head_bytes.div_ceil(cs).min(self.chunk_count);
        // No peer yet, but they may still come: nothing beyond what playback needs.
        let connecting = !alone && !origin.connected;
        let span = if alone {
            self.picker.urgent_chunks()
        } else {
            self.picker.due_chunks()
        };
        // Not beyond the origin's read-ahead from the playhead.
        let reach = origin
            .read_ahead
            .map_or(self.chunk_count, |r| self.held.playhead().saturating_add(r))
            .min(self.chunk_count);
        let span = span.map(|s| s.start.min(reach)..s.end.min(reach).max(s.start.min(reach)));
        // Where playback waits: the segment it waits for, and as many chunks as the due
        // span holds (one at least), within the urgent span's length.
        let waiting = origin.waiting_for.clone().map(|w| {
            let due = self
                .picker
                .due_chunks()
                .map_or(1, |s| (s.end - s.start).max(1));
            let most = self
                .picker
                .urgent_chunks()
                .map_or(due, |u| (u.end - u.start).max(due));
            let start = w.start.min(self.chunk_count);
            let len = w.end.saturating_sub(start).clamp(due, most);
            start..start.saturating_add(len).min(self.chunk_count)
        });
        let in_waiting = |c: u64| waiting.as_ref().is_some_and(|w| w.contains(&c));
        self.note_due(now, span.clone(), waiting.clone());
        // Which rule a chunk falls under, if any.
        let rule = |c: u64| {
            if c < head {
                Some(Take::Head)
            } else if in_waiting(c) {
                Some(Take::Waiting)
            } else {
                match &span {
                    Some(s) if s.contains(&c) => Some(Take::Due),
                    Some(_) => None,
                    None => (!connecting).then_some(Take::Unheld),
                }
            }
        };
        let may =
            |engine: &Self, c: u64| rule(c).is_some_and(|r| engine.origin_may_take(now, c, r));
        let mut first = (0..head).find(|&c| may(self, c));
        for s in [waiting.clone(), span.clone()].into_iter().flatten() {
            if first.is_none() {
                first = s.into_iter().find(|&c| may(self, c));
            }
        }
        if first.is_none() && span.is_none() && !connecting {
            first = self.origin_unheld_chunk();
        }
        let first = first?;
        let mut end = first + 1;
        while end < self.chunk_count && end - first < max_run && may(self, end) {
            end += 1;
        }
        Some(first..end)
    }

    /// Notes since when each missing chunk of `span` and `waiting` has been due.
    fn note_due(&mut self, now: Time, span: Option<Range<u64>>, waiting: Option<Range<u64>>) {
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        let (span, waiting) = (span.unwrap_or(0..0), waiting.unwrap_or(0..0));
        let have = &self.have;
        origin
            .due_since
            .retain(|c, _| (span.contains(c) || waiting.contains(c)) && !is(have, *c));
        for c in span.chain(waiting) {
            if !is(have, c) {
                origin.due_since.entry(c).or_insert(now);
            }
        }
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
            || origin.fetching.is_filled(bin)
            || origin.distrusted.is_filled(bin)
            || self.saved_pending(chunk)
        {
            return false;
        }
        let asked_at = self
            .channels
            .values()
            .filter_map(|c| c.requests.get(&chunk))
            .min();
        let overdue = |deadline: Duration| {
            origin
                .due_since
                .get(&chunk)
                .is_some_and(|&t| now.saturating_since(t) >= deadline)
        };
        let unheld = self.avail.rarity(chunk) == 0;
        match (rule, asked_at) {
            (Take::Head, asked) => asked.is_none(),
            (Take::Due, _) if overdue(origin.config.peer_deadline) => true,
            (Take::Waiting, _) if overdue(origin.config.waiting_deadline) => true,
            (_, Some(_)) => false,
            // A connected peer may be about to fetch it (alone, nobody is).
            (Take::Due, None) if origin.connected => {
                unheld && overdue(origin_turn(origin.turn_salt, chunk))
            }
            (Take::Due | Take::Waiting | Take::Unheld, None) => unheld,
        }
    }

    /// A chunk nobody holds or was asked for, for pickers without a playhead: the search
    /// goes round the content from where the last one ended, a bounded stretch per call.
    fn origin_unheld_chunk(&mut self) -> Option<u64> {
        let n = self.chunk_count;
        let from = self.origin.as_deref()?.scan_from % n.max(1);
        let mut looked = 0u64;
        let mut at = from;
        while looked < SCAN_LIMIT.min(n) {
            let bin = self
                .exclude
                .find_empty(at..n)
                .or_else(|| (at > 0).then(|| self.exclude.find_empty(0..at)).flatten())?;
            let c = bin.base_offset();
            if c >= n {
                return None;
            }
            let origin = self.origin.as_deref_mut()?;
            if !is(&origin.distrusted, c) && !is(&origin.fetching, c) && self.avail.rarity(c) == 0 {
                origin.scan_from = c + 1;
                return Some(c);
            }
            looked += 1;
            at = if c + 1 >= n { 0 } else { c + 1 };
            if at == from {
                return None;
            }
        }
        if let Some(o) = self.origin.as_deref_mut() {
            o.scan_from = at;
        }
        None
    }

    /// The body of request `id`, exactly the bytes of its range.
    pub fn handle_origin_response(&mut self, now: Time, id: u64, bytes: &[u8]) {
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        let Some(Issued { wanted, .. }) = origin.requests.remove(&id) else {
            return; // answered after a failure was reported, or after a restart
        };
        let expected = self.expected_len(&wanted);
        if bytes.len() as u64 != expected && !matches!(wanted, Wanted::Header) {
            self.origin_failed(
                now,
                wanted,
                OriginError::WrongLength {
                    expected,
                    got: bytes.len() as u64,
                },
            );
            return;
        }
        if let Some(o) = self.origin.as_deref_mut() {
            o.failures = 0;
        }
        match wanted {
            Wanted::Header => self.take_header(now, bytes),
            Wanted::Records(groups) => self.take_records(groups, bytes),
            Wanted::Chunks(run) => {
                self.stats.bytes_from_origin += bytes.len() as u64;
                let cs = self.content.chunk_size as usize;
                for (i, c) in run.enumerate() {
                    let start = i * cs;
                    let end = (start + cs).min(bytes.len());
                    if let Some(o) = self.origin.as_deref_mut() {
                        reset(&mut o.fetching, c);
                    }
                    self.take_origin_chunk(c, &bytes[start..end]);
                }
            }
        }
    }

    fn expected_len(&self, wanted: &Wanted) -> u64 {
        let h = self.origin.as_deref().and_then(|o| o.header.as_ref());
        match wanted {
            Wanted::Header => TreeFileHeader::first_read_len(
                self.content.hash,
                self.content.chunk_size,
                self.content.content_len,
            )
            .unwrap_or(0),
            Wanted::Records(g) => h.map_or(0, |h| (g.end - g.start) * h.record_len()),
            Wanted::Chunks(run) => {
                let cs = u64::from(self.content.chunk_size);
                (run.end * cs).min(self.content.content_len) - run.start * cs
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
            o.header = Some(header);
        }
        match first_record {
            Some(record) => self.take_records(0..1, &record),
            None => self.retry_parked(),
        }
    }

    /// The records of `groups` arrived: each is checked against the root; a bad one makes
    /// its chunks distrusted (the tree file is the origin's too).
    fn take_records(&mut self, groups: Range<u64>, bytes: &[u8]) {
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        let Some(h) = origin.header.clone() else {
            return;
        };
        let len = h.record_len() as usize;
        let mut bad = Vec::new();
        for (i, g) in groups.enumerate() {
            reset(&mut origin.records_requested, g);
            let Some(record) = bytes.get(i * len..(i + 1) * len) else {
                break;
            };
            let Integrity::Static(tree) = &mut self.integrity else {
                return;
            };
            match h.add_record(tree, g, record) {
                Ok(()) => set(&mut origin.records, g),
                Err(e) => {
                    for c in h.group_chunks(g) {
                        set(&mut origin.distrusted, c);
                    }
                    bad.push(e);
                }
            }
        }
        for e in bad {
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
        let Some(h) = origin.header.as_ref() else {
            return;
        };
        let ready: Vec<u64> = origin
            .parked
            .keys()
            .copied()
            .filter(|&c| is(&origin.records, h.group_of(c)) || is(&origin.distrusted, c))
            .collect();
        for c in ready {
            let Some(data) = self.origin.as_deref_mut().and_then(|o| o.parked.remove(&c)) else {
                continue;
            };
            self.take_origin_chunk(c, &data);
        }
    }

    /// One chunk from the origin: verified, then kept and announced; or parked until its
    /// hashes come; or, if it fails, reported and wanted from peers.
    fn take_origin_chunk(&mut self, chunk: u64, data: &[u8]) {
        let Some(bin) = Bin::chunk(chunk) else {
            return;
        };
        if self.have.is_filled(bin) {
            self.stats.bytes_duplicate += data.len() as u64;
            return;
        }
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        if origin.distrusted.is_filled(bin) {
            self.release_origin_chunk(chunk);
            return;
        }
        let hashes_known = origin
            .header
            .as_ref()
            .is_some_and(|h| is(&origin.records, h.group_of(chunk)));
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
                    set(&mut o.fetching, chunk);
                    o.parked.insert(chunk, data.to_vec());
                }
            }
            Err(reason) => {
                if let Some(o) = self.origin.as_deref_mut() {
                    set(&mut o.distrusted, chunk);
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
            reset(&mut o.fetching, chunk);
        }
        let asked = self
            .channels
            .values()
            .any(|c| c.requests.contains_key(&chunk));
        if !asked {
            self.release_request(chunk);
        }
    }

    /// The origin delivered `chunk`: peers asked for it too are told to cancel.
    pub(super) fn cancel_at_peers(&mut self, chunk: u64) {
        for ch in self.channels.values_mut() {
            if ch.requests.remove(&chunk).is_some()
                && let Some(b) = Bin::chunk(chunk)
            {
                ch.pending_cancels.push(b);
            }
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
        let mut late = Vec::new();
        for r in origin.requests.values_mut() {
            if let Wanted::Chunks(run) = &r.wanted
                && !r.shared
                && now.saturating_since(r.at) >= deadline
            {
                r.shared = true;
                late.push(run.clone());
            }
        }
        for c in late.into_iter().flatten() {
            self.release_request(c);
        }
    }

    /// Request `id` failed. A permanent failure (or too many in a row) ends the origin's
    /// use; otherwise requests wait, doubling the wait per failure in a row.
    pub fn handle_origin_failure(&mut self, now: Time, id: u64, error: OriginError) {
        let Some(wanted) = self
            .origin
            .as_deref_mut()
            .and_then(|o| o.requests.remove(&id))
        else {
            return;
        };
        self.origin_failed(now, wanted.wanted, error);
    }

    fn origin_failed(&mut self, now: Time, wanted: Wanted, error: OriginError) {
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        match &wanted {
            Wanted::Header => origin.header_requested = false,
            Wanted::Records(groups) => {
                for g in groups.clone() {
                    reset(&mut origin.records_requested, g);
                }
            }
            Wanted::Chunks(run) => {
                for c in run.clone() {
                    self.release_origin_chunk(c);
                }
            }
        }
        let Some(origin) = self.origin.as_deref_mut() else {
            return;
        };
        // Requests that failed together (a server down) count as one failure.
        if origin.retry_at.is_none_or(|t| t <= now) {
            origin.failures += 1;
        }
        let disabled = error.is_permanent() || origin.failures >= origin.config.max_failures;
        let retry_in = if disabled {
            None
        } else {
            let doublings = origin.failures.saturating_sub(1).min(16);
            let wait = origin
                .config
                .retry_base
                .saturating_mul(1 << doublings)
                .min(origin.config.retry_max);
            origin.retry_at = Some(now + wait);
            Some(wait)
        };
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
        origin.disabled = true;
        let mut chunks: Vec<u64> = origin.parked.keys().copied().collect();
        origin.parked.clear();
        for r in core::mem::take(&mut origin.requests).into_values() {
            if let Wanted::Chunks(run) = r.wanted {
                chunks.extend(run);
            }
        }
        for c in chunks {
            self.release_origin_chunk(c);
        }
    }
}
