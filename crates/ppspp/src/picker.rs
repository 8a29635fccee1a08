//! Piece pickers: which chunks to request next from one peer (libswift report §4.3). Every
//! picker answers the same question — "a bin of at most `max_chunks` chunks that this peer
//! offers and we neither have nor have requested" — with a different order.

use crate::Bin;
use crate::avail::Availability;
use crate::binmap::Binmap;
use core::fmt;

/// What a picker may look at.
#[derive(Debug)]
pub struct PickContext<'a> {
    /// Chunks we hold or have requested, plus everything past the end of the content.
    pub exclude: &'a Binmap,
    /// How many connected peers hold each chunk.
    pub avail: &'a Availability,
    /// The content's covering bin (the Merkle root's position).
    pub range: Bin,
    /// Number of chunks in the content.
    pub chunk_count: u64,
    /// Random bits, the same for every pick of one engine, so engines do not all ask for
    /// the same chunks (see [`Bin::twisted`]).
    pub twist: u64,
}

/// A strategy for choosing chunks.
pub trait Picker: fmt::Debug {
    /// A bin of at most `max_chunks` chunks (`max_chunks >= 1`) that `offer` holds entirely
    /// and `ctx.exclude` lacks entirely, or `None` if this peer has nothing we want.
    fn pick(&mut self, ctx: &PickContext<'_>, offer: &Binmap, max_chunks: u64) -> Option<Bin>;

    /// True for chunks needed so soon that their channel may raise its priority.
    fn is_urgent(&self, _bin: Bin) -> bool {
        false
    }

    /// True for chunks playback needs next, which an origin peer may be asked for even when
    /// other peers hold them (see `Engine::set_origin`). A narrower set than `is_urgent`.
    fn is_due(&self, _bin: Bin) -> bool {
        false
    }

    /// Playback moved to `chunk` (a seek, or normal progress). Only positional pickers care.
    fn set_playhead(&mut self, _chunk: u64) {}

    /// Playback waits (no first frame yet, or a stall coming): while it does, a positional
    /// picker asks only for what lies just ahead of the playhead, so the viewer's link
    /// and CPU go to what is waited for rather than to the read-ahead beyond.
    fn set_waiting(&mut self, _waiting: bool) {}

    /// Whether playback waits, as [`set_waiting`](Self::set_waiting) last said (pickers that
    /// ignore it: never).
    fn is_waiting(&self) -> bool {
        false
    }

    /// Forget where playback is until [`set_playhead`](Self::set_playhead) says: each pick
    /// meanwhile starts from what its peer offers, and none moves the others'. For a live
    /// stream whose edge is not proven yet (Sign All), where one peer's claim must not
    /// send every channel after chunks that do not exist.
    fn unanchor(&mut self) {}

    /// The chunks [`is_due`](Self::is_due) covers, as one range, where that is a bounded
    /// span ahead of a playhead (`None`: no such span).
    fn due_chunks(&self) -> Option<core::ops::Range<u64>> {
        None
    }

    /// The chunks [`is_urgent`](Self::is_urgent) covers, likewise.
    fn urgent_chunks(&self) -> Option<core::ops::Range<u64>> {
        None
    }
}

/// The leftmost sub-bin of `bin` no wider than `max_chunks`.
pub fn narrow(mut bin: Bin, max_chunks: u64) -> Bin {
    let max_chunks = max_chunks.max(1);
    while bin.base_length() > max_chunks {
        bin = bin.left();
    }
    bin
}

/// The first wanted bin inside chunks `first..=last`, scanning left to right.
fn first_wanted_in(
    ctx: &PickContext<'_>,
    offer: &Binmap,
    first: u64,
    last: u64,
    max_chunks: u64,
) -> Option<Bin> {
    Bin::from_chunk_range(first, last)
        .find_map(|r| Binmap::find_complement(ctx.exclude, offer, r, 0))
        .map(|b| narrow(b, max_chunks))
}

/// In order from the start (libswift's sequential picker); with `twist`, in a random order
/// within each subtree so parallel channels spread out.
#[derive(Clone, Debug, Default)]
pub struct Sequential {
    /// Randomise the order within subtrees by the context's twist.
    pub twist: bool,
}

impl Picker for Sequential {
    fn pick(&mut self, ctx: &PickContext<'_>, offer: &Binmap, max_chunks: u64) -> Option<Bin> {
        let twist = if self.twist { ctx.twist } else { 0 };
        Binmap::find_complement(ctx.exclude, offer, ctx.range, twist).map(|b| narrow(b, max_chunks))
    }
}

/// The chunks the fewest connected peers hold first (libswift's default for files), so
/// every chunk stays in the swarm and peers have something to trade.
#[derive(Clone, Debug, Default)]
pub struct RarestFirst;

impl Picker for RarestFirst {
    fn pick(&mut self, ctx: &PickContext<'_>, offer: &Binmap, max_chunks: u64) -> Option<Bin> {
        // One search says whether the peer offers anything we lack and have not asked for;
        // often it does not (everything requested), and then the search of every rarity
        // level, one each, is saved.
        let any = Binmap::find_complement(ctx.exclude, offer, ctx.range, ctx.twist)?;
        // With one rarity level (every peer a seeder, or one peer) every chunk is as rare
        // as any other, and the level search would find `any` again.
        if ctx.avail.levels() <= 1 {
            return Some(narrow(any, max_chunks));
        }
        let rarest = ctx
            .avail
            .find_rarest(offer, ctx.exclude, ctx.range, ctx.twist);
        Some(narrow(rarest.unwrap_or(any), max_chunks))
    }
}

/// Video on demand: chunks in order inside a high-priority window ahead of the playhead,
/// then rarest-first in a window four times as wide, then rarest-first everywhere.
#[derive(Clone, Debug)]
pub struct Vod {
    playhead: u64,
    window: u64,
    /// Playback waits: only the in-order window is picked (`set_waiting`).
    waiting: bool,
}

impl Vod {
    /// `window` chunks ahead of the playhead are fetched in order (at least one).
    pub fn new(window: u64) -> Vod {
        Vod {
            playhead: 0,
            window: window.max(1),
            waiting: false,
        }
    }

    /// The chunk playback is at; the in-order window starts here.
    pub fn playhead(&self) -> u64 {
        self.playhead
    }

    fn high_end(&self) -> u64 {
        self.playhead.saturating_add(self.window)
    }
}

impl Picker for Vod {
    fn pick(&mut self, ctx: &PickContext<'_>, offer: &Binmap, max_chunks: u64) -> Option<Bin> {
        let n = ctx.chunk_count;
        if n == 0 {
            return None;
        }
        let start = self.playhead.min(n - 1);
        let high_last = self.high_end().min(n) - 1;
        if let Some(b) = first_wanted_in(ctx, offer, start, high_last, max_chunks) {
            return Some(b);
        }
        if self.waiting {
            return None;
        }
        // Nothing wanted anywhere from this peer: skip the rarity searches below.
        Binmap::find_complement(ctx.exclude, offer, ctx.range, ctx.twist)?;
        let medium_last = self
            .playhead
            .saturating_add(self.window.saturating_mul(5))
            .min(n)
            - 1;
        if high_last < medium_last {
            let medium = Bin::from_chunk_range(high_last + 1, medium_last)
                .find_map(|r| ctx.avail.find_rarest(offer, ctx.exclude, r, ctx.twist));
            if let Some(b) = medium {
                return Some(narrow(b, max_chunks));
            }
        }
        RarestFirst.pick(ctx, offer, max_chunks)
    }

    fn is_urgent(&self, bin: Bin) -> bool {
        match bin.chunk_range() {
            Some((first, last)) => last >= self.playhead && first < self.high_end(),
            None => false,
        }
    }

    fn is_due(&self, bin: Bin) -> bool {
        let due = self.due_span();
        bin.chunk_range()
            .is_some_and(|(first, last)| last >= due.start && first < due.end)
    }

    fn set_playhead(&mut self, chunk: u64) {
        self.playhead = chunk;
    }

    fn set_waiting(&mut self, waiting: bool) {
        self.waiting = waiting;
    }

    fn is_waiting(&self) -> bool {
        self.waiting
    }

    fn due_chunks(&self) -> Option<core::ops::Range<u64>> {
        Some(self.due_span())
    }

    fn urgent_chunks(&self) -> Option<core::ops::Range<u64>> {
        Some(self.playhead..self.high_end())
    }
}

impl Vod {
    /// The first 32nd of the window: with 8 KiB chunks and a 4 MiB window, 128 KiB, a
    /// second or two of video at common bit rates. (A 16th left seeders uploading more in
    /// the 8-page benchmark: BENCHMARKS.md, "Measurements behind design choices".)
    fn due_span(&self) -> core::ops::Range<u64> {
        self.playhead..self.playhead.saturating_add((self.window / 32).max(1))
    }
}

/// Live streams: the first missing chunk from the playback position, never older than the
/// discard window behind the newest chunk any peer offers (we hook in near the live edge).
#[derive(Clone, Debug)]
pub struct Live {
    position: Option<u64>,
    discard_window: u64,
    /// False after `unanchor` until `set_playhead`: picks do not move `position`.
    anchored: bool,
}

impl Live {
    /// Chunks older than `discard_window` behind the newest one are not fetched.
    pub fn new(discard_window: u64) -> Live {
        Live {
            position: None,
            discard_window: discard_window.max(1),
            anchored: true,
        }
    }

    /// The chunk playback is at, or `None` before the first pick (which starts at the
    /// newest chunk offered).
    pub fn position(&self) -> Option<u64> {
        self.position
    }
}

impl Picker for Live {
    fn pick(&mut self, ctx: &PickContext<'_>, offer: &Binmap, max_chunks: u64) -> Option<Bin> {
        let newest = offer.filled_ranges().last()?.end.checked_sub(1)?;
        let oldest_kept = newest.saturating_sub(self.discard_window - 1);
        let position = self.position.unwrap_or(newest).max(oldest_kept);
        if self.anchored {
            self.position = Some(position);
        }
        first_wanted_in(ctx, offer, position, newest, max_chunks)
    }

    fn is_urgent(&self, bin: Bin) -> bool {
        self.position.is_some_and(|p| bin.base_offset() <= p)
    }

    fn is_due(&self, bin: Bin) -> bool {
        self.is_urgent(bin)
    }

    fn set_playhead(&mut self, chunk: u64) {
        self.position = Some(chunk);
        self.anchored = true;
    }

    fn unanchor(&mut self) {
        self.position = None;
        self.anchored = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vod_due_is_the_first_32nd_of_the_window_from_the_playhead() {
        let mut vod = Vod::new(512);
        vod.set_playhead(100);
        let chunk = |c| Bin::chunk(c).unwrap();
        assert!(!vod.is_due(chunk(99)));
        assert!(vod.is_due(chunk(100)) && vod.is_due(chunk(115)));
        assert!(!vod.is_due(chunk(116)));
        assert!(vod.is_urgent(chunk(116)), "urgent reaches further than due");
        assert_eq!(vod.due_chunks(), Some(100..116));
        assert_eq!(vod.urgent_chunks(), Some(100..612));
        assert!(!RarestFirst.is_due(chunk(0)));
        assert_eq!(RarestFirst.due_chunks(), None);
    }

    fn map(chunks: impl IntoIterator<Item = u64>) -> Binmap {
        let mut m = Binmap::new();
        for c in chunks {
            m.set(Bin::chunk(c).unwrap());
        }
        m
    }

    /// An exclude map with everything from `n` on filled, as the engine builds it.
    fn exclude(n: u64, have: impl IntoIterator<Item = u64>) -> Binmap {
        let mut m = map(have);
        let range = Bin::covering(n).unwrap();
        for b in Bin::from_chunk_range(n, range.last_chunk()) {
            m.set(b);
        }
        m
    }

    fn ctx<'a>(n: u64, exclude: &'a Binmap, avail: &'a Availability) -> PickContext<'a> {
        PickContext {
            exclude,
            avail,
            range: Bin::covering(n).unwrap(),
            chunk_count: n,
            twist: 0,
        }
    }

    #[test]
    fn vod_while_playback_waits_picks_only_inside_the_window() {
        let avail = Availability::new();
        let mut vod = Vod::new(16);
        vod.set_playhead(10);
        // Everything in the window held or asked for; the peer offers the rest too.
        let ex = exclude(200, 0..26);
        let offer = map(0..200);
        let c = ctx(200, &ex, &avail);
        assert!(
            vod.pick(&c, &offer, 4).is_some(),
            "not waiting: beyond the window"
        );
        vod.set_waiting(true);
        assert_eq!(vod.pick(&c, &offer, 4), None, "waiting: nothing beyond it");
        let ex = exclude(200, 0..20);
        let c = ctx(200, &ex, &avail);
        assert_eq!(
            vod.pick(&c, &offer, 4).and_then(|b| b.chunk_range()),
            Some((20, 23)),
            "waiting: in order inside the window"
        );
        vod.set_waiting(false);
        let ex = exclude(200, 0..26);
        assert!(vod.pick(&ctx(200, &ex, &avail), &offer, 4).is_some());
    }

    #[test]
    fn narrow_takes_the_leftmost_part() {
        let b = Bin::new(3, 1).unwrap(); // chunks 8..=15
        assert_eq!(narrow(b, 8), b);
        assert_eq!(narrow(b, 3).chunk_range(), Some((8, 9)));
        assert_eq!(narrow(b, 0).chunk_range(), Some((8, 8)));
    }

    #[test]
    fn sequential_goes_in_order_and_respects_the_budget() {
        let avail = Availability::new();
        let ex = exclude(20, [0, 1, 2]);
        let offer = map(0..20);
        let c = ctx(20, &ex, &avail);
        let b = Sequential::default().pick(&c, &offer, 4).unwrap();
        assert_eq!(b.chunk_range(), Some((3, 3)));
        let ex = exclude(20, 0..4);
        let c = ctx(20, &ex, &avail);
        let b = Sequential::default().pick(&c, &offer, 4).unwrap();
        assert_eq!(b.chunk_range(), Some((4, 7)));
        // Nothing past the content, nothing the peer lacks.
        let ex = exclude(20, 0..20);
        assert_eq!(
            Sequential::default().pick(&ctx(20, &ex, &avail), &offer, 4),
            None
        );
        let ex = exclude(20, []);
        assert_eq!(
            Sequential::default().pick(&ctx(20, &ex, &avail), &map([]), 4),
            None
        );
    }

    #[test]
    fn twisted_sequential_still_picks_only_wanted_chunks() {
        let avail = Availability::new();
        let ex = exclude(64, 0..10);
        let offer = map(5..40);
        for twist in [1u64, 7, 21, 63, 0xdead_beef] {
            let c = PickContext {
                twist,
                ..ctx(64, &ex, &avail)
            };
            let b = Sequential { twist: true }.pick(&c, &offer, 2).unwrap();
            let (first, last) = b.chunk_range().unwrap();
            assert!(
                first >= 10 && last < 40 && last - first < 2,
                "{b:?} for twist {twist}"
            );
        }
    }

    #[test]
    fn rarest_first_prefers_chunks_few_peers_hold() {
        let mut avail = Availability::new();
        // Chunks 0..8 are held by three peers, 8..16 by one.
        for _ in 0..3 {
            avail.add_peer(&map(0..8));
        }
        avail.add_peer(&map(8..16));
        let ex = exclude(16, []);
        let offer = map(0..16);
        let b = RarestFirst.pick(&ctx(16, &ex, &avail), &offer, 16).unwrap();
        let (first, last) = b.chunk_range().unwrap();
        assert!(first >= 8 && last < 16, "picked {b:?}");
    }

    #[test]
    fn vod_fetches_the_window_in_order_then_follows_seeks() {
        let mut avail = Availability::new();
        avail.add_peer(&map(0..100));
        let offer = map(0..100);
        let mut vod = Vod::new(10);
        let ex = exclude(100, [0, 1]);
        let b = vod.pick(&ctx(100, &ex, &avail), &offer, 1).unwrap();
        assert_eq!(b.chunk_range(), Some((2, 2)));
        assert!(vod.is_urgent(b));
        vod.set_playhead(80);
        let b = vod.pick(&ctx(100, &ex, &avail), &offer, 1).unwrap();
        assert_eq!(b.chunk_range(), Some((80, 80)));
        assert!(!vod.is_urgent(Bin::chunk(5).unwrap()));
        // With the window complete it moves on to other chunks (rarest-first).
        let ex = exclude(100, 80..90);
        let b = vod.pick(&ctx(100, &ex, &avail), &offer, 1).unwrap();
        assert!(!(80..90).contains(&b.base_offset()));
        assert!(!vod.is_urgent(b));
    }

    #[test]
    fn live_starts_near_the_edge_and_keeps_within_the_window() {
        let avail = Availability::new();
        let ex = exclude(1000, []);
        let offer = map(0..500);
        let mut live = Live::new(50);
        let b = live.pick(&ctx(1000, &ex, &avail), &offer, 4).unwrap();
        assert_eq!(
            b.chunk_range(),
            Some((499, 499)),
            "hooks in at the newest chunk"
        );
        live.set_playhead(10);
        let b = live.pick(&ctx(1000, &ex, &avail), &offer, 4).unwrap();
        assert_eq!(b.base_offset(), 450, "never behind the discard window");
    }

    #[test]
    fn an_unanchored_live_picker_lets_no_offer_move_the_others() {
        let avail = Availability::new();
        let ex = exclude(1 << 20, []);
        let mut live = Live::new(50);
        live.unanchor();
        // A peer claims chunks far ahead; an honest one offers the real edge.
        let claimed = live.pick(&ctx(1 << 20, &ex, &avail), &map(900_000..900_010), 1);
        assert_eq!(
            claimed.and_then(|b| b.chunk_range()),
            Some((900_009, 900_009))
        );
        let honest = live.pick(&ctx(1 << 20, &ex, &avail), &map(0..500), 1);
        assert_eq!(honest.and_then(|b| b.chunk_range()), Some((499, 499)));
        // Anchored where a chunk verified, it keeps its place again.
        live.set_playhead(495);
        let b = live
            .pick(&ctx(1 << 20, &ex, &avail), &map(0..500), 1)
            .unwrap();
        assert_eq!(b.chunk_range(), Some((495, 495)));
        assert!(live.is_urgent(Bin::chunk(495).unwrap()));
    }
}
