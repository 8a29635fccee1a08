//! When the origin may serve a chunk: the rules by which a chunk is taken (the head, due
//! for playback, waited for, or held by nobody), since when each chunk has been due, and
//! each page's turn before it asks for a chunk a peer may fetch first.

use crate::time::Time;
use core::ops::Range;
use core::time::Duration;
use std::collections::BTreeMap;

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

/// How long a page salted `salt` waits before asking the origin for `chunk` when a peer
/// might fetch it first (see [`ORIGIN_TURNS`]).
fn origin_turn(salt: u64, chunk: u64) -> Duration {
    // splitmix64's finaliser: runs next to each other get unrelated turns.
    let mut z = salt ^ (chunk / ORIGIN_TURN_CHUNKS).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    ORIGIN_TURN_STEP * (z % ORIGIN_TURNS) as u32
}

/// Why the origin may serve a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Take {
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

/// What the swarm does about a chunk the engine lacks and the origin is not fetching.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Swarm {
    /// A peer was asked for it.
    pub asked: bool,
    /// No peer announced it.
    pub unheld: bool,
    /// A peer is connected (one may be about to fetch it).
    pub connected: bool,
}

#[derive(Debug)]
pub(super) struct DueChunks {
    peer_deadline: Duration,
    waiting_deadline: Duration,
    /// This page's own salt for [`origin_turn`]: drawn once, so pages differ.
    turn_salt: u64,
    /// Since when each missing chunk of the due span has been due: past the deadline the
    /// origin serves it whoever holds it.
    since: BTreeMap<u64, Time>,
}

impl DueChunks {
    pub(super) fn new(peer_deadline: Duration, waiting_deadline: Duration, turn_salt: u64) -> Self {
        DueChunks {
            peer_deadline,
            waiting_deadline,
            turn_salt,
            since: BTreeMap::new(),
        }
    }

    /// Notes since when each chunk of `span` and `waiting` that is not `held` has been
    /// due; other chunks are forgotten.
    pub(super) fn note(
        &mut self,
        now: Time,
        span: Range<u64>,
        waiting: Range<u64>,
        held: impl Fn(u64) -> bool,
    ) {
        self.since
            .retain(|c, _| (span.contains(c) || waiting.contains(c)) && !held(*c));
        for c in span.chain(waiting) {
            if !held(c) {
                self.since.entry(c).or_insert(now);
            }
        }
    }

    fn overdue(&self, now: Time, chunk: u64, deadline: Duration) -> bool {
        self.since
            .get(&chunk)
            .is_some_and(|&t| now.saturating_since(t) >= deadline)
    }

    /// Whether the origin may serve `chunk` at `now` under `rule`, given what the swarm
    /// does about it.
    pub(super) fn allows(&self, now: Time, chunk: u64, rule: Take, swarm: Swarm) -> bool {
        match (rule, swarm.asked) {
            (Take::Head, asked) => !asked,
            (Take::Due, _) if self.overdue(now, chunk, self.peer_deadline) => true,
            (Take::Waiting, _) if self.overdue(now, chunk, self.waiting_deadline) => true,
            (_, true) => false,
            // A connected peer may be about to fetch it (alone, nobody is).
            (Take::Due, false) if swarm.connected => {
                swarm.unheld && self.overdue(now, chunk, origin_turn(self.turn_salt, chunk))
            }
            (Take::Due | Take::Waiting | Take::Unheld, false) => swarm.unheld,
        }
    }

    /// The next moment after `after` when a due chunk's deadline (or, `connected`, its
    /// turn) comes.
    pub(super) fn next_deadline(&self, connected: bool, after: Time) -> Option<Time> {
        let deadline = self.peer_deadline.min(self.waiting_deadline);
        self.since
            .iter()
            .flat_map(|(&c, &t)| {
                // A connected page's turn for a due chunk nobody holds comes first.
                let turn = connected.then(|| t + origin_turn(self.turn_salt, c));
                [Some(t + deadline), turn]
            })
            .flatten()
            .filter(|&t| t > after)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    fn due() -> DueChunks {
        DueChunks::new(Duration::from_millis(1000), Duration::from_millis(400), 7)
    }

    const NOBODY: Swarm = Swarm {
        asked: false,
        unheld: true,
        connected: false,
    };

    #[test]
    fn turns_are_a_few_steps_apart_and_differ_between_pages_and_runs() {
        let turns: Vec<Duration> = (0..64).map(|salt| origin_turn(salt, 0)).collect();
        assert!(
            turns
                .iter()
                .all(|t| *t < ORIGIN_TURN_STEP * ORIGIN_TURNS as u32)
        );
        assert!(turns.iter().all(|t| t.as_millis() % 25 == 0));
        let distinct: std::collections::BTreeSet<_> = turns.iter().collect();
        assert_eq!(distinct.len(), ORIGIN_TURNS as usize);
        // One turn per run of chunks.
        assert_eq!(origin_turn(5, 0), origin_turn(5, ORIGIN_TURN_CHUNKS - 1));
        let runs: std::collections::BTreeSet<_> = (0..32)
            .map(|r| origin_turn(5, r * ORIGIN_TURN_CHUNKS))
            .collect();
        assert!(runs.len() > 4);
    }

    #[test]
    fn the_head_goes_to_the_origin_unless_a_peer_was_asked() {
        let d = due();
        let asked = Swarm {
            asked: true,
            ..NOBODY
        };
        let held = Swarm {
            unheld: false,
            ..NOBODY
        };
        assert!(d.allows(at(0), 0, Take::Head, NOBODY));
        assert!(d.allows(at(0), 0, Take::Head, held));
        assert!(!d.allows(at(0), 0, Take::Head, asked));
    }

    #[test]
    fn a_due_chunk_someone_holds_waits_for_the_peer_deadline() {
        let mut d = due();
        let asked = Swarm {
            asked: true,
            unheld: false,
            connected: true,
        };
        d.note(at(0), 10..20, 0..0, |_| false);
        assert!(!d.allows(at(999), 12, Take::Due, asked));
        assert!(d.allows(at(1000), 12, Take::Due, asked));
        // What playback waits for has the shorter deadline.
        d.note(at(2000), 0..0, 30..32, |_| false);
        assert!(!d.allows(at(2399), 30, Take::Waiting, asked));
        assert!(d.allows(at(2400), 30, Take::Waiting, asked));
    }

    #[test]
    fn alone_a_due_chunk_nobody_holds_goes_at_once_connected_after_the_page_s_turn() {
        let mut d = due();
        d.note(at(0), 0..64, 0..0, |_| false);
        assert!(d.allows(at(0), 40, Take::Due, NOBODY));
        let connected = Swarm {
            connected: true,
            ..NOBODY
        };
        let turn = origin_turn(7, 40);
        assert_eq!(
            d.allows(at(0), 40, Take::Due, connected),
            turn.is_zero(),
            "a turn of zero goes at once"
        );
        assert!(d.allows(at(0) + turn, 40, Take::Due, connected));
        // Held by a peer, never asked: it waits for the peer deadline.
        let held = Swarm {
            unheld: false,
            ..connected
        };
        assert!(!d.allows(at(999), 40, Take::Due, held));
        assert!(d.allows(at(1000), 40, Take::Due, held));
    }

    #[test]
    fn only_missing_chunks_in_the_spans_are_due_and_they_keep_their_time() {
        let mut d = due();
        d.note(at(0), 0..4, 0..0, |c| c == 1);
        assert!(!d.overdue(at(5000), 1, Duration::ZERO), "held: not due");
        d.note(at(500), 2..6, 0..0, |_| false);
        assert!(!d.overdue(at(5000), 0, Duration::ZERO), "left the span");
        assert!(d.overdue(at(1000), 2, Duration::from_millis(1000)));
        assert!(!d.overdue(at(1000), 5, Duration::from_millis(1000)));
    }

    #[test]
    fn the_next_deadline_is_the_earliest_after_the_last_poll() {
        let mut d = due();
        d.note(at(100), 0..1, 0..0, |_| false);
        d.note(at(300), 0..2, 0..0, |_| false);
        // The waiting deadline is the shorter: 400 ms after each became due.
        assert_eq!(d.next_deadline(false, at(100)), Some(at(500)));
        assert_eq!(d.next_deadline(false, at(500)), Some(at(700)));
        assert_eq!(d.next_deadline(false, at(700)), None);
        // Connected, the page's turn for the run comes first (chunks 0 and 1 share it).
        let turn = origin_turn(7, 0);
        let expected = match turn.is_zero() {
            true => at(300),
            false => at(100) + turn,
        };
        assert_eq!(d.next_deadline(true, at(100)), Some(expected));
    }
}
