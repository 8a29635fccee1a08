//! Compressed chunk maps (libswift `binmap_t`): a hybrid of bitmaps and a binary tree.
//!
//! The map is an arena of cells. Each cell covers one bin and holds two halves; a half is
//! either the index of a child cell or a bitmap. A bitmap half at layer 6 covers 64 chunks
//! bit by bit; a bitmap half higher up is uniform (all 0 or all 1). After every write the
//! path is folded back up: a cell whose halves are uniform and equal is freed and its
//! parent half takes that value. Memory therefore grows with fragmentation (number of
//! filled/empty boundaries), not with the size of the content: a completely filled or
//! completely empty map of any size is one cell.
//!
//! The map covers chunks `0..2^63` (every bin except [`Bin::NONE`]); all chunks start empty.
//! The root cell covers an aligned bin at offset 0 and grows upward as needed; chunks
//! outside it are empty.
//!
//! Unlike libswift, every search takes an explicit bound, so a search never answers with
//! chunks past the real content size.

use crate::bin::Bin;
use core::fmt;
use core::ops::Range;

/// Bitmap halves are `u64`, i.e. 64 chunks (a layer-6 bin) per bitmap and 128 per bottom
/// cell. Why 64 rather than libswift's 32: a half is then as wide as a cell reference, so
/// no packing or unions are needed in safe Rust; `u64` bit operations are native on every
/// target (including wasm32); and a fully fragmented map needs half as many cells and one
/// tree level fewer. A cell costs 17 bytes (two words plus a flag byte kept in a parallel
/// vector), so the worst case (alternating chunks) is about 2.1x a plain bitmap, the same
/// ratio as libswift's packed 9-byte cells with 32-chunk halves.
const WORD_LAYER: u32 = 6;
/// The smallest root: one cell of two bitmap halves.
const MIN_ROOT_LAYER: u32 = WORD_LAYER + 1;
const FULL: u64 = u64::MAX;
/// One past the last chunk of the bin space.
const END: u64 = 1 << 63;

const REF_L: u8 = 1;
const REF_R: u8 = 2;
const REFS: u8 = REF_L | REF_R;
const FREE: u8 = 4;
const NIL: usize = usize::MAX;

/// A set of chunks, stored as a compressed binary tree of bitmaps.
pub struct Binmap {
    /// Two halves per cell: a bitmap, or a child index when the matching `flags` bit is set.
    /// A free cell keeps the next free index in half 0.
    cells: Vec<[u64; 2]>,
    /// `REF_L`, `REF_R`, `FREE` per cell; a separate vector so a cell stays 17 bytes.
    flags: Vec<u8>,
    free_head: usize,
    live: usize,
    /// The bin covered by cell 0, always at offset 0 and at least layer 7.
    root_bin: Bin,
}

/// A read-only position in a map: a bin and what the tree says about it.
#[derive(Clone, Copy, Debug)]
struct View {
    bin: Bin,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Every chunk of the bin has this value.
    Uniform(bool),
    /// The bin is the one covered by this cell.
    Cell(usize),
    /// The bin lies within (or is) the layer-6 bin stored in this bitmap word.
    Word(u64),
    /// The bin strictly contains the root bin (and the empty space right of it).
    Above,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Empty,
    Full,
    Mixed,
}

/// In-place binary operations between a map and a source map.
#[derive(Clone, Copy, Debug)]
enum Op {
    Or,
    Copy,
    And,
    AndNot,
}

impl Op {
    fn word(self, d: u64, s: u64) -> u64 {
        match self {
            Op::Or => d | s,
            Op::Copy => s,
            Op::And => d & s,
            Op::AndNot => d & !s,
        }
    }

    /// Result when the source is uniformly `s`: `None` keeps the destination.
    fn on_uniform_src(self, s: bool) -> Option<bool> {
        match (self, s) {
            (Op::Or, true) => Some(true),
            (Op::Or, false) => None,
            (Op::Copy, s) => Some(s),
            (Op::And, true) => None,
            (Op::And, false) => Some(false),
            (Op::AndNot, true) => Some(false),
            (Op::AndNot, false) => None,
        }
    }

    /// True if a destination uniformly `d` is unchanged whatever the source holds.
    fn keeps(self, d: bool) -> bool {
        match self {
            Op::Or => d,
            Op::Copy => false,
            Op::And | Op::AndNot => !d,
        }
    }
}

/// What a write does at its target bin.
#[derive(Clone, Copy)]
enum Act<'a> {
    Uniform(bool),
    Merge(&'a Binmap, Op),
}

/// Mask of the low `2^layer` bits (layer <= 6).
fn len_mask(bin: Bin) -> u64 {
    let len = bin.base_length();
    if len >= 64 { FULL } else { (1u64 << len) - 1 }
}

/// The bits of `bin` (layer <= 6) inside the word of its layer-6 ancestor.
fn word_mask(bin: Bin) -> u64 {
    len_mask(bin) << (bin.base_offset() & 63)
}

impl Binmap {
    /// An empty map (one cell).
    pub fn new() -> Binmap {
        Binmap {
            cells: vec![[0, 0]],
            flags: vec![0],
            free_head: NIL,
            live: 1,
            root_bin: Bin::new(MIN_ROOT_LAYER, 0).unwrap_or(Bin::ALL),
        }
    }

    // ----- arena -----

    fn is_ref(&self, cell: usize, side: usize) -> bool {
        self.flags[cell] & (REF_L << side) != 0
    }

    fn half_ref(&self, cell: usize, side: usize) -> Option<usize> {
        if self.is_ref(cell, side) {
            Some(self.cells[cell][side] as usize)
        } else {
            None
        }
    }

    fn alloc(&mut self, halves: [u64; 2], flags: u8) -> usize {
        self.live += 1;
        if self.free_head != NIL {
            let c = self.free_head;
            self.free_head = self.cells[c][0] as usize;
            self.cells[c] = halves;
            self.flags[c] = flags;
            c
        } else {
            self.cells.push(halves);
            self.flags.push(flags);
            self.cells.len() - 1
        }
    }

    /// Returns one cell to the free list (its children are not touched).
    fn release(&mut self, c: usize) {
        self.cells[c] = [self.free_head as u64, 0];
        self.flags[c] = FREE;
        self.free_head = c;
        self.live -= 1;
    }

    fn free_subtree(&mut self, c: usize) {
        for side in 0..2 {
            if let Some(child) = self.half_ref(c, side) {
                self.free_subtree(child);
            }
        }
        self.release(c);
    }

    fn set_half_uniform(&mut self, cell: usize, side: usize, value: bool) {
        if let Some(child) = self.half_ref(cell, side) {
            self.free_subtree(child);
        }
        self.cells[cell][side] = if value { FULL } else { 0 };
        self.flags[cell] &= !(REF_L << side);
    }

    fn set_half_ref(&mut self, cell: usize, side: usize, child: usize) {
        self.cells[cell][side] = child as u64;
        self.flags[cell] |= REF_L << side;
    }

    /// The uniform value of a cell, if both halves are equal uniform bitmaps.
    fn cell_uniform(&self, c: usize) -> Option<bool> {
        let [l, r] = self.cells[c];
        if self.flags[c] & REFS == 0 && l == r && (l == 0 || l == FULL) {
            Some(l == FULL)
        } else {
            None
        }
    }

    /// Folds the child cell under this half into the half if the child is uniform.
    fn try_fold(&mut self, cell: usize, side: usize) {
        if let Some(child) = self.half_ref(cell, side)
            && let Some(v) = self.cell_uniform(child)
        {
            self.release(child);
            self.cells[cell][side] = if v { FULL } else { 0 };
            self.flags[cell] &= !(REF_L << side);
        }
    }

    /// Doubles the root bin, pushing the old root down as the left child.
    fn extend_root(&mut self) {
        let parent = self.root_bin.parent();
        if parent.is_none() {
            return;
        }
        match self.cell_uniform(0) {
            // A uniform root needs no cell of its own one layer down.
            Some(v) => self.cells[0] = [if v { FULL } else { 0 }, 0],
            None => {
                let c = self.alloc(self.cells[0], self.flags[0] & REFS);
                self.cells[0] = [c as u64, 0];
                self.flags[0] = REF_L;
            }
        }
        self.root_bin = parent;
    }

    /// Undoes unneeded growth so that equal maps have equal shapes and memory stays small.
    fn shrink_root(&mut self) {
        while self.root_bin.layer() > MIN_ROOT_LAYER {
            let [l, r] = self.cells[0];
            if self.is_ref(0, 1) || r != 0 {
                break;
            }
            if let Some(c) = self.half_ref(0, 0) {
                self.cells[0] = self.cells[c];
                self.flags[0] = self.flags[c] & REFS;
                self.release(c);
            } else {
                self.cells[0] = [l, l];
                self.flags[0] = 0;
            }
            self.root_bin = self.root_bin.left();
        }
    }

    fn grow_to(&mut self, bin: Bin) {
        while !self.root_bin.contains(bin) && !self.root_bin.is_all() {
            self.extend_root();
        }
    }

    // ----- views -----

    fn root_view(&self) -> View {
        View {
            bin: self.root_bin,
            kind: Kind::Cell(0),
        }
    }

    fn top(&self) -> View {
        if self.root_bin.is_all() {
            self.root_view()
        } else {
            View {
                bin: Bin::ALL,
                kind: Kind::Above,
            }
        }
    }

    fn half_view(&self, cell: usize, side: usize, bin: Bin) -> View {
        let kind = match self.half_ref(cell, side) {
            Some(c) => Kind::Cell(c),
            None => {
                let w = self.cells[cell][side];
                if w == 0 || w == FULL {
                    Kind::Uniform(w == FULL)
                } else if bin.layer() == WORD_LAYER {
                    Kind::Word(w)
                } else {
                    // Not a valid state; read any non-zero high half as filled.
                    Kind::Uniform(true)
                }
            }
        };
        View { bin, kind }
    }

    /// The left (`right == false`) or right child view. Must not be called on a chunk.
    fn child(&self, v: View, right: bool) -> View {
        let bin = if right { v.bin.right() } else { v.bin.left() };
        let kind = match v.kind {
            Kind::Uniform(b) => Kind::Uniform(b),
            Kind::Word(w) => Kind::Word(w),
            Kind::Cell(c) => return self.half_view(c, right as usize, bin),
            Kind::Above => {
                if right {
                    Kind::Uniform(false)
                } else if bin == self.root_bin {
                    Kind::Cell(0)
                } else {
                    Kind::Above
                }
            }
        };
        View { bin, kind }
    }

    /// The view of any bin except NONE.
    fn view(&self, bin: Bin) -> View {
        if bin.contains(self.root_bin) {
            if bin == self.root_bin {
                return self.root_view();
            }
            return View {
                bin,
                kind: Kind::Above,
            };
        }
        if !self.root_bin.contains(bin) {
            return View {
                bin,
                kind: Kind::Uniform(false),
            };
        }
        if bin == self.root_bin {
            return self.root_view();
        }
        // Down from the root by the bits of the bin's first chunk (the root bin starts at
        // chunk 0): under a node of layer `l` the bin lies in the right half when bit
        // `l - 1` is set. The hottest walk in the engine, so no child bin is built on the
        // way.
        let first = bin.base_offset();
        let target = bin.layer();
        let mut cell = 0;
        let mut layer = self.root_bin.layer();
        loop {
            let side = ((first >> (layer - 1)) & 1) as usize;
            let half = layer - 1;
            match self.half_ref(cell, side) {
                Some(child) if half == target => {
                    return View {
                        bin,
                        kind: Kind::Cell(child),
                    };
                }
                Some(child) => {
                    cell = child;
                    layer = half;
                }
                None => {
                    let w = self.cells[cell][side];
                    let kind = if w == 0 || w == FULL {
                        Kind::Uniform(w == FULL)
                    } else if half == WORD_LAYER {
                        Kind::Word(w)
                    } else {
                        // Not a valid state; read any non-zero high half as filled (as
                        // `half_view` does).
                        Kind::Uniform(true)
                    };
                    return View { bin, kind };
                }
            }
        }
    }

    /// The bits of a view at layer <= 6, in the low `2^layer` bits.
    fn bits(&self, v: View) -> u64 {
        let m = len_mask(v.bin);
        match v.kind {
            Kind::Uniform(true) => m,
            Kind::Word(w) => (w >> (v.bin.base_offset() & 63)) & m,
            _ => 0,
        }
    }

    fn state(&self, v: View) -> State {
        match v.kind {
            Kind::Uniform(true) => State::Full,
            Kind::Uniform(false) => State::Empty,
            Kind::Word(_) => {
                let b = self.bits(v);
                if b == 0 {
                    State::Empty
                } else if b == len_mask(v.bin) {
                    State::Full
                } else {
                    State::Mixed
                }
            }
            Kind::Cell(c) => match self.cell_uniform(c) {
                Some(true) => State::Full,
                Some(false) => State::Empty,
                None => State::Mixed,
            },
            Kind::Above => {
                if self.cell_uniform(0) == Some(false) {
                    State::Empty
                } else {
                    State::Mixed
                }
            }
        }
    }

    // ----- writes -----

    /// Applies `act` to exactly the chunks of `target`, which the root must contain.
    fn write(&mut self, target: Bin, act: Act<'_>) {
        if target == self.root_bin {
            let (l, r) = (target.left(), target.right());
            self.apply_half(0, 0, l, act);
            self.apply_half(0, 1, r, act);
        } else {
            self.write_rec(0, self.root_bin, target, act);
        }
        self.shrink_root();
    }

    fn write_rec(&mut self, cell: usize, cbin: Bin, target: Bin, act: Act<'_>) {
        let side = usize::from(!cbin.left().contains(target));
        let hbin = if side == 0 { cbin.left() } else { cbin.right() };
        if hbin == target {
            self.apply_half(cell, side, hbin, act);
        } else if hbin.layer() == WORD_LAYER {
            let mask = word_mask(target);
            let w = self.cells[cell][side];
            self.cells[cell][side] = match act {
                Act::Uniform(true) => w | mask,
                Act::Uniform(false) => w & !mask,
                Act::Merge(src, op) => {
                    let sw = src.word_at(hbin);
                    (w & !mask) | (op.word(w, sw) & mask)
                }
            };
        } else {
            let child = match self.half_ref(cell, side) {
                Some(c) => c,
                None => {
                    let d = self.cells[cell][side];
                    if let Act::Uniform(v) = act
                        && (d != 0) == v
                    {
                        // Already uniformly `v` here: nothing to split or write.
                        return;
                    }
                    let c = self.alloc([d, d], 0);
                    self.set_half_ref(cell, side, c);
                    c
                }
            };
            self.write_rec(child, hbin, target, act);
        }
        self.try_fold(cell, side);
    }

    fn apply_half(&mut self, cell: usize, side: usize, hbin: Bin, act: Act<'_>) {
        match act {
            Act::Uniform(b) => self.set_half_uniform(cell, side, b),
            Act::Merge(src, op) => {
                let sv = src.view(hbin);
                self.merge_half(cell, side, hbin, src, sv, op);
            }
        }
    }

    /// The full 64-bit word of a layer-6 bin.
    fn word_at(&self, bin: Bin) -> u64 {
        let v = self.view(bin);
        match v.kind {
            Kind::Uniform(true) => FULL,
            Kind::Word(w) => w,
            _ => 0,
        }
    }

    fn merge_half(&mut self, cell: usize, side: usize, hbin: Bin, src: &Binmap, sv: View, op: Op) {
        match src.state(sv) {
            State::Full | State::Empty => {
                if let Some(u) = op.on_uniform_src(src.state(sv) == State::Full) {
                    self.set_half_uniform(cell, side, u);
                }
            }
            State::Mixed => {
                if hbin.layer() == WORD_LAYER {
                    let sw = match sv.kind {
                        Kind::Word(w) => w,
                        _ => 0,
                    };
                    let w = self.cells[cell][side];
                    self.cells[cell][side] = op.word(w, sw);
                    return;
                }
                let child = match self.half_ref(cell, side) {
                    Some(c) => c,
                    None => {
                        let d = self.cells[cell][side];
                        if op.keeps(d != 0) {
                            return;
                        }
                        let c = self.alloc([d, d], 0);
                        self.set_half_ref(cell, side, c);
                        c
                    }
                };
                let (lb, rb) = (hbin.left(), hbin.right());
                let (sl, sr) = (src.child(sv, false), src.child(sv, true));
                self.merge_half(child, 0, lb, src, sl, op);
                self.merge_half(child, 1, rb, src, sr, op);
                self.try_fold(cell, side);
            }
        }
    }

    /// Fills every chunk of `bin`. [`Bin::NONE`] is a no-op; [`Bin::ALL`] fills everything.
    pub fn set(&mut self, bin: Bin) {
        if bin.is_none() {
            return;
        }
        self.grow_to(bin);
        self.write(bin, Act::Uniform(true));
    }

    /// Fills chunk `chunk` (a no-op past the last chunk a [`Bin`] can name).
    pub fn set_chunk(&mut self, chunk: u64) {
        if let Some(b) = Bin::chunk(chunk) {
            self.set(b);
        }
    }

    /// Empties chunk `chunk` (a no-op past the last chunk a [`Bin`] can name).
    pub fn reset_chunk(&mut self, chunk: u64) {
        if let Some(b) = Bin::chunk(chunk) {
            self.reset(b);
        }
    }

    /// Empties every chunk of `bin`. [`Bin::NONE`] is a no-op.
    pub fn reset(&mut self, bin: Bin) {
        if bin.is_none() {
            return;
        }
        if bin.contains(self.root_bin) {
            // Everything that is set lies inside the root, hence inside `bin`.
            self.clear();
            return;
        }
        if !self.root_bin.contains(bin) {
            // Bins nest or are disjoint: this one lies in the empty space past the root.
            return;
        }
        self.write(bin, Act::Uniform(false));
    }

    /// Empties everything and returns the arena to its minimum size.
    pub fn clear(&mut self) {
        self.cells.truncate(1);
        self.flags.truncate(1);
        self.cells[0] = [0, 0];
        self.flags[0] = 0;
        self.cells.shrink_to_fit();
        self.flags.shrink_to_fit();
        self.free_head = NIL;
        self.live = 1;
        self.root_bin = Binmap::new().root_bin;
    }

    /// Union: sets every chunk that is set in `src`.
    pub fn fill(&mut self, src: &Binmap) {
        if src.is_clear() {
            return;
        }
        self.grow_to(src.root_bin);
        self.write(self.root_bin, Act::Merge(src, Op::Or));
    }

    /// Intersection: keeps only the chunks that are also set in `src`.
    pub fn intersect(&mut self, src: &Binmap) {
        self.write(self.root_bin, Act::Merge(src, Op::And));
    }

    /// Difference: empties every chunk that is set in `src`.
    pub fn subtract(&mut self, src: &Binmap) {
        self.write(self.root_bin, Act::Merge(src, Op::AndNot));
    }

    /// Makes this map equal to `src`, reusing this map's allocation.
    pub fn copy_from(&mut self, src: &Binmap) {
        self.clone_from(src);
    }

    /// Inside `range`, makes this map equal to `src`; outside it, leaves the map unchanged.
    pub fn copy_range(&mut self, src: &Binmap, range: Bin) {
        if range.is_none() {
            return;
        }
        if range.contains(self.root_bin) && range.contains(src.root_bin) {
            self.copy_from(src);
            return;
        }
        self.grow_to(range);
        self.write(range, Act::Merge(src, Op::Copy));
    }

    // ----- queries -----

    /// True if every chunk of `bin` is set (false for [`Bin::NONE`]).
    pub fn is_filled(&self, bin: Bin) -> bool {
        !bin.is_none() && self.state(self.view(bin)) == State::Full
    }

    /// True if chunk `chunk` is set (false past the last chunk a [`Bin`] can name).
    pub fn has_chunk(&self, chunk: u64) -> bool {
        Bin::chunk(chunk).is_some_and(|b| self.is_filled(b))
    }

    /// True if no chunk of `bin` is set (true for [`Bin::NONE`]).
    pub fn is_empty(&self, bin: Bin) -> bool {
        bin.is_none() || self.state(self.view(bin)) == State::Empty
    }

    /// True if nothing at all is set.
    pub fn is_clear(&self) -> bool {
        self.cell_uniform(0) == Some(false)
    }

    /// The largest bin containing `bin` that is uniformly filled or uniformly empty, or
    /// [`Bin::NONE`] if `bin` itself is mixed (or is NONE).
    pub fn cover(&self, bin: Bin) -> Bin {
        if bin.is_none() {
            return Bin::NONE;
        }
        let mut v = self.top();
        loop {
            if self.state(v) != State::Mixed {
                return v.bin;
            }
            if v.bin == bin || v.bin.is_base() {
                return Bin::NONE;
            }
            v = self.child(v, !v.bin.left().contains(bin));
        }
    }

    /// The layer of the smallest bin containing `bin` (`bin` itself included) that has a
    /// chunk set, or `None` if none has: one walk down from the top, where a look-up per
    /// layer would walk down once for each.
    pub fn lowest_set_ancestor(&self, bin: Bin) -> Option<u32> {
        if bin.is_none() {
            return None;
        }
        if self.root_bin.contains(bin) {
            return self.lowest_set_ancestor_inside(bin);
        }
        let mut v = self.top();
        let mut above: Option<u32> = None;
        loop {
            match self.state(v) {
                State::Full => return Some(bin.layer()),
                // Everything from here down is empty; the bin walked through to get here
                // was not.
                State::Empty => return above,
                State::Mixed => {
                    if v.bin == bin || v.bin.is_base() {
                        return Some(bin.layer());
                    }
                    above = Some(v.bin.layer());
                    v = self.child(v, !v.bin.left().contains(bin));
                }
            }
        }
    }

    /// [`lowest_set_ancestor`](Self::lowest_set_ancestor) of a bin inside the root bin
    /// (nothing is set outside it): down from the root cell by the bits of the bin's first
    /// chunk, as [`view`](Self::view) walks, keeping the layer of the last cell that was
    /// neither full nor empty.
    fn lowest_set_ancestor_inside(&self, bin: Bin) -> Option<u32> {
        let target = bin.layer();
        match self.cell_uniform(0) {
            Some(true) => return Some(target),
            Some(false) => return None,
            None if bin == self.root_bin => return Some(target),
            None => {}
        }
        let first = bin.base_offset();
        let mut cell = 0;
        // `cell` covers a bin of this layer, which has chunks set and chunks not.
        let mut layer = self.root_bin.layer();
        loop {
            let side = ((first >> (layer - 1)) & 1) as usize;
            let half = layer - 1;
            match self.half_ref(cell, side) {
                Some(child) => match self.cell_uniform(child) {
                    Some(true) => return Some(target),
                    Some(false) => return Some(layer),
                    None if half == target => return Some(target),
                    None => {
                        cell = child;
                        layer = half;
                    }
                },
                None => {
                    let w = self.cells[cell][side];
                    if w == 0 {
                        return Some(layer);
                    }
                    if w == FULL || half != WORD_LAYER {
                        // Full, or (not a valid state) a non-zero high half, read as full.
                        return Some(target);
                    }
                    // A bitmap word: the lowest of the bin's ancestors inside it with a
                    // bit set (the word itself has one).
                    let offset = first & 63;
                    return (target..WORD_LAYER)
                        .find(|&l| {
                            let start = (offset >> l) << l;
                            let len = 1u64 << l;
                            (w >> start) & (FULL >> (64 - len)) != 0
                        })
                        .or(Some(WORD_LAYER));
                }
            }
        }
    }

    /// First chunk in `from..end` whose value is `target`.
    fn first(&self, v: View, target: bool, from: u64, end: u64) -> Option<u64> {
        let lo = v.bin.base_offset();
        let hi = lo + v.bin.base_length();
        if hi <= from || lo >= end {
            return None;
        }
        match self.state(v) {
            State::Full => target.then_some(lo.max(from)),
            State::Empty => (!target).then_some(lo.max(from)),
            State::Mixed if v.bin.layer() <= WORD_LAYER => {
                let mut b = self.bits(v);
                if !target {
                    b = !b & len_mask(v.bin);
                }
                if from > lo {
                    b &= !((1u64 << (from - lo)) - 1);
                }
                if end < hi {
                    b &= (1u64 << (end - lo)) - 1;
                }
                (b != 0).then(|| lo + u64::from(b.trailing_zeros()))
            }
            State::Mixed => self
                .first(self.child(v, false), target, from, end)
                .or_else(|| self.first(self.child(v, true), target, from, end)),
        }
    }

    /// [`Binmap::first`] over the whole space, starting at the root rather than at
    /// [`Bin::ALL`] (everything right of the root is empty), which saves up to 56 levels.
    fn first_top(&self, target: bool, from: u64, end: u64) -> Option<u64> {
        let root_end = self.root_bin.base_length();
        let inside = if from < root_end {
            self.first(self.root_view(), target, from, end.min(root_end))
        } else {
            None
        };
        match inside {
            None if !target && end > root_end => Some(from.max(root_end)),
            r => r,
        }
    }

    fn find_value(&self, target: bool, within: Range<u64>) -> Option<Bin> {
        let end = within.end.min(END);
        if within.start >= end {
            return None;
        }
        let p = self.first_top(target, within.start, end)?;
        let q = self.first_top(!target, p, end).unwrap_or(end);
        let align = if p == 0 { 63 } else { p.trailing_zeros() };
        let layer = align.min(q.saturating_sub(p).max(1).ilog2());
        Bin::new(layer, p >> layer)
    }

    /// The leftmost empty chunk `p` in `within`, widened to the largest aligned bin that
    /// starts at `p` and is entirely empty and entirely inside `within`.
    pub fn find_empty(&self, within: Range<u64>) -> Option<Bin> {
        self.find_value(false, within)
    }

    /// Like [`Binmap::find_empty`], for filled chunks.
    pub fn find_filled(&self, within: Range<u64>) -> Option<Bin> {
        self.find_value(true, within)
    }

    /// A maximal bin inside `range` in which every map `maps[i].0` is uniformly
    /// `maps[i].1` (true = filled, false = empty). With `twist` 0 it is the leftmost; else
    /// the first in the order of [`Bin::twisted`]`(twist)`: at a node of layer `l + 1`
    /// the right child is scanned first when bit `l` of `twist` is set.
    /// [`Binmap::find_complement`] and [`Binmap::find_match`] are the two-map cases.
    ///
    /// Cost: O(depth) when the first subtree tried qualifies; at worst every cell where
    /// the maps are all mixed is visited (as in libswift), e.g. when `dst` already holds
    /// all of a fragmented `src`.
    pub fn find_all<const N: usize>(
        maps: [(&Binmap, bool); N],
        range: Bin,
        twist: u64,
    ) -> Option<Bin> {
        if range.is_none() {
            return None;
        }
        let views = maps.map(|(m, _)| m.view(range));
        Self::find_rec(&maps, views, twist)
    }

    fn find_rec<const N: usize>(
        maps: &[(&Binmap, bool); N],
        views: [View; N],
        twist: u64,
    ) -> Option<Bin> {
        let bin = views.first().map_or(Bin::NONE, |v| v.bin);
        let mut all = true;
        for ((m, want), v) in maps.iter().zip(views.iter()) {
            match m.state(*v) {
                State::Mixed => all = false,
                s => {
                    if (s == State::Full) != *want {
                        return None;
                    }
                }
            }
        }
        if all {
            return Some(bin);
        }
        if bin.layer() <= WORD_LAYER {
            // Inside one word: prune with a single bitwise test.
            let lm = len_mask(bin);
            let mut acc = lm;
            for ((m, want), v) in maps.iter().zip(views.iter()) {
                let b = m.bits(*v);
                acc &= if *want { b } else { !b };
            }
            if acc & lm == 0 {
                return None;
            }
        }
        if bin.is_base() {
            // A chunk is never mixed; this only guards the shift below.
            return None;
        }
        let right_first = (twist >> (bin.layer() - 1)) & 1 == 1;
        for right in [right_first, !right_first] {
            let mut cv = views;
            for ((m, _), v) in maps.iter().zip(cv.iter_mut()) {
                *v = m.child(*v, right);
            }
            if let Some(found) = Self::find_rec(maps, cv, twist) {
                return Some(found);
            }
        }
        None
    }

    /// A maximal bin inside `range` that is filled in `src` and empty in `dst`: the
    /// leftmost with `twist` 0, otherwise the first in [`Bin::twisted`] order (libswift's
    /// randomised scan, so that channels do not all pick the same chunk).
    pub fn find_complement(dst: &Binmap, src: &Binmap, range: Bin, twist: u64) -> Option<Bin> {
        Self::find_all([(src, true), (dst, false)], range, twist)
    }

    /// A maximal bin inside `range` that is filled in both maps, with the conventions of
    /// [`Binmap::find_complement`].
    pub fn find_match(a: &Binmap, b: &Binmap, range: Bin, twist: u64) -> Option<Bin> {
        Self::find_all([(a, true), (b, true)], range, twist)
    }

    fn count_rec(&self, v: View) -> u64 {
        match self.state(v) {
            State::Empty => 0,
            State::Full => v.bin.base_length(),
            State::Mixed if v.bin.layer() <= WORD_LAYER => u64::from(self.bits(v).count_ones()),
            State::Mixed => self
                .count_rec(self.child(v, false))
                .saturating_add(self.count_rec(self.child(v, true))),
        }
    }

    /// Number of filled chunks (a completely filled map counts `2^63`). O(cells).
    pub fn count_filled(&self) -> u64 {
        self.count_rec(self.top())
    }

    /// Number of filled chunks inside `range` (0 for [`Bin::NONE`]). O(cells inside).
    pub fn count_filled_in(&self, range: Bin) -> u64 {
        if range.is_none() {
            return 0;
        }
        self.count_rec(self.view(range))
    }

    /// Maximal runs of filled chunks, left to right, as half-open ranges.
    pub fn filled_ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        FilledRanges { map: self, next: 0 }
    }

    /// Live (allocated, not free) cells, including the root.
    pub fn cells(&self) -> usize {
        self.live
    }

    /// Bytes of heap held by the arena (its capacity, free cells included).
    pub fn heap_bytes(&self) -> usize {
        self.cells.capacity() * core::mem::size_of::<[u64; 2]>() + self.flags.capacity()
    }

    /// Debugging aid: checks the structural invariants (every reference reaches a live
    /// cell exactly once, no foldable cell, high bitmaps uniform, minimal root, live count).
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut seen = vec![false; self.cells.len()];
        let mut reached = 0usize;
        let mut stack = vec![(0usize, self.root_bin)];
        while let Some((c, bin)) = stack.pop() {
            if c >= self.cells.len() || self.flags[c] & FREE != 0 {
                return Err(format!("cell {c} is free or out of range"));
            }
            if seen[c] {
                return Err(format!("cell {c} reached twice"));
            }
            seen[c] = true;
            reached += 1;
            if bin.layer() < MIN_ROOT_LAYER {
                return Err(format!("cell {c} at layer {}", bin.layer()));
            }
            if c != 0 && self.cell_uniform(c).is_some() {
                return Err(format!("cell {c} at {bin:?} should have been folded"));
            }
            for side in 0..2 {
                let hbin = if side == 0 { bin.left() } else { bin.right() };
                match self.half_ref(c, side) {
                    Some(child) => {
                        if hbin.layer() == WORD_LAYER {
                            return Err(format!("reference at word layer in cell {c}"));
                        }
                        stack.push((child, hbin));
                    }
                    None => {
                        let w = self.cells[c][side];
                        if hbin.layer() > WORD_LAYER && w != 0 && w != FULL {
                            return Err(format!("non-uniform high bitmap in cell {c}"));
                        }
                    }
                }
            }
        }
        if reached != self.live {
            return Err(format!("{reached} reachable cells, {} live", self.live));
        }
        let free = self.flags.iter().filter(|f| **f & FREE != 0).count();
        if free + self.live != self.cells.len() {
            return Err("free and live cells do not add up".into());
        }
        if self.root_bin.layer() > MIN_ROOT_LAYER && !self.is_ref(0, 1) && self.cells[0][1] == 0 {
            return Err("root could shrink".into());
        }
        if self.root_bin.base_offset() != 0 {
            return Err("root not at offset 0".into());
        }
        Ok(())
    }

    fn eq_rec(a: &Binmap, av: View, b: &Binmap, bv: View) -> bool {
        let (sa, sb) = (a.state(av), b.state(bv));
        if sa != sb {
            return false;
        }
        if sa != State::Mixed {
            return true;
        }
        if av.bin.layer() <= WORD_LAYER {
            return a.bits(av) == b.bits(bv);
        }
        Self::eq_rec(a, a.child(av, false), b, b.child(bv, false))
            && Self::eq_rec(a, a.child(av, true), b, b.child(bv, true))
    }
}

/// Iterator behind [`Binmap::filled_ranges`]: two O(log N) searches per run.
struct FilledRanges<'a> {
    map: &'a Binmap,
    next: u64,
}

impl Iterator for FilledRanges<'_> {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        if self.next >= END {
            return None;
        }
        let Some(a) = self.map.first_top(true, self.next, END) else {
            self.next = END;
            return None;
        };
        let b = self.map.first_top(false, a, END).unwrap_or(END);
        self.next = b;
        Some(a..b)
    }
}

impl Default for Binmap {
    fn default() -> Binmap {
        Binmap::new()
    }
}

impl Clone for Binmap {
    fn clone(&self) -> Binmap {
        Binmap {
            cells: self.cells.clone(),
            flags: self.flags.clone(),
            free_head: self.free_head,
            live: self.live,
            root_bin: self.root_bin,
        }
    }

    /// Reuses this map's allocation.
    fn clone_from(&mut self, src: &Binmap) {
        self.cells.clone_from(&src.cells);
        self.flags.clone_from(&src.flags);
        self.free_head = src.free_head;
        self.live = src.live;
        self.root_bin = src.root_bin;
    }
}

/// Semantic equality: the same chunks are set, whatever the arena layout. O(cells).
impl PartialEq for Binmap {
    fn eq(&self, other: &Binmap) -> bool {
        Binmap::eq_rec(self, self.top(), other, other.top())
    }
}

impl Eq for Binmap {}

impl fmt::Debug for Binmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut runs: Vec<Range<u64>> = self.filled_ranges().take(9).collect();
        let more = runs.len() > 8;
        runs.truncate(8);
        f.debug_struct("Binmap")
            .field("root", &self.root_bin)
            .field("cells", &self.live)
            .field("filled", &runs)
            .field("more", &more)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(layer: u32, offset: u64) -> Bin {
        Bin::new(layer, offset).unwrap()
    }

    fn c(i: u64) -> Bin {
        Bin::chunk(i).unwrap()
    }

    fn ok(m: &Binmap) {
        m.check_invariants().unwrap();
    }

    #[test]
    fn chunk_level_set_and_query() {
        let mut m = Binmap::new();
        assert!(!m.has_chunk(5));
        m.set_chunk(5);
        ok(&m);
        assert!(m.has_chunk(5) && m.is_filled(c(5)));
        assert!(!m.has_chunk(4) && !m.has_chunk(6));
        m.reset_chunk(5);
        ok(&m);
        assert!(!m.has_chunk(5) && m.is_empty(Bin::ALL));
    }

    #[test]
    fn chunk_level_agrees_with_wider_bins() {
        let mut m = Binmap::new();
        m.set(b(2, 1));
        assert!((4..8).all(|i| m.has_chunk(i)));
        assert!(!m.has_chunk(3) && !m.has_chunk(8));
        m.reset_chunk(6);
        ok(&m);
        assert!(m.has_chunk(5) && !m.has_chunk(6) && m.has_chunk(7));
        assert!(!m.is_filled(b(2, 1)));
        m.set_chunk(6);
        ok(&m);
        assert!(m.is_filled(b(2, 1)));
    }

    #[test]
    fn chunk_level_far_chunks_grow_the_map() {
        let mut m = Binmap::new();
        m.set_chunk(1 << 40);
        ok(&m);
        assert!(m.has_chunk(1 << 40) && !m.has_chunk((1 << 40) - 1));
        m.reset_chunk(1 << 40);
        ok(&m);
        assert!(!m.has_chunk(1 << 40));
    }

    #[test]
    fn chunk_level_past_the_last_nameable_chunk_is_a_no_op() {
        let mut m = Binmap::new();
        m.set(Bin::ALL);
        assert!(Bin::chunk(u64::MAX).is_none());
        assert!(!m.has_chunk(u64::MAX));
        m.reset_chunk(u64::MAX);
        ok(&m);
        assert!(m.is_filled(Bin::ALL));
        let mut e = Binmap::new();
        e.set_chunk(u64::MAX);
        ok(&e);
        assert!(e.is_empty(Bin::ALL));
    }

    #[test]
    fn set_one_layer_up() {
        let mut m = Binmap::new();
        m.set(b(1, 0));
        ok(&m);
        assert!(m.is_filled(c(0)) && m.is_filled(c(1)));
        assert!(!m.is_filled(b(2, 0)) && !m.is_empty(b(2, 0)));
        assert!(m.is_empty(c(2)));
        assert_eq!(m.count_filled(), 2);
        assert_eq!(m.cover(c(0)), b(1, 0));
        assert_eq!(m.cover(b(2, 0)), Bin::NONE);
    }

    #[test]
    fn chess_16() {
        let mut m = Binmap::new();
        for i in 0..8 {
            m.set(c(2 * i));
        }
        ok(&m);
        for i in 0..16 {
            assert_eq!(m.is_filled(c(i)), i % 2 == 0);
            assert_eq!(m.is_empty(c(i)), i % 2 == 1);
        }
        for i in 0..8 {
            assert!(!m.is_filled(b(1, i)) && !m.is_empty(b(1, i)));
        }
        assert_eq!(m.count_filled(), 8);
        assert_eq!(m.filled_ranges().count(), 8);
        assert_eq!(m.find_empty(0..16), Some(c(1)));
        assert_eq!(m.find_filled(1..16), Some(c(2)));
        for i in 0..8 {
            m.set(c(2 * i + 1));
        }
        ok(&m);
        assert!(m.is_filled(b(4, 0)));
        assert_eq!(m.cells(), 1);
    }

    #[test]
    fn staircase_fills_bin_44() {
        let mut m = Binmap::new();
        for i in 0..44 {
            m.set(b(i, 1));
            ok(&m);
        }
        assert!(!m.is_filled(b(44, 0)));
        m.set(c(0));
        ok(&m);
        assert!(m.is_filled(b(44, 0)));
        assert!(!m.is_filled(b(45, 0)));
        assert_eq!(m.cells(), 1, "{m:?}");
        assert_eq!(m.count_filled(), 1 << 44);
    }

    #[test]
    fn hole() {
        let mut m = Binmap::new();
        m.set(b(8, 0));
        m.reset(b(6, 1));
        m.reset(b(6, 2));
        ok(&m);
        assert!(m.is_filled(b(6, 0)) && m.is_filled(b(6, 3)));
        assert!(m.is_empty(b(6, 1)) && m.is_empty(b(6, 2)));
        assert!(!m.is_filled(b(8, 0)) && !m.is_empty(b(8, 0)));
        assert!(!m.is_filled(b(7, 1)) && !m.is_empty(b(7, 1)));
        assert_eq!(m.count_filled(), 128);
        let runs: Vec<_> = m.filled_ranges().collect();
        assert_eq!(runs, [0..64, 192..256]);
    }

    #[test]
    fn find_leftmost_hole() {
        let mut m = Binmap::new();
        m.set(b(4, 0));
        m.reset(b(1, 1));
        m.reset(c(7));
        ok(&m);
        let e = m.find_empty(0..16).unwrap();
        assert_eq!(e.base_left(), c(2));
        assert_eq!(e, b(1, 1));
        assert_eq!(m.find_empty(4..16), Some(c(7)));
        assert_eq!(m.find_empty(8..16), None);
        assert_eq!(m.find_empty(8..17), Some(c(16)));
        assert_eq!(m.find_empty(16..1 << 63), Some(b(4, 1)));
        assert_eq!(m.find_empty(32..1 << 63), Some(b(5, 1)));
    }

    #[test]
    fn find_filtered() {
        let mut data = Binmap::new();
        data.set(b(2, 0));
        data.set(b(2, 2));
        data.set(b(1, 7));
        let mut filter = Binmap::new();
        filter.set(b(4, 0));
        filter.reset(b(2, 1));
        filter.reset(b(1, 4));
        filter.reset(c(13));
        assert_eq!(
            Binmap::find_complement(&data, &filter, b(4, 0), 0),
            Some(c(12))
        );
        for twist in [1, 2, 5, 0xFF, u64::MAX] {
            assert_eq!(
                Binmap::find_complement(&data, &filter, b(4, 0), twist),
                Some(c(12))
            );
        }
        assert_eq!(Binmap::find_complement(&data, &filter, b(3, 0), 0), None);
    }

    #[test]
    fn cover() {
        let mut m = Binmap::new();
        m.set(b(2, 0));
        m.set(b(4, 1));
        assert_eq!(m.cover(c(30)), b(4, 1));
        assert_eq!(m.cover(c(3)), b(2, 0));
        assert_eq!(m.cover(c(4)), b(2, 1));
        assert_eq!(m.cover(b(5, 0)), Bin::NONE);
        assert_eq!(m.cover(Bin::NONE), Bin::NONE);
        assert_eq!(m.cover(c(1000)), b(9, 1));
        assert_eq!(Binmap::new().cover(c(5)), Bin::ALL);
    }

    #[test]
    fn seq_length() {
        let mut m = Binmap::new();
        for x in [b(3, 0), b(1, 4), c(10), b(3, 2)] {
            m.set(x);
        }
        assert_eq!(m.find_empty(0..1 << 63).unwrap().base_offset(), 11);
        assert_eq!(m.find_empty(0..1 << 63), Some(c(11)));
        assert_eq!(m.find_empty(12..1 << 63), Some(b(2, 3)));
    }

    #[test]
    fn alloc_collapses() {
        let mut m = Binmap::new();
        m.set(b(6, 0));
        m.set(b(6, 1));
        assert_eq!(m.cells(), 1);
        m.reset(b(6, 0));
        m.reset(b(6, 1));
        assert_eq!(m.cells(), 1);
        assert!(m.is_clear());
        m.set(c(1_000_000));
        assert!(m.cells() > 1);
        m.reset(c(1_000_000));
        assert_eq!(m.cells(), 1);
        assert_eq!(m, Binmap::new());
        ok(&m);
    }

    #[test]
    fn find_respects_bound() {
        let mut m = Binmap::new();
        for x in Bin::peaks(26) {
            m.set(x);
        }
        assert_eq!(m.find_empty(0..26), None);
        assert_eq!(m.find_empty(0..27), Some(c(26)));
        assert_eq!(m.find_empty(3..3), None);
        assert_eq!(m.find_filled(0..26), Some(b(4, 0)));
        assert_eq!(m.find_filled(0..15), Some(b(3, 0)));
        assert_eq!(m.find_filled(26..1000), None);
        let runs: Vec<_> = m.filled_ranges().collect();
        assert_eq!(runs, vec![0..26]);
    }

    #[test]
    fn extremes_do_not_panic() {
        let mut m = Binmap::new();
        m.set(Bin::NONE);
        m.reset(Bin::NONE);
        assert!(m.is_clear() && !m.is_filled(Bin::NONE) && m.is_empty(Bin::NONE));
        m.set(Bin::ALL);
        ok(&m);
        assert_eq!(m.count_filled(), 1 << 63);
        assert_eq!(m.cells(), 1);
        assert_eq!(m.find_empty(0..u64::MAX), None);
        assert_eq!(m.find_filled(0..u64::MAX), Some(Bin::ALL));
        assert_eq!(m.filled_ranges().collect::<Vec<_>>(), vec![0..1 << 63]);
        let last = Bin::from_raw(u64::MAX - 1);
        m.reset(last);
        ok(&m);
        assert_eq!(m.count_filled(), (1 << 63) - 1);
        assert_eq!(m.find_empty(0..u64::MAX), Some(last));
        m.reset(b(62, 0));
        ok(&m);
        assert_eq!(m.find_filled(0..u64::MAX), Some(b(61, 2)));
        assert_eq!(m.count_filled_in(b(62, 1)), (1 << 62) - 1);
        m.reset(Bin::ALL);
        assert!(m.is_clear());
        assert_eq!(m.cells(), 1);
        m.set(last);
        ok(&m);
        assert_eq!(m.cover(last), last);
        assert_eq!(m.count_filled(), 1);
        let mut n = Binmap::new();
        n.set(b(62, 1));
        assert_eq!(Binmap::find_complement(&m, &n, Bin::ALL, 0), Some(b(61, 2)));
        assert_eq!(Binmap::find_match(&m, &n, Bin::ALL, 0), Some(last));
        assert_eq!(Binmap::find_match(&m, &n, Bin::NONE, 0), None);
        assert_eq!(m.count_filled_in(Bin::NONE), 0);
        for raw in [0, 1, u64::MAX - 1, 1 << 63, 0x7FFF_FFFF, (1 << 62) - 1] {
            let x = Bin::from_raw(raw);
            let mut k = m.clone();
            k.set(x);
            k.copy_range(&n, x);
            k.reset(x);
            let _ = (k.cover(x), k.is_filled(x), k.count_filled_in(x));
            let _ = Binmap::find_complement(&k, &n, x, u64::MAX);
            ok(&k);
        }
    }

    #[test]
    fn set_operations() {
        let mut a = Binmap::new();
        a.set(b(3, 0));
        a.set(c(100));
        let mut x = Binmap::new();
        x.set(b(2, 1));
        x.set(b(10, 3));
        let mut u = a.clone();
        u.fill(&x);
        ok(&u);
        assert_eq!(u.count_filled(), 8 + 1 + 1024);
        let mut i = a.clone();
        i.intersect(&x);
        ok(&i);
        assert_eq!(i.filled_ranges().collect::<Vec<_>>(), vec![4..8]);
        let mut d = a.clone();
        d.subtract(&x);
        ok(&d);
        assert_eq!(d.filled_ranges().collect::<Vec<_>>(), [0..4, 100..101]);
        let mut k = a.clone();
        k.copy_range(&x, b(3, 0));
        ok(&k);
        assert_eq!(k.filled_ranges().collect::<Vec<_>>(), [4..8, 100..101]);
        k.copy_range(&x, Bin::ALL);
        assert_eq!(k, x);
        k.copy_from(&a);
        assert_eq!(k, a);
        assert_ne!(k, x);
        k.clear();
        assert_eq!(k, Binmap::new());
        assert_eq!(k.cells(), 1);
    }

    /// Every window over a 200-chunk pattern (as libswift's binstest4 does for every
    /// start), against a brute-force scan.
    #[test]
    fn find_every_window() {
        let bits: Vec<bool> = (0..200u64)
            .map(|i| match i {
                // Runs that end exactly one chunk before a word boundary.
                60..=62 | 64..=69 | 127 => true,
                63 | 120..=126 => false,
                _ => (i * 2_654_435_761) % 7 < 3,
            })
            .collect();
        let mut m = Binmap::new();
        for (i, on) in bits.iter().enumerate() {
            if *on {
                m.set(c(i as u64));
            }
        }
        ok(&m);
        for value in [false, true] {
            for a in 0..=200u64 {
                for e in a..=200u64 {
                    let p = (a..e).find(|i| bits[*i as usize] == value);
                    let want = p.map(|p| {
                        let q = (p..e).find(|i| bits[*i as usize] != value).unwrap_or(e);
                        let mut x = c(p);
                        while x.parent().base_offset() == p && x.parent().last_chunk() < q {
                            x = x.parent();
                        }
                        x
                    });
                    let got = if value {
                        m.find_filled(a..e)
                    } else {
                        m.find_empty(a..e)
                    };
                    assert_eq!(got, want, "value {value} window {a}..{e}");
                }
            }
        }
    }

    #[test]
    fn memory_of_solid_maps_is_constant() {
        let mut sizes = Vec::new();
        for layer in [10, 20, 40, 62] {
            let mut m = Binmap::new();
            m.set(b(layer, 0));
            ok(&m);
            sizes.push(m.cells());
            let mut m = Binmap::new();
            m.set(b(layer, 1));
            sizes.push(m.cells());
        }
        assert!(sizes.iter().all(|s| *s == 1), "{sizes:?}");
    }
}
