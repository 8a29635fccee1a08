//! What a chunk proves about the content's length, whatever length a swarm URI states.
//!
//! The URI's length fixes the tree's shape, but the root does not fix the length: with
//! zero padding and no separation of leaves from inner nodes, the peaks of one chunk count
//! can rebuild the root of another (8 + 2 chunks and 16 + 4 give one root). So peaks alone,
//! which any peer can pick from the real tree, prove nothing about the length. Chunk data
//! does. Under a shape whose leaves sit above the real leaves, a "chunk" can hash up to the
//! root only if it is the concatenation of two real child hashes, exactly twice the hash
//! size; under one whose leaves sit below them, only if a real chunk is that size; and where
//! a shape puts a leaf past the real end, only if a hash is all-zero. Any other data that
//! hashes up to the root under some shape is the real content's chunk at that position:
//! a short one is the last chunk, so the content ends with it; a full one means the content
//! reaches at least its end. Such proof is the URI's fault, never the sender's.

use super::{Hash, VerifyingTree};
use crate::Bin;
use core::fmt;

/// What a genuine chunk shows of the content's length: it lies in `min..=max` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentLength {
    /// The fewest bytes the content can have.
    pub min: u64,
    /// The most bytes the content can have.
    pub max: u64,
}

impl ContentLength {
    /// True if `stated` bytes cannot be the content's length.
    pub fn contradicts(self, stated: u64) -> bool {
        !(self.min..=self.max).contains(&stated)
    }
}

impl fmt::Display for ContentLength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{} bytes", self.min)
        } else {
            write!(f, "between {} and {} bytes", self.min, self.max)
        }
    }
}

/// A content length given to a swarm (a URI's `len=`) that a genuine chunk disproves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongLength {
    /// The length given, in bytes.
    pub stated: u64,
    /// What the chunk shows.
    pub shown: ContentLength,
}

impl fmt::Display for WrongLength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the content length given (len={}) is wrong: a chunk that verifies against the \
             root shows the content is {}",
            self.stated, self.shown
        )
    }
}

/// Checks chunks that failed verification against the length a swarm was given for what
/// they prove of the real one. It keeps the other shape of the tree that genuine chunks
/// revealed (with the hashes they verified), since a sender sends the peaks once and the
/// chunks after them lean on hashes of earlier datagrams.
#[derive(Clone, Debug, Default)]
pub struct LengthCheck {
    /// The tree in the shape of the last peaks that a genuine chunk verified under.
    other_shape: Option<VerifyingTree>,
    /// What disproved the length given, once something did.
    disproved: Option<ContentLength>,
}

impl LengthCheck {
    /// What disproved the length given, if anything did.
    pub fn disproved(&self) -> Option<ContentLength> {
        self.disproved
    }

    /// What `data`, sent as chunk `chunk` with `hashes` (the peaks and uncles that came
    /// with it), proves of the content's length. It must hash up to the root under
    /// `stated`, the tree of the length the swarm was given (its own length aside), under
    /// the other shape kept from earlier chunks, or under the shape of peaks among
    /// `hashes` that rebuild the root (only with `search_peaks`: the search costs up to
    /// dozens of tree rebuilds). `None`: it proves nothing (it does not verify, or it is
    /// exactly two hashes long). Nothing is stored in `stated`. Once a result contradicts
    /// `stated`'s length it is kept as [`disproved`](Self::disproved).
    pub fn check(
        &mut self,
        stated: &VerifyingTree,
        chunk: u64,
        data: &[u8],
        hashes: &[(Bin, Hash)],
        search_peaks: bool,
    ) -> Option<ContentLength> {
        let shown = self.shown(stated, chunk, data, hashes, search_peaks)?;
        if let Some(len) = stated.content_len()
            && shown.contradicts(len)
            && self.disproved.is_none()
        {
            self.disproved = Some(shown);
        }
        Some(shown)
    }

    fn shown(
        &mut self,
        stated: &VerifyingTree,
        chunk: u64,
        data: &[u8],
        hashes: &[(Bin, Hash)],
        search_peaks: bool,
    ) -> Option<ContentLength> {
        let cs = stated.chunk_size();
        if data.is_empty() || data.len() > cs || data.len() == 2 * stated.algorithm().size() {
            return None;
        }
        let leaf = Bin::chunk(chunk)?;
        let uncles: Vec<(Bin, Hash)> = hashes
            .iter()
            .filter(|(b, _)| !b.contains(leaf) && b.parent().contains(leaf))
            .copied()
            .collect();
        // The other shape first, as it keeps what it verified for the chunks that lean on
        // it; then one of peaks sent now; then the stated one.
        let cs = cs as u64;
        let len = data.len() as u64;
        if let Some(shape) = self.other_shape.as_mut()
            && shape.verify_chunk(chunk, data, &uncles).is_ok()
        {
            return bounds(shape, leaf, len, cs);
        }
        let searched = search_peaks.then(|| peak_readings(leaf, stated.root(), hashes));
        if let Some(shape) = searched.into_iter().flatten().find_map(|peaks| {
            let mut shape =
                VerifyingTree::new_unknown_size(stated.algorithm(), stated.root(), cs as usize)
                    .ok()?;
            shape.add_peaks(&peaks).ok()?;
            shape.verify_chunk(chunk, data, &uncles).ok()?;
            Some(shape)
        }) {
            let shown = bounds(&shape, leaf, len, cs);
            self.other_shape = Some(shape);
            return shown;
        }
        if stated.hashes_up(chunk, data, &padded(stated, leaf, data, &uncles)) {
            // The stated shape's padding is assumed, not verified: only its layers count.
            let root_layer = stated.root_bin()?.layer();
            return span_bounds(root_layer, leaf, len, cs);
        }
        None
    }
}

/// `uncles` with, for a short chunk, zero for every sibling to its right on the way up
/// that `stated` does not know: a genuine short chunk is the last, so all to its right is
/// padding, whose hashes a sender leaves out as the receiver's to derive.
fn padded(
    stated: &VerifyingTree,
    leaf: Bin,
    data: &[u8],
    uncles: &[(Bin, Hash)],
) -> Vec<(Bin, Hash)> {
    let mut out = uncles.to_vec();
    if data.len() >= stated.chunk_size() {
        return out;
    }
    let mut node = leaf;
    while stated
        .root_bin()
        .is_some_and(|r| r != node && r.contains(node))
    {
        let sib = node.sibling();
        if node.is_left()
            && stated.verified_hash(sib).is_none()
            && !out.iter().any(|(b, _)| *b == sib)
        {
            out.push((sib, Hash::zero(stated.algorithm())));
        }
        node = node.parent();
    }
    out
}

/// The content lengths a genuine chunk of `len` bytes at `leaf` allows, in a tree whose
/// root is at `root_layer`. It climbs to the root in as many steps as the real tree has
/// layers, so the real chunk count is above half the root's span and at most all of it;
/// a short chunk is the last.
fn span_bounds(root_layer: u32, leaf: Bin, len: u64, cs: u64) -> Option<ContentLength> {
    let span = 1u64.checked_shl(root_layer)?;
    let mut min = if span > 1 {
        (span / 2).checked_mul(cs)?.checked_add(1)?
    } else {
        1
    };
    let mut max = span.checked_mul(cs)?;
    let end = leaf.base_offset().checked_mul(cs)?.checked_add(len)?;
    if len < cs {
        (min, max) = (end, end);
    } else {
        min = min.max(end);
    }
    (min <= max).then_some(ContentLength { min, max })
}

/// [`span_bounds`] in `shape`, where the chunk at `leaf` just verified, narrowed by the
/// siblings to the right of its path: each is now verified, so one that is all-zero is
/// real padding (the content ends before it) and any other holds content.
fn bounds(shape: &VerifyingTree, leaf: Bin, len: u64, cs: u64) -> Option<ContentLength> {
    let root = shape.root_bin()?;
    let ContentLength { mut min, mut max } = span_bounds(root.layer(), leaf, len, cs)?;
    let mut node = leaf;
    while node != root && root.contains(node) {
        let sib = node.sibling();
        if node.is_left()
            && let Some(hash) = shape.verified_hash(sib)
        {
            let start = sib.base_offset().checked_mul(cs)?;
            if hash.is_zero() {
                max = max.min(start);
            } else {
                min = min.max(start.saturating_add(1));
            }
        }
        node = node.parent();
    }
    (min <= max).then_some(ContentLength { min, max })
}

/// The ways `hashes` can be read as peaks of the tree holding `leaf`, most likely first.
/// Peaks come first in a datagram, then uncles, and uncles can look like peaks (those of
/// chunk 3 of 4 tile chunks 0..3 as the peaks of 3 chunks would); only the right reading
/// rebuilds the root. So: the runs of [`peak_chain`] from the longest, then the root alone
/// as the single peak the uncles reach.
pub fn peak_readings(
    leaf: Bin,
    root: Hash,
    hashes: &[(Bin, Hash)],
) -> impl Iterator<Item = Vec<(Bin, Hash)>> {
    let chain = peak_chain(hashes);
    let mut top = leaf;
    while !top.is_none() && hashes.iter().any(|(b, _)| *b == top.sibling()) {
        top = top.parent();
    }
    let runs = (2..=chain.len()).rev().map(move |k| chain[..k].to_vec());
    runs.chain([vec![(top, root)]])
}

/// The longest run of hashes, in order, whose bins tile `0..n` with strictly shrinking
/// sizes: the peak list as [`Bin::peaks`] gives it, if one was sent.
fn peak_chain(hashes: &[(Bin, Hash)]) -> Vec<(Bin, Hash)> {
    let mut chain: Vec<(Bin, Hash)> = Vec::new();
    let mut end = 0u64;
    for &(bin, hash) in hashes {
        if bin.is_none() || bin.base_offset() != end {
            continue;
        }
        if chain.last().is_some_and(|(b, _)| b.layer() <= bin.layer()) {
            continue;
        }
        let Some(next) = end.checked_add(bin.base_length()) else {
            break;
        };
        chain.push((bin, hash));
        end = next;
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{HashAlgorithm, MerkleTree};

    const CS: usize = 1024;

    fn content(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + i / 977) as u8).collect()
    }

    /// What a seeder of `tree` sends with chunk `c` to a peer holding nothing: the peaks,
    /// then the uncles.
    fn sent_with(tree: &MerkleTree, c: u64) -> Vec<(Bin, Hash)> {
        let mut out = tree.peaks();
        let uncles = tree.uncles(c, |_| false);
        out.extend(
            uncles
                .into_iter()
                .filter(|(b, _)| !tree.peaks().iter().any(|(p, _)| p == b)),
        );
        out
    }

    fn exactly(len: u64) -> ContentLength {
        ContentLength { min: len, max: len }
    }

    fn stated(tree: &MerkleTree, len: u64) -> VerifyingTree {
        VerifyingTree::new(tree.algorithm(), tree.root(), CS, len).unwrap()
    }

    fn chunk(data: &[u8], c: u64) -> &[u8] {
        let start = c as usize * CS;
        &data[start..(start + CS).min(data.len())]
    }

    #[test]
    fn a_last_chunk_of_another_length_shows_the_real_length() {
        let data = content(5 * CS + 300);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
        for wrong in [5 * CS as u64 + 200, 5 * CS as u64 + 301, 6 * CS as u64] {
            let shown = LengthCheck::default().check(
                &stated(&tree, wrong),
                5,
                chunk(&data, 5),
                &sent_with(&tree, 5),
                true,
            );
            assert_eq!(shown, Some(exactly(data.len() as u64)), "len {wrong}");
            assert!(shown.unwrap().contradicts(wrong));
        }
        // The right length: the chunk shows what the URI says.
        let right = LengthCheck::default().check(
            &stated(&tree, data.len() as u64),
            5,
            chunk(&data, 5),
            &sent_with(&tree, 5),
            true,
        );
        assert_eq!(right, Some(exactly(data.len() as u64)));
        assert!(!right.unwrap().contradicts(data.len() as u64));
    }

    #[test]
    fn a_stated_length_of_another_chunk_count_is_disproved_from_the_peaks_sent() {
        let data = content(13 * CS + 5);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha1, CS, &data).unwrap();
        // Too short: chunk 6 is full, but the URI's content ends inside it. It climbs to
        // the root in four steps, so the content has 9 to 16 chunks.
        let short = 6 * CS as u64 + 100;
        let shown = LengthCheck::default().check(
            &stated(&tree, short),
            6,
            chunk(&data, 6),
            &sent_with(&tree, 6),
            true,
        );
        assert_eq!(
            shown,
            Some(ContentLength {
                min: 8 * CS as u64 + 1,
                max: 16 * CS as u64
            })
        );
        assert!(shown.unwrap().contradicts(short));
        // Too long: the real last chunk, which the URI takes for a full one.
        let long = 30 * CS as u64;
        let shown = LengthCheck::default().check(
            &stated(&tree, long),
            13,
            chunk(&data, 13),
            &sent_with(&tree, 13),
            true,
        );
        assert_eq!(shown, Some(exactly(data.len() as u64)));
    }

    #[test]
    fn data_that_does_not_hash_to_the_root_shows_nothing() {
        let data = content(5 * CS + 300);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
        let mut bad = chunk(&data, 5).to_vec();
        bad[0] ^= 1;
        let wrong = stated(&tree, 5 * CS as u64 + 200);
        assert_eq!(
            LengthCheck::default().check(&wrong, 5, &bad, &sent_with(&tree, 5), true),
            None
        );
        bad.truncate(100);
        assert_eq!(
            LengthCheck::default().check(&wrong, 5, &bad, &sent_with(&tree, 5), true),
            None
        );
        // No hashes at all: nothing verifies past the root.
        assert_eq!(
            LengthCheck::default().check(&wrong, 5, chunk(&data, 5), &[], true),
            None
        );
    }

    #[test]
    fn the_search_among_peaks_is_asked_for_and_its_shape_serves_later_chunks() {
        let data = content(13 * CS + 5);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha1, CS, &data).unwrap();
        let wrong = stated(&tree, 30 * CS as u64);
        let mut check = LengthCheck::default();
        // Without the search, chunk 0 and its peaks prove nothing under a 30-chunk shape.
        assert_eq!(
            check.check(&wrong, 0, chunk(&data, 0), &sent_with(&tree, 0), false),
            None
        );
        assert!(
            check
                .check(&wrong, 0, chunk(&data, 0), &sent_with(&tree, 0), true)
                .is_some()
        );
        // Chunk 1 leans on chunk 0's hashes (none sent): the kept shape verifies it.
        let leaf0 = Bin::chunk(0).unwrap();
        let lean = [(leaf0, tree.node(leaf0).unwrap())];
        assert!(
            check
                .check(&wrong, 1, chunk(&data, 1), &lean, false)
                .is_some()
        );
        assert_eq!(
            check.disproved(),
            Some(ContentLength {
                min: 8 * CS as u64 + 1,
                max: 16 * CS as u64
            })
        );
    }

    /// Five chunks: the peaks T(2,0) and T(1,2) also rebuild the root as those of a
    /// three-chunk tree one layer lower, whose last "chunk" is the 2H bytes leaf 4 ‖ zero.
    /// Any peer can send that; it must not disprove the right length.
    #[test]
    fn a_forged_shape_of_two_hashes_proves_nothing() {
        let alg = HashAlgorithm::Sha1;
        let data = content(5 * CS);
        let tree = MerkleTree::from_content(alg, CS, &data).unwrap();
        let h = |b: Bin| tree.node(b).unwrap();
        let leaf4 = Bin::chunk(4).unwrap();
        let (t20, t12) = (leaf4.parent().parent().sibling(), leaf4.parent());
        let mut forged = h(leaf4).as_bytes().to_vec();
        forged.extend_from_slice(Hash::zero(alg).as_bytes());
        // As the shape of three chunks: T(1,0) and leaf 2 are its peaks.
        let fake = vec![
            (Bin::new(1, 0).unwrap(), h(t20)),
            (Bin::chunk(2).unwrap(), h(t12)),
        ];
        let right = stated(&tree, data.len() as u64);
        let mut check = VerifyingTree::new_unknown_size(alg, tree.root(), CS).unwrap();
        assert_eq!(
            check.add_peaks(&fake),
            Ok(3),
            "the forged peaks do rebuild the root"
        );
        assert!(
            check.verify_chunk(2, &forged, &[]).is_ok(),
            "and the forged chunk verifies"
        );
        assert_eq!(
            LengthCheck::default().check(&right, 2, &forged, &fake, true),
            None
        );
    }
}
