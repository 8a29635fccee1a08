//! Which chunks an engine wants and which it lets go of first, from the playhead, the
//! memory bound and the read-ahead: the arithmetic of the memory bound
//! (`memory_bound.rs` applies it to the exclude map, store and channels).

use crate::binmap::Binmap;
use core::ops::Range;

/// The playhead and the bounds that make a window of it.
#[derive(Debug)]
pub(super) struct HeldWindow {
    /// The chunk playback is at (see `Engine::set_playhead`).
    playhead: u64,
    /// Chunks fetched at most ahead of the playhead (`Engine::set_read_ahead`).
    read_ahead: Option<u64>,
    /// Bytes held at most (`EngineConfig::max_held_bytes`).
    max_held_bytes: Option<u64>,
    /// Bytes per chunk, at least 1.
    chunk_size: u64,
    chunk_count: u64,
}

/// What moving the wanted window changed: at most two ranges each side.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct WindowMove {
    /// Chunks that left the window: not picked any more.
    pub left: [Range<u64>; 2],
    /// Chunks that entered it: picked unless held or asked for already.
    pub entered: [Range<u64>; 2],
}

impl WindowMove {
    /// From the window `old` to `new`.
    pub(super) fn between(old: &Range<u64>, new: &Range<u64>) -> WindowMove {
        WindowMove {
            left: minus(old, new),
            entered: minus(new, old),
        }
    }
}

/// Chunks of `a` not in `b`: at most two ranges.
fn minus(a: &Range<u64>, b: &Range<u64>) -> [Range<u64>; 2] {
    let left = a.start..a.end.min(b.start).max(a.start);
    let right = a.start.max(b.end).min(a.end)..a.end;
    [left, right]
}

impl HeldWindow {
    /// For `chunk_count` chunks of `chunk_size` bytes, holding at most `max_held_bytes`
    /// (`None`: no bound), the playhead at 0 and no read-ahead.
    pub(super) fn new(chunk_count: u64, chunk_size: u32, max_held_bytes: Option<u64>) -> Self {
        HeldWindow {
            playhead: 0,
            read_ahead: None,
            max_held_bytes,
            chunk_size: u64::from(chunk_size).max(1),
            chunk_count,
        }
    }

    pub(super) fn playhead(&self) -> u64 {
        self.playhead
    }

    /// Moves the playhead to `chunk`, or the last chunk if past it: where it is now.
    pub(super) fn set_playhead(&mut self, chunk: u64) -> u64 {
        self.playhead = chunk.min(self.chunk_count.saturating_sub(1));
        self.playhead
    }

    /// Fetches at most `chunks` (at least 1) from the playhead; `None`: no such bound.
    pub(super) fn set_read_ahead(&mut self, chunks: Option<u64>) {
        self.read_ahead = chunks.map(|c| c.max(1));
    }

    /// The chunks wanted now: the window from the playhead (the shorter of the memory
    /// bound's, three quarters of it so the rest keeps chunks played, and the
    /// read-ahead's), or every chunk without either.
    pub(super) fn wanted(&self) -> Range<u64> {
        let held = self
            .max_held_bytes
            .map(|b| (b / 4 * 3 / self.chunk_size).max(1));
        let len = match (held, self.read_ahead) {
            (None, None) => return 0..self.chunk_count,
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
        };
        let start = self.playhead.min(self.chunk_count);
        start..start.saturating_add(len).min(self.chunk_count)
    }

    /// A live stream's wanted chunks: its discard window from `floor` is its bound, and
    /// the read-ahead once `aimed` (the caller set the playhead).
    pub(super) fn wanted_live(&self, floor: u64, aimed: bool) -> Range<u64> {
        let end = match (aimed, self.read_ahead) {
            (true, Some(ahead)) => self.playhead.saturating_add(ahead).min(self.chunk_count),
            _ => self.chunk_count,
        };
        floor..end.max(floor)
    }

    /// Whether `held` chunks take the engine past its bound.
    pub(super) fn over_bound(&self, held: u64) -> bool {
        self.max_held_bytes
            .is_some_and(|bound| held.saturating_mul(self.chunk_size) > bound)
    }

    /// The held chunk (of `have`) to let go of first, outside the `wanted` window: behind
    /// it, the oldest first; else the farthest ahead (after a seek back). `None`: all
    /// held chunks are wanted.
    pub(super) fn to_let_go(&self, have: &Binmap, wanted: &Range<u64>) -> Option<u64> {
        let behind = have.find_filled(0..wanted.start).map(|b| b.base_offset());
        let ahead = || {
            have.filled_ranges()
                .last()
                .map(|r| r.end.min(self.chunk_count) - 1)
                .filter(|&c| c >= wanted.end)
        };
        behind.or_else(ahead)
    }
}

#[cfg(test)]
mod tests {
    use super::{HeldWindow, WindowMove, minus};
    use crate::Bin;
    use crate::binmap::Binmap;

    fn held(chunks: &[u64]) -> Binmap {
        let mut have = Binmap::new();
        for &c in chunks {
            have.set(Bin::chunk(c).unwrap());
        }
        have
    }

    #[test]
    fn the_window_is_three_quarters_of_the_bound_from_the_playhead() {
        // 100 chunks of 1 KiB, 16 KiB held at most: 12 chunks wanted.
        let mut w = HeldWindow::new(100, 1024, Some(16 * 1024));
        assert_eq!(w.wanted(), 0..12);
        assert_eq!(w.set_playhead(40), 40);
        assert_eq!(w.wanted(), 40..52);
        assert_eq!(w.set_playhead(95), 95);
        assert_eq!(w.wanted(), 95..100, "cut at the end");
        assert_eq!(w.set_playhead(500), 99, "the playhead stays on a chunk");
        // A bound below one chunk still wants one.
        let w = HeldWindow::new(100, 1024, Some(100));
        assert_eq!(w.wanted(), 0..1);
    }

    #[test]
    fn the_read_ahead_and_the_bound_give_the_shorter_window() {
        let mut w = HeldWindow::new(100, 1024, None);
        assert_eq!(w.wanted(), 0..100, "no bound: everything");
        w.set_read_ahead(Some(5));
        w.set_playhead(10);
        assert_eq!(w.wanted(), 10..15);
        w.set_read_ahead(Some(0));
        assert_eq!(w.wanted(), 10..11, "at least one chunk");
        let mut w = HeldWindow::new(100, 1024, Some(16 * 1024));
        w.set_read_ahead(Some(30));
        assert_eq!(w.wanted(), 0..12, "the bound is shorter");
        w.set_read_ahead(Some(4));
        assert_eq!(w.wanted(), 0..4, "the read-ahead is shorter");
        w.set_read_ahead(None);
        assert_eq!(w.wanted(), 0..12);
    }

    #[test]
    fn a_live_window_runs_from_the_floor_and_takes_the_read_ahead_once_aimed() {
        let mut w = HeldWindow::new(1 << 40, 1024, None);
        assert_eq!(w.wanted_live(30, false), 30..1 << 40);
        w.set_read_ahead(Some(8));
        w.set_playhead(50);
        assert_eq!(w.wanted_live(30, false), 30..1 << 40, "not aimed");
        assert_eq!(w.wanted_live(30, true), 30..58);
        assert_eq!(w.wanted_live(70, true), 70..70, "the floor passed it");
    }

    #[test]
    fn moving_the_window_says_what_left_and_what_entered() {
        let m = WindowMove::between(&(10..20), &(15..25));
        assert_eq!(m.left, [10..15, 20..20]);
        assert_eq!(m.entered, [15..15, 20..25]);
        // A seek back past it: all of the old left, all of the new entered.
        let m = WindowMove::between(&(50..60), &(0..10));
        assert_eq!(m.left, [50..50, 50..60]);
        assert_eq!(m.entered, [0..10, 10..10]);
        // Shrunk on both sides.
        let m = WindowMove::between(&(0..30), &(10..20));
        assert_eq!(m.left, [0..10, 20..30]);
        assert!(m.entered.iter().all(|r| r.is_empty()));
    }

    #[test]
    fn the_bound_counts_held_chunks_in_bytes() {
        let w = HeldWindow::new(100, 1024, Some(16 * 1024));
        assert!(!w.over_bound(16));
        assert!(w.over_bound(17));
        assert!(!HeldWindow::new(100, 1024, None).over_bound(u64::MAX));
    }

    #[test]
    fn chunks_behind_go_first_the_oldest_then_the_farthest_ahead() {
        let w = HeldWindow::new(100, 1024, Some(16 * 1024));
        let wanted = 40..52;
        assert_eq!(w.to_let_go(&held(&[3, 7, 41, 90]), &wanted), Some(3));
        assert_eq!(w.to_let_go(&held(&[41, 60, 90]), &wanted), Some(90));
        assert_eq!(w.to_let_go(&held(&[41, 60, 61]), &wanted), Some(61));
        assert_eq!(
            w.to_let_go(&held(&[40, 45, 51]), &wanted),
            None,
            "all wanted"
        );
        assert_eq!(w.to_let_go(&held(&[]), &wanted), None);
    }

    /// The chunks `minus` gives, against a plain set difference, for every pair of small
    /// ranges.
    #[test]
    fn range_difference() {
        for (a0, a1, b0, b1) in (0..8u64).flat_map(|a0| {
            (a0..8).flat_map(move |a1| {
                (0..8).flat_map(move |b0| (b0..8).map(move |b1| (a0, a1, b0, b1)))
            })
        }) {
            let got: Vec<u64> = minus(&(a0..a1), &(b0..b1)).into_iter().flatten().collect();
            let want: Vec<u64> = (a0..a1).filter(|c| !(b0..b1).contains(c)).collect();
            assert_eq!(got, want, "{a0}..{a1} minus {b0}..{b1}");
        }
    }
}
