//! The engine's side of an HTTP origin: what it asked for and has, what it may ask next,
//! and how it fares (failures, peers). The engine hands it what it knows of playback and
//! the swarm; the choices are made here.

use super::backoff::Backoff;
use super::config::HttpOriginConfig;
use super::due::{DueChunks, Take};
use super::presence::Presence;
use super::requests::{OriginFile, OriginRequest, Requests, Wanted};
use super::tree_parts::TreeParts;
use crate::binmap::Binmap;
use crate::content::ContentInfo;
use crate::merkle::VerifyingTree;
use crate::merkle::tree_file::{TreeFileError, TreeFileHeader};
use crate::time::Time;
use core::ops::Range;
use core::time::Duration;

/// Chunks looked at per search for chunks no peer holds, so a poll stays cheap.
const SCAN_LIMIT: u64 = 4096;

/// What playback needs, as the picker and the adapter tell it.
#[derive(Clone, Debug, Default)]
pub(super) struct Playback {
    /// No peer connected or coming for a while.
    pub alone: bool,
    /// The picker's due and urgent spans (`None`: a picker without a playhead).
    pub due: Option<Range<u64>>,
    pub urgent: Option<Range<u64>>,
    pub playhead: u64,
    pub chunk_count: u64,
    pub chunk_size: u32,
    /// Playback holds media enough to wait for peers still connecting
    /// ([`HttpOrigin::patient_until`]).
    pub patient: bool,
}

/// Which chunks the origin may serve now, and under which rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    /// The first chunks, served at once.
    pub head: u64,
    /// Where playback waits: the segment it waits for, and as many chunks as the due span
    /// holds (one at least), within the urgent span's length.
    pub waiting: Option<Range<u64>>,
    /// What playback needs next (alone: the urgent span), within the origin's read-ahead.
    pub span: Option<Range<u64>>,
    /// No peer yet, but they may still come: nothing beyond what playback needs.
    pub connecting: bool,
    /// Playback can wait: what it waits for is due, not waited for.
    pub patient: bool,
    /// Chunks per request at most.
    pub max_run: u64,
}

impl Plan {
    /// Nothing but the head goes: playback can wait for the peers still connecting.
    pub(super) fn holds(&self) -> bool {
        self.connecting && self.patient
    }

    /// The rule `chunk` falls under, if any.
    pub(super) fn rule(&self, chunk: u64) -> Option<Take> {
        if chunk < self.head {
            Some(Take::Head)
        } else if self.waiting.as_ref().is_some_and(|w| w.contains(&chunk)) {
            Some(if self.patient {
                Take::Due
            } else {
                Take::Waiting
            })
        } else {
            match &self.span {
                Some(s) if s.contains(&chunk) => Some(Take::Due),
                Some(_) => None,
                None => (!self.connecting).then_some(Take::Unheld),
            }
        }
    }
}

#[derive(Debug)]
pub(in crate::engine) struct HttpOrigin {
    pub(super) config: HttpOriginConfig,
    pub(super) presence: Presence,
    pub(super) backoff: Backoff,
    pub(super) tree: TreeParts,
    pub(super) requests: Requests,
    pub(super) due: DueChunks,
    /// Chunks the origin served corrupt: never asked of it again.
    distrusted: Binmap,
    /// Where the search for chunks no peer holds goes on (pickers without a playhead).
    scan_from: u64,
    /// The last poll: deadlines before it are no reason to wake.
    polled_at: Time,
    /// The chunks playback waits for, if it waits.
    pub(super) waiting_for: Option<Range<u64>>,
    /// Chunks asked of the origin at most ahead of the playhead.
    pub(super) read_ahead: Option<u64>,
    /// Until when what playback waits for may wait for peers
    /// ([`Engine::set_waiting_slack`](super::super::Engine::set_waiting_slack)): till then it
    /// waits for peers still connecting, and once one is connected it is due rather than
    /// waited for.
    pub(super) patient_until: Option<Time>,
    /// Time spent holding back for peers still connecting ([`Plan::holds`]), up to the
    /// last poll, and the poll of the hold going on.
    held: Duration,
    holding_since: Option<Time>,
}

impl HttpOrigin {
    /// `turn_salt` is this page's own, drawn once, so pages in step take turns.
    pub(super) fn new(config: HttpOriginConfig, now: Time, turn_salt: u64) -> HttpOrigin {
        HttpOrigin {
            presence: Presence::new(now, config.alone_after),
            backoff: Backoff::new(&config),
            tree: TreeParts::default(),
            requests: Requests::new(),
            due: DueChunks::new(config.peer_deadline, config.waiting_deadline, turn_salt),
            distrusted: Binmap::new(),
            scan_from: 0,
            polled_at: now,
            waiting_for: None,
            read_ahead: None,
            patient_until: None,
            held: Duration::ZERO,
            holding_since: None,
            config,
        }
    }

    /// Whether `plan`, made at `now`, holds back for peers: the time it does is counted.
    pub(super) fn note_hold(&mut self, now: Time, plan: &Plan) {
        if let Some(t) = self.holding_since.take() {
            self.held += now.saturating_since(t);
        }
        if plan.holds() {
            self.holding_since = Some(now);
        }
    }

    /// Milliseconds held back for peers still connecting, up to the last poll.
    pub(in crate::engine) fn held_ms(&self) -> u64 {
        u64::try_from(self.held.as_millis()).unwrap_or(u64::MAX)
    }

    /// A poll at `now`, with a peer `connected` or not: deadlines up to it are no reason
    /// to wake.
    pub(super) fn observe(&mut self, now: Time, connected: bool) {
        self.polled_at = now;
        self.presence.observe(now, connected);
    }

    /// The adapter polls next: deadlines up to `now` are no reason to wake.
    pub(super) fn polled(&mut self, now: Time) {
        self.polled_at = self.polled_at.max(now);
    }

    /// Whether a request may go out at `now`: no failure's wait, room in flight.
    pub(super) fn may_ask(&self, now: Time) -> bool {
        self.backoff.ready(now) && self.requests.len() < self.config.max_requests
    }

    pub(super) fn is_distrusted(&self, chunk: u64) -> bool {
        self.distrusted.has_chunk(chunk)
    }

    /// The origin served `chunk` corrupt: it is never asked for it again.
    pub(super) fn distrust(&mut self, chunk: u64) {
        self.distrusted.set_chunk(chunk);
    }

    /// The header's request, once (`first_read_len` of the content).
    pub(super) fn ask_header(&mut self, now: Time, content: &ContentInfo) -> Option<OriginRequest> {
        if !self.tree.ask_header() {
            return None;
        }
        let len =
            TreeFileHeader::first_read_len(content.hash, content.chunk_size, content.content_len)?;
        Some(
            self.requests
                .issue(now, Wanted::Header, OriginFile::Tree, 0..len),
        )
    }

    /// A request for the records of `groups`.
    pub(super) fn ask_records(&mut self, now: Time, groups: Range<u64>) -> Option<OriginRequest> {
        let bytes = self.tree.ask_records(groups.clone())?;
        Some(
            self.requests
                .issue(now, Wanted::Records(groups), OriginFile::Tree, bytes),
        )
    }

    /// A request for chunks `run` of `content`.
    pub(super) fn ask_chunks(
        &mut self,
        now: Time,
        run: Range<u64>,
        content: &ContentInfo,
    ) -> OriginRequest {
        let cs = u64::from(content.chunk_size);
        let bytes = run.start * cs..(run.end * cs).min(content.content_len);
        self.requests
            .issue(now, Wanted::Chunks(run), OriginFile::Content, bytes)
    }

    /// Which chunks may go to the origin for `playback`, and under which rule.
    pub(super) fn plan(&self, playback: &Playback) -> Plan {
        let n = playback.chunk_count;
        let cs = u64::from(playback.chunk_size).max(1);
        let max_run = (self.config.max_request_bytes / cs).max(1);
        let head = self.config.head_bytes.div_ceil(cs).min(n);
        let connecting = !playback.alone && !self.presence.connected();
        // Playback can wait for the peers still connecting: nothing but the head until one
        // is connected, the page is alone, or the wait is over.
        if connecting && playback.patient {
            return Plan {
                head,
                waiting: None,
                span: None,
                connecting,
                patient: true,
                max_run,
            };
        }
        let span = match playback.alone {
            true => playback.urgent.clone(),
            false => playback.due.clone(),
        };
        // Not beyond the origin's read-ahead from the playhead.
        let reach = self
            .read_ahead
            .map_or(n, |r| playback.playhead.saturating_add(r))
            .min(n);
        let span = span.map(|s| s.start.min(reach)..s.end.min(reach).max(s.start.min(reach)));
        let waiting = self.waiting_for.clone().map(|w| {
            let due = playback
                .due
                .as_ref()
                .map_or(1, |s| (s.end - s.start).max(1));
            let most = playback
                .urgent
                .as_ref()
                .map_or(due, |u| (u.end - u.start).max(due));
            let start = w.start.min(n);
            let len = w.end.saturating_sub(start).clamp(due, most);
            start..start.saturating_add(len).min(n)
        });
        Plan {
            head,
            waiting,
            span,
            connecting,
            patient: playback.patient,
            max_run,
        }
    }

    /// A chunk nobody holds or was asked for, for pickers without a playhead: the search
    /// goes round the content (chunks not in `exclude`) from where the last one ended, a
    /// bounded stretch per call.
    pub(super) fn next_unheld(
        &mut self,
        exclude: &Binmap,
        chunk_count: u64,
        unheld: impl Fn(u64) -> bool,
    ) -> Option<u64> {
        let n = chunk_count;
        let from = self.scan_from % n.max(1);
        let mut looked = 0u64;
        let mut at = from;
        while looked < SCAN_LIMIT.min(n) {
            let bin = exclude
                .find_empty(at..n)
                .or_else(|| (at > 0).then(|| exclude.find_empty(0..at)).flatten())?;
            let c = bin.base_offset();
            if c >= n {
                return None;
            }
            if !self.is_distrusted(c) && !self.requests.is_fetching(c) && unheld(c) {
                self.scan_from = c + 1;
                return Some(c);
            }
            looked += 1;
            at = if c + 1 >= n { 0 } else { c + 1 };
            if at == from {
                return None;
            }
        }
        self.scan_from = at;
        None
    }

    /// The body a request for `wanted` must have (the header's read may be shorter).
    pub(super) fn expected_len(&self, wanted: &Wanted, content: &ContentInfo) -> u64 {
        match wanted {
            Wanted::Header => TreeFileHeader::first_read_len(
                content.hash,
                content.chunk_size,
                content.content_len,
            )
            .unwrap_or(0),
            Wanted::Records(g) => self
                .tree
                .header()
                .map_or(0, |h| (g.end - g.start) * h.record_len()),
            Wanted::Chunks(run) => {
                let cs = u64::from(content.chunk_size);
                (run.end * cs).min(content.content_len) - run.start * cs
            }
        }
    }

    /// The records of `groups` arrived: checked into `tree`; the chunks of a bad one are
    /// distrusted (the tree file is the origin's too). Why each bad one failed.
    pub(super) fn add_records(
        &mut self,
        tree: &mut VerifyingTree,
        groups: Range<u64>,
        bytes: &[u8],
    ) -> Vec<TreeFileError> {
        let bad = self.tree.add_records(tree, groups, bytes);
        bad.into_iter()
            .map(|(chunks, e)| {
                chunks.for_each(|c| self.distrust(c));
                e
            })
            .collect()
    }

    /// Parked chunks whose hashes are in now, or that are distrusted (to be released).
    pub(super) fn unpark_ready(&mut self) -> Vec<(u64, Vec<u8>)> {
        let distrusted = &self.distrusted;
        self.tree.unpark_ready(|c| distrusted.has_chunk(c))
    }

    /// A request for `wanted` failed: it is to be asked for again. The chunks it asked
    /// for, to be released.
    pub(super) fn forget(&mut self, wanted: &Wanted) -> Vec<u64> {
        match wanted {
            Wanted::Header => self.tree.header_failed(),
            Wanted::Records(groups) => self.tree.records_failed(groups.clone()),
            Wanted::Chunks(run) => return run.clone().collect(),
        }
        Vec::new()
    }

    /// The origin is no longer used: the chunks it held or was asked for, to be wanted
    /// from peers.
    pub(super) fn give_up(&mut self) -> Vec<u64> {
        self.backoff.disable();
        let mut chunks = self.tree.drop_parked();
        chunks.extend(self.requests.drain_chunks());
        chunks
    }

    /// When the origin wants a poll again without anything else happening: a retry's time,
    /// the moment the page counts as alone, a due chunk's deadline or turn, a request's
    /// chunks to share with peers, or the end of playback's patience with no peer yet.
    pub(in crate::engine) fn wake_at(&self) -> Option<Time> {
        if self.backoff.is_disabled() {
            return None;
        }
        // Deadlines already passed at the last poll are no reason to wake (with no wait
        // for peers, being alone is one of them).
        let overdue = self
            .due
            .next_deadline(self.presence.connected(), self.polled_at);
        let share = self.requests.next_share_at(self.config.origin_deadline);
        let patience = self.patient_until.filter(|_| !self.presence.connected());
        [
            self.backoff.retry_at(),
            self.presence.alone_at(),
            overdue,
            share,
            patience,
        ]
        .into_iter()
        .flatten()
        .filter(|&t| t > self.polled_at)
        .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{Hash, HashAlgorithm};

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    /// 1 KiB chunks; the head is 4 chunks, requests at most 8.
    fn origin() -> HttpOrigin {
        let config = HttpOriginConfig {
            head_bytes: 4 << 10,
            max_request_bytes: 8 << 10,
            max_requests: 2,
            ..HttpOriginConfig::default()
        };
        HttpOrigin::new(config, at(0), 1)
    }

    fn playback(alone: bool) -> Playback {
        Playback {
            alone,
            due: Some(100..110),
            urgent: Some(100..160),
            playhead: 100,
            chunk_count: 1000,
            chunk_size: 1024,
            patient: false,
        }
    }

    fn content() -> ContentInfo {
        ContentInfo {
            root: Hash::from_slice(&[0; 32]).unwrap(),
            hash: HashAlgorithm::Sha256,
            chunk_size: 1024,
            content_len: 1000 * 1024 - 100,
        }
    }

    #[test]
    fn connected_the_origin_serves_the_due_span_and_alone_the_urgent_one() {
        let mut o = origin();
        o.observe(at(0), true);
        let plan = o.plan(&playback(false));
        assert_eq!((plan.head, plan.max_run), (4, 8));
        assert_eq!(plan.span, Some(100..110));
        assert_eq!(plan.rule(2), Some(Take::Head));
        assert_eq!(plan.rule(105), Some(Take::Due));
        assert_eq!(plan.rule(120), None);
        assert_eq!(o.plan(&playback(true)).span, Some(100..160));
    }

    #[test]
    fn before_any_peer_a_page_without_a_playhead_takes_only_the_head() {
        let o = origin();
        let whole_file = Playback {
            due: None,
            urgent: None,
            ..playback(false)
        };
        let plan = o.plan(&whole_file);
        assert!(plan.connecting);
        assert_eq!(plan.rule(500), None);
        let alone = o.plan(&Playback {
            alone: true,
            ..whole_file
        });
        assert_eq!(alone.rule(500), Some(Take::Unheld));
    }

    #[test]
    fn patient_playback_waits_for_connecting_peers_then_takes_what_it_waits_for_as_due() {
        let mut o = origin();
        o.waiting_for = Some(130..132);
        let patient = Playback {
            patient: true,
            ..playback(false)
        };
        let plan = o.plan(&patient);
        assert!(plan.holds());
        assert_eq!((plan.span.clone(), plan.waiting.clone()), (None, None));
        assert_eq!(plan.rule(2), Some(Take::Head));
        assert_eq!(plan.rule(105), None);
        assert_eq!(plan.rule(130), None);
        // Alone, nobody is coming: as impatient playback.
        let alone = o.plan(&Playback {
            alone: true,
            ..patient.clone()
        });
        assert_eq!(alone.rule(130), Some(Take::Due));
        assert_eq!(alone.rule(150), Some(Take::Due));
        o.note_hold(at(0), &plan);
        o.note_hold(at(500), &plan);
        o.observe(at(0), true);
        let plan = o.plan(&patient);
        assert!(!plan.holds());
        o.note_hold(at(800), &plan);
        o.note_hold(at(900), &plan);
        assert_eq!(
            o.held_ms(),
            800,
            "held from the first poll to the one after it ended"
        );
        assert_eq!(plan.span, Some(100..110));
        assert_eq!(
            plan.rule(130),
            Some(Take::Due),
            "connected: due, not waited for"
        );
        assert_eq!(o.plan(&playback(false)).rule(130), Some(Take::Waiting));
    }

    #[test]
    fn the_read_ahead_bounds_the_span_and_waiting_takes_at_least_the_due_span() {
        let mut o = origin();
        o.read_ahead = Some(20);
        assert_eq!(o.plan(&playback(true)).span, Some(100..120));
        o.read_ahead = Some(0);
        assert_eq!(o.plan(&playback(true)).span, Some(100..100));
        // A short segment: as many chunks as the due span holds.
        o.waiting_for = Some(130..132);
        assert_eq!(o.plan(&playback(false)).waiting, Some(130..140));
        // A long one: no more than the urgent span's length.
        o.waiting_for = Some(130..400);
        let plan = o.plan(&playback(false));
        assert_eq!(plan.waiting, Some(130..190));
        assert_eq!(plan.rule(185), Some(Take::Waiting));
    }

    #[test]
    fn the_search_for_unheld_chunks_goes_round_and_skips_what_it_cannot_take() {
        let mut o = origin();
        let mut exclude = Binmap::new();
        exclude.set_chunk(0);
        o.distrust(1);
        o.ask_chunks(at(0), 2..3, &content());
        let held_by_peers = |c: u64| c == 3;
        assert_eq!(o.next_unheld(&exclude, 8, |c| !held_by_peers(c)), Some(4));
        assert_eq!(o.next_unheld(&exclude, 8, |c| !held_by_peers(c)), Some(5));
        assert_eq!(
            o.next_unheld(&exclude, 8, |c| c == 4),
            Some(4),
            "round again"
        );
        assert_eq!(o.next_unheld(&exclude, 8, |_| false), None);
    }

    #[test]
    fn requests_stop_at_the_limit_in_flight_and_after_a_failure() {
        let mut o = origin();
        let c = content();
        let header = o.ask_header(at(0), &c).unwrap();
        assert_eq!(header.file, OriginFile::Tree);
        assert_eq!(o.ask_header(at(0), &c), None, "asked once");
        let chunks = o.ask_chunks(at(0), 998..1000, &c);
        assert_eq!(
            chunks.range,
            998 * 1024..c.content_len,
            "the last chunk is short"
        );
        assert_eq!(o.expected_len(&Wanted::Chunks(998..1000), &c), 2048 - 100);
        assert!(!o.may_ask(at(0)));
        let wanted = o.requests.answered(chunks.id).unwrap();
        assert_eq!(o.forget(&wanted), [998, 999]);
        assert_eq!(
            o.backoff.failed(at(10), false),
            Some(Duration::from_millis(500))
        );
        assert!(!o.may_ask(at(509)));
        assert!(o.may_ask(at(510)));
    }

    #[test]
    fn it_wakes_for_the_earliest_of_its_deadlines_and_never_once_given_up() {
        let mut o = origin();
        o.observe(at(0), false);
        assert_eq!(o.wake_at(), Some(at(3_000)), "alone after three seconds");
        o.patient_until = Some(at(2_000));
        assert_eq!(o.wake_at(), Some(at(2_000)), "playback's patience ends");
        o.patient_until = None;
        let c = content();
        o.ask_chunks(at(100), 10..12, &c);
        o.observe(at(100), true);
        assert_eq!(
            o.wake_at(),
            Some(at(1_100)),
            "its chunks are shared with peers"
        );
        o.backoff.failed(at(200), false);
        assert_eq!(o.wake_at(), Some(at(700)), "the retry");
        assert_eq!(o.give_up(), [10, 11]);
        assert_eq!(o.wake_at(), None);
    }
}
