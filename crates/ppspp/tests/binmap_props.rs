//! Property tests: `Binmap` and `Availability` against naive models.
//!
//! The binmap model is a sorted list of disjoint half-open runs, so operations on bins of
//! any layer (up to `Bin::ALL`) can be checked, not only a small dense universe.

use ppspp::Bin;
use ppspp::avail::Availability;
use ppspp::binmap::Binmap;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::ops::Range;

const END: u64 = 1 << 63;
/// Small universe: bins within the first 2^12 chunks.
const SMALL: u32 = 12;

#[derive(Clone, Debug, Default, PartialEq)]
struct Model(Vec<Range<u64>>);

fn span(bin: Bin) -> Range<u64> {
    let lo = bin.base_offset();
    lo..lo + bin.base_length()
}

impl Model {
    fn normalise(&mut self) {
        self.0.retain(|r| r.start < r.end);
        self.0.sort_by_key(|r| r.start);
        let mut out: Vec<Range<u64>> = Vec::new();
        for r in self.0.drain(..) {
            match out.last_mut() {
                Some(l) if r.start <= l.end => l.end = l.end.max(r.end),
                _ => out.push(r),
            }
        }
        self.0 = out;
    }
    fn set(&mut self, r: Range<u64>) {
        self.0.push(r);
        self.normalise();
    }
    fn reset(&mut self, r: Range<u64>) {
        let mut out = Vec::new();
        for x in &self.0 {
            out.push(x.start..x.end.min(r.start));
            out.push(x.start.max(r.end)..x.end);
        }
        self.0 = out;
        self.normalise();
    }
    fn restrict(&self, r: &Range<u64>) -> Model {
        let mut m = Model(
            self.0
                .iter()
                .map(|x| x.start.max(r.start)..x.end.min(r.end))
                .collect(),
        );
        m.normalise();
        m
    }
    fn minus(&self, other: &Model) -> Model {
        let mut m = self.clone();
        for r in &other.0 {
            m.reset(r.clone());
        }
        m
    }
    fn and(&self, other: &Model) -> Model {
        let mut m = Model::default();
        for r in &other.0 {
            m.0.extend(self.restrict(r).0);
        }
        m.normalise();
        m
    }
    fn filled(&self, r: &Range<u64>) -> bool {
        self.0.iter().any(|x| x.start <= r.start && r.end <= x.end)
    }
    fn empty(&self, r: &Range<u64>) -> bool {
        !self.0.iter().any(|x| x.start < r.end && r.start < x.end)
    }
    fn count(&self) -> u64 {
        self.0.iter().map(|r| r.end - r.start).sum()
    }
    fn first_filled(&self, from: u64, end: u64) -> Option<u64> {
        let p = self
            .0
            .iter()
            .find(|r| r.end > from)
            .map(|r| r.start.max(from))?;
        (p < end).then_some(p)
    }
    fn first_empty(&self, from: u64, end: u64) -> Option<u64> {
        let mut p = from;
        for r in &self.0 {
            if r.start <= p && p < r.end {
                p = r.end;
            }
        }
        (p < end).then_some(p)
    }
    /// Largest aligned bin starting at the first chunk with `value` in `within`.
    fn find(&self, value: bool, within: Range<u64>) -> Option<Bin> {
        let end = within.end.min(END);
        if within.start >= end {
            return None;
        }
        let (p, q) = if value {
            let p = self.first_filled(within.start, end)?;
            (p, self.first_empty(p, end).unwrap_or(end))
        } else {
            let p = self.first_empty(within.start, end)?;
            (p, self.first_filled(p, end).unwrap_or(end))
        };
        let mut bin = Bin::chunk(p).unwrap();
        loop {
            let up = bin.parent();
            if up.is_none() || up.base_offset() != p || up.last_chunk() >= q {
                return Some(bin);
            }
            bin = up;
        }
    }
    fn cover(&self, bin: Bin) -> Bin {
        let uniform = |b: Bin| self.filled(&span(b)) || self.empty(&span(b));
        if !uniform(bin) {
            return Bin::NONE;
        }
        let mut b = bin;
        while !b.parent().is_none() && uniform(b.parent()) {
            b = b.parent();
        }
        b
    }
    /// The largest bin containing `chunk` inside `range` entirely set in `self`.
    fn widen(&self, chunk: u64, range: Bin) -> Bin {
        let mut b = Bin::chunk(chunk).unwrap();
        while b != range && self.filled(&span(b.parent())) {
            b = b.parent();
        }
        b
    }
}

/// Checks a two-map search result: `cand` is the model of the chunks that qualify.
fn check_find(got: Option<Bin>, cand: &Model, range: Bin, twist: u64) -> Result<(), TestCaseError> {
    let cand = cand.restrict(&span(range));
    let Some(r) = got else {
        prop_assert!(cand.0.is_empty(), "None but {:?} qualify", cand);
        return Ok(());
    };
    prop_assert!(range.contains(r), "{r:?} outside {range:?}");
    prop_assert!(cand.filled(&span(r)), "{r:?} does not qualify");
    prop_assert!(
        r == range || !cand.filled(&span(r.parent())),
        "{r:?} not maximal"
    );
    if twist == 0 {
        let first = cand.0[0].start;
        prop_assert_eq!(r, cand.widen(first, range));
    } else if cand.count() <= 4096 {
        // The first qualifying chunk in twisted order, widened.
        let best = cand
            .0
            .iter()
            .flat_map(|x| x.clone())
            .min_by_key(|c| Bin::chunk(*c).unwrap().twisted(twist).raw())
            .unwrap();
        prop_assert_eq!(r, cand.widen(best, range), "twist {:#x}", twist);
    }
    Ok(())
}

fn small_bin() -> impl Strategy<Value = Bin> {
    (0..=SMALL)
        .prop_flat_map(|l| (0..(1u64 << (SMALL - l))).prop_map(move |o| Bin::new(l, o).unwrap()))
}

fn any_bin() -> impl Strategy<Value = Bin> {
    prop_oneof![
        4 => small_bin(),
        1 => (0u32..=63).prop_flat_map(|l| {
            let max = 1u64 << (63 - l);
            prop_oneof![Just(0u64), Just(1u64 % max), Just(max - 1), 0..max]
                .prop_map(move |o| Bin::new(l, o).unwrap())
        }),
        1 => Just(Bin::ALL),
        1 => Just(Bin::NONE),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Set(usize, Bin),
    Reset(usize, Bin),
    Fill(usize),
    CopyRange(usize, Bin),
    CopyFrom(usize),
    Intersect(usize),
    Subtract(usize),
    Clear(usize),
}

fn op(bin: BoxedStrategy<Bin>) -> impl Strategy<Value = Op> {
    let i = 0usize..2;
    prop_oneof![
        6 => (i.clone(), bin.clone()).prop_map(|(i, b)| Op::Set(i, b)),
        4 => (i.clone(), bin.clone()).prop_map(|(i, b)| Op::Reset(i, b)),
        1 => i.clone().prop_map(Op::Fill),
        2 => (i.clone(), bin).prop_map(|(i, b)| Op::CopyRange(i, b)),
        1 => i.clone().prop_map(Op::CopyFrom),
        1 => i.clone().prop_map(Op::Intersect),
        1 => i.clone().prop_map(Op::Subtract),
        1 => i.prop_map(Op::Clear),
    ]
}

fn apply(maps: &mut [Binmap; 2], models: &mut [Model; 2], op: &Op) {
    let other = |i: usize| 1 - i;
    match *op {
        Op::Set(i, b) => {
            maps[i].set(b);
            if !b.is_none() {
                models[i].set(span(b));
            }
        }
        Op::Reset(i, b) => {
            maps[i].reset(b);
            if !b.is_none() {
                models[i].reset(span(b));
            }
        }
        Op::Fill(i) => {
            let src = maps[other(i)].clone();
            maps[i].fill(&src);
            let src = models[other(i)].clone();
            for r in src.0 {
                models[i].set(r);
            }
        }
        Op::CopyRange(i, b) => {
            let src = maps[other(i)].clone();
            maps[i].copy_range(&src, b);
            if !b.is_none() {
                let inside = models[other(i)].restrict(&span(b));
                models[i].reset(span(b));
                for r in inside.0 {
                    models[i].set(r);
                }
            }
        }
        Op::CopyFrom(i) => {
            let src = maps[other(i)].clone();
            maps[i].copy_from(&src);
            models[i] = models[other(i)].clone();
        }
        Op::Intersect(i) => {
            let src = maps[other(i)].clone();
            maps[i].intersect(&src);
            models[i] = models[i].and(&models[other(i)]);
        }
        Op::Subtract(i) => {
            let src = maps[other(i)].clone();
            maps[i].subtract(&src);
            models[i] = models[i].minus(&models[other(i)]);
        }
        Op::Clear(i) => {
            maps[i].clear();
            models[i] = Model::default();
        }
    }
}

fn check_map(
    m: &Binmap,
    model: &Model,
    queries: &[Bin],
    windows: &[Range<u64>],
) -> Result<(), TestCaseError> {
    m.check_invariants().map_err(TestCaseError::fail)?;
    prop_assert_eq!(m.count_filled(), model.count());
    prop_assert_eq!(m.filled_ranges().collect::<Vec<_>>(), model.0.clone());
    prop_assert_eq!(m.is_clear(), model.0.is_empty());
    for &q in queries {
        if q.is_none() {
            prop_assert!(!m.is_filled(q) && m.is_empty(q));
            prop_assert_eq!(m.cover(q), Bin::NONE);
            continue;
        }
        let s = span(q);
        prop_assert_eq!(m.is_filled(q), model.filled(&s), "is_filled {:?}", q);
        prop_assert_eq!(m.is_empty(q), model.empty(&s), "is_empty {:?}", q);
        prop_assert_eq!(m.cover(q), model.cover(q), "cover {:?}", q);
        prop_assert_eq!(m.count_filled_in(q), model.restrict(&s).count());
        let mut a = q;
        let lowest_set = loop {
            if !model.empty(&span(a)) {
                break Some(a.layer());
            }
            if a.is_all() {
                break None;
            }
            a = a.parent();
        };
        prop_assert_eq!(
            m.lowest_set_ancestor(q),
            lowest_set,
            "lowest_set_ancestor {:?}",
            q
        );
    }
    for w in windows {
        prop_assert_eq!(
            m.find_empty(w.clone()),
            model.find(false, w.clone()),
            "find_empty {:?}",
            w
        );
        prop_assert_eq!(
            m.find_filled(w.clone()),
            model.find(true, w.clone()),
            "find_filled {:?}",
            w
        );
    }
    Ok(())
}

fn window() -> impl Strategy<Value = Range<u64>> {
    prop_oneof![
        (0u64..5000, 0u64..5000).prop_map(|(a, b)| a..b),
        (0u64..5000).prop_map(|a| a..u64::MAX),
        (0u64..64).prop_map(|a| ((1u64 << 62) - a)..(1u64 << 63)),
    ]
}

fn run(
    ops: Vec<Op>,
    queries: Vec<Bin>,
    windows: Vec<Range<u64>>,
    ranges: Vec<(Bin, u64)>,
) -> Result<(), TestCaseError> {
    let mut maps = [Binmap::new(), Binmap::new()];
    let mut models = [Model::default(), Model::default()];
    for op in &ops {
        apply(&mut maps, &mut models, op);
        let mut qs = queries.clone();
        if let Op::Set(_, b) | Op::Reset(_, b) | Op::CopyRange(_, b) = op {
            qs.push(*b);
            qs.push(b.parent());
        }
        for i in 0..2 {
            check_map(&maps[i], &models[i], &qs, &windows)?;
        }
        prop_assert_eq!(maps[0] == maps[1], models[0] == models[1]);
        for &(range, twist) in &ranges {
            for t in [0, twist] {
                let (a, b) = (&maps[0], &maps[1]);
                let (ma, mb) = (&models[0], &models[1]);
                check_find(
                    Binmap::find_complement(a, b, range, t),
                    &mb.minus(ma),
                    range,
                    t,
                )?;
                check_find(
                    Binmap::find_complement(b, a, range, t),
                    &ma.minus(mb),
                    range,
                    t,
                )?;
                check_find(Binmap::find_match(a, b, range, t), &ma.and(mb), range, t)?;
            }
        }
    }
    Ok(())
}

fn find_range() -> impl Strategy<Value = (Bin, u64)> {
    (prop_oneof![3 => small_bin(), 1 => any_bin()], any::<u64>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn small_universe(
        ops in prop::collection::vec(op(small_bin().boxed()), 1..40),
        queries in prop::collection::vec(small_bin(), 8),
        windows in prop::collection::vec(window(), 4),
        ranges in prop::collection::vec(find_range(), 3),
    ) {
        run(ops, queries, windows, ranges)?;
    }

    #[test]
    fn big_layers(
        ops in prop::collection::vec(op(any_bin().boxed()), 1..30),
        queries in prop::collection::vec(any_bin(), 8),
        windows in prop::collection::vec(window(), 4),
        ranges in prop::collection::vec(find_range(), 3),
    ) {
        run(ops, queries, windows, ranges)?;
    }

    /// Cells only exist where a run boundary is: at most `root layer - 6` cells per
    /// boundary (two boundaries per run) plus the root, and never more than the
    /// 2^(12-6) - 1 = 63 possible cells of a 2^12-chunk tree.
    #[test]
    fn memory_follows_fragmentation(bins in prop::collection::vec(small_bin(), 0..60)) {
        let mut m = Binmap::new();
        for b in bins {
            m.set(b);
        }
        let runs = m.filled_ranges().count();
        prop_assert!(m.cells() <= 1 + 2 * runs * (SMALL as usize - 6), "{} cells for {} runs", m.cells(), runs);
        prop_assert!(m.cells() <= 63);
    }
}

#[test]
fn complete_maps_use_constant_memory() {
    let mut cells = Vec::new();
    for layer in [10, 20, 40, 62] {
        let mut m = Binmap::new();
        m.set(Bin::new(layer, 0).unwrap());
        cells.push(m.cells());
        // The same content built chunk-range by chunk-range folds back to one cell.
        let mut n = Binmap::new();
        for k in 0..layer {
            n.set(Bin::new(k, 1).unwrap());
        }
        n.set(Bin::chunk(0).unwrap());
        assert_eq!(n, m);
        cells.push(n.cells());
    }
    assert!(cells.iter().all(|c| *c == 1), "{cells:?}");
}

#[test]
fn chess_memory() {
    // Alternating chunks: one cell per 128 chunks plus the inner nodes.
    let n = 1u64 << 16;
    let mut m = Binmap::new();
    for i in (0..n).step_by(2) {
        m.set(Bin::chunk(i).unwrap());
    }
    assert_eq!(m.cells() as u64, n / 64 - 1);
    assert_eq!(m.count_filled(), n / 2);
    assert!(
        m.heap_bytes() as u64 <= 3 * (n / 8),
        "{} bytes",
        m.heap_bytes()
    );
}

// ----- availability -----

#[derive(Clone, Debug)]
enum AvOp {
    Connect(usize),
    Disconnect(usize),
    Have(usize, Bin),
    HaveAll(usize),
    AddSeeder,
    RemoveSeeder,
}

const AV_CHUNKS: u32 = 8; // 256 chunks

fn av_bin() -> impl Strategy<Value = Bin> {
    (0..=AV_CHUNKS).prop_flat_map(|l| {
        (0..(1u64 << (AV_CHUNKS - l))).prop_map(move |o| Bin::new(l, o).unwrap())
    })
}

fn av_op() -> impl Strategy<Value = AvOp> {
    let p = 0usize..4;
    prop_oneof![
        2 => p.clone().prop_map(AvOp::Connect),
        1 => p.clone().prop_map(AvOp::Disconnect),
        6 => (p.clone(), av_bin()).prop_map(|(p, b)| AvOp::Have(p, b)),
        1 => p.prop_map(AvOp::HaveAll),
        1 => Just(AvOp::AddSeeder),
        1 => Just(AvOp::RemoveSeeder),
    ]
}

#[derive(Clone, Default)]
struct Peer {
    map: Binmap,
    all: bool,
    chunks: BTreeSet<u64>,
    connected: bool,
}

impl Peer {
    fn holds(&self, c: u64) -> bool {
        self.all || self.chunks.contains(&c)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn availability_matches_counts(
        ops in prop::collection::vec(av_op(), 1..40),
        picks in prop::collection::vec((av_bin(), av_bin(), av_bin(), any::<u64>()), 3),
    ) {
        let mut av = Availability::new();
        let mut peers: Vec<Peer> = vec![Peer::default(); 4];
        let mut seeders = 0usize;
        for op in &ops {
            match *op {
                AvOp::Connect(p) if !peers[p].connected => {
                    av.add_peer(&peers[p].map);
                    peers[p].connected = true;
                }
                AvOp::Disconnect(p) if peers[p].connected => {
                    av.remove_peer(&peers[p].map);
                    peers[p].connected = false;
                }
                AvOp::Have(p, b) => {
                    if peers[p].connected {
                        av.apply_have(&peers[p].map, b);
                    }
                    peers[p].map.set(b);
                    peers[p].chunks.extend(b.base_offset()..=b.last_chunk());
                }
                AvOp::HaveAll(p) => {
                    if peers[p].connected {
                        av.apply_have(&peers[p].map, Bin::ALL);
                    }
                    peers[p].map.set(Bin::ALL);
                    peers[p].all = true;
                }
                AvOp::AddSeeder => {
                    av.add_seeder();
                    seeders += 1;
                }
                AvOp::RemoveSeeder if seeders > 0 => {
                    av.remove_seeder();
                    seeders -= 1;
                }
                _ => {}
            }
            av.check_invariants().map_err(TestCaseError::fail)?;
            let count = |c: u64| peers.iter().filter(|p| p.connected && p.holds(c)).count() + seeders;
            for c in 0..(1u64 << AV_CHUNKS) + 2 {
                prop_assert_eq!(av.rarity(c), count(c), "chunk {}", c);
            }
            prop_assert_eq!(av.rarity(1 << 40), count(1 << 40));
            for (offer_bin, excl_bin, range, twist) in &picks {
                let mut offer = Binmap::new();
                offer.set(*offer_bin);
                offer.fill(&peers[0].map);
                let mut exclude = Binmap::new();
                exclude.set(*excl_bin);
                let got = av.find_rarest(&offer, &exclude, *range, *twist);
                let cands: Vec<u64> = (range.base_offset()..=range.last_chunk())
                    .filter(|c| offer.is_filled(Bin::chunk(*c).unwrap()) && !exclude.is_filled(Bin::chunk(*c).unwrap()))
                    .collect();
                match got {
                    None => prop_assert!(cands.is_empty()),
                    Some(b) => {
                        let best = cands.iter().map(|c| count(*c)).min().unwrap();
                        prop_assert!(range.contains(b));
                        for c in b.base_offset()..=b.last_chunk() {
                            prop_assert!(cands.contains(&c));
                            prop_assert_eq!(count(c), best);
                        }
                    }
                }
            }
        }
    }
}
