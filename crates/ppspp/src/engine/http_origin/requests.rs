//! The origin's requests in flight: what each is for, since when, and the chunks being
//! fetched.

use crate::binmap::Binmap;
use crate::time::Time;
use core::ops::Range;
use core::time::Duration;
use std::collections::BTreeMap;

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
    ///
    /// [`Engine::handle_origin_response`]: super::super::Engine::handle_origin_response
    /// [`Engine::handle_origin_failure`]: super::super::Engine::handle_origin_failure
    pub id: u64,
    /// The file to read.
    pub file: OriginFile,
    /// The bytes to read, end exclusive (`Range: bytes=start-(end-1)`); never empty.
    pub range: Range<u64>,
}

/// What a request in flight was for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Wanted {
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

#[derive(Debug)]
pub(super) struct Requests {
    issued: BTreeMap<u64, Issued>,
    next_id: u64,
    /// Chunks asked of the origin and not answered yet (or answered before their hashes).
    fetching: Binmap,
}

impl Requests {
    pub(super) fn new() -> Requests {
        Requests {
            issued: BTreeMap::new(),
            next_id: 1,
            fetching: Binmap::new(),
        }
    }

    /// Requests in flight.
    pub(super) fn len(&self) -> usize {
        self.issued.len()
    }

    /// A new request for `wanted`, reading `range` of `file`; chunks asked for are being
    /// fetched from now.
    pub(super) fn issue(
        &mut self,
        now: Time,
        wanted: Wanted,
        file: OriginFile,
        range: Range<u64>,
    ) -> OriginRequest {
        if let Wanted::Chunks(run) = &wanted {
            for c in run.clone() {
                self.fetch(c);
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        let at = now;
        let shared = false;
        self.issued.insert(id, Issued { wanted, at, shared });
        OriginRequest { id, file, range }
    }

    /// Request `id` was answered (or failed): what it was for, if it was in flight.
    pub(super) fn answered(&mut self, id: u64) -> Option<Wanted> {
        self.issued.remove(&id).map(|r| r.wanted)
    }

    pub(super) fn is_fetching(&self, chunk: u64) -> bool {
        self.fetching.has_chunk(chunk)
    }

    /// `chunk` is on its way from the origin (or waits there for its hashes).
    pub(super) fn fetch(&mut self, chunk: u64) {
        self.fetching.set_chunk(chunk);
    }

    /// `chunk` is no longer on its way from the origin.
    pub(super) fn fetched(&mut self, chunk: u64) {
        self.fetching.reset_chunk(chunk);
    }

    /// When the oldest chunk request not yet shared with peers is `deadline` old.
    pub(super) fn next_share_at(&self, deadline: Duration) -> Option<Time> {
        self.issued
            .values()
            .filter(|r| !r.shared && matches!(r.wanted, Wanted::Chunks(_)))
            .map(|r| r.at + deadline)
            .min()
    }

    /// The chunks of requests `deadline` old at `now` and not shared yet: from now on
    /// they are shared with peers (each request once).
    pub(super) fn share_late(&mut self, now: Time, deadline: Duration) -> Vec<u64> {
        let mut late = Vec::new();
        for r in self.issued.values_mut() {
            if let Wanted::Chunks(run) = &r.wanted
                && !r.shared
                && now.saturating_since(r.at) >= deadline
            {
                r.shared = true;
                late.extend(run.clone());
            }
        }
        late
    }

    /// Forgets every request: the chunks they asked for.
    pub(super) fn drain_chunks(&mut self) -> Vec<u64> {
        let mut chunks = Vec::new();
        for r in core::mem::take(&mut self.issued).into_values() {
            if let Wanted::Chunks(run) = r.wanted {
                chunks.extend(run);
            }
        }
        chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    const DEADLINE: Duration = Duration::from_secs(1);

    #[test]
    fn each_request_has_its_own_id_and_is_answered_once() {
        let mut r = Requests::new();
        let a = r.issue(at(0), Wanted::Header, OriginFile::Tree, 0..100);
        let b = r.issue(at(0), Wanted::Records(1..3), OriginFile::Tree, 100..300);
        assert_ne!(a.id, b.id);
        assert_eq!(r.len(), 2);
        assert_eq!(r.answered(b.id), Some(Wanted::Records(1..3)));
        assert_eq!(r.answered(b.id), None);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn chunks_asked_for_are_being_fetched_until_each_is_done() {
        let mut r = Requests::new();
        let req = r.issue(at(0), Wanted::Chunks(4..7), OriginFile::Content, 4096..7168);
        assert_eq!((req.file, req.range), (OriginFile::Content, 4096..7168));
        assert!((4..7).all(|c| r.is_fetching(c)));
        assert!(!r.is_fetching(3) && !r.is_fetching(7));
        r.fetched(5);
        assert!(r.is_fetching(4) && !r.is_fetching(5) && r.is_fetching(6));
    }

    #[test]
    fn a_chunk_request_is_shared_with_peers_once_after_the_deadline() {
        let mut r = Requests::new();
        r.issue(at(0), Wanted::Header, OriginFile::Tree, 0..100);
        r.issue(at(100), Wanted::Chunks(0..2), OriginFile::Content, 0..2048);
        r.issue(
            at(300),
            Wanted::Chunks(8..9),
            OriginFile::Content,
            8192..9216,
        );
        // Tree requests are never shared: they are not chunks.
        assert_eq!(r.next_share_at(DEADLINE), Some(at(1_100)));
        assert!(r.share_late(at(1_099), DEADLINE).is_empty());
        assert_eq!(r.share_late(at(1_100), DEADLINE), [0, 1]);
        assert_eq!(r.next_share_at(DEADLINE), Some(at(1_300)));
        assert_eq!(r.share_late(at(5_000), DEADLINE), [8]);
        assert!(r.share_late(at(9_000), DEADLINE).is_empty());
        assert_eq!(r.next_share_at(DEADLINE), None);
    }

    #[test]
    fn draining_gives_back_every_chunk_asked_for() {
        let mut r = Requests::new();
        r.issue(at(0), Wanted::Chunks(0..2), OriginFile::Content, 0..2048);
        r.issue(at(0), Wanted::Records(0..1), OriginFile::Tree, 100..200);
        r.issue(at(0), Wanted::Chunks(5..6), OriginFile::Content, 5120..6144);
        assert_eq!(r.drain_chunks(), [0, 1, 5]);
        assert_eq!(r.len(), 0);
    }
}
