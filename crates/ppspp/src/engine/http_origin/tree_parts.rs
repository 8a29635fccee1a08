//! The parts of the origin's tree file the engine has: its header, the records of groups
//! (verified, or on their way), and content that came before its hashes, parked.

use crate::binmap::Binmap;
use crate::merkle::VerifyingTree;
use crate::merkle::tree_file::{TreeFileError, TreeFileHeader};
use core::ops::Range;
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub(super) struct TreeParts {
    header: Option<TreeFileHeader>,
    header_requested: bool,
    /// Groups whose record is verified, and those on their way (a group is a "chunk" of
    /// these maps).
    records: Binmap,
    records_requested: Binmap,
    /// Chunks that arrived before the hashes to check them: bounded by the requests in
    /// flight, kept until their record comes.
    parked: BTreeMap<u64, Vec<u8>>,
}

impl TreeParts {
    /// True once: the header is to be asked for (it is then taken as asked).
    pub(super) fn ask_header(&mut self) -> bool {
        let ask = self.header.is_none() && !self.header_requested;
        self.header_requested |= ask;
        ask
    }

    /// The header's request failed: it is to be asked for again.
    pub(super) fn header_failed(&mut self) {
        self.header_requested = false;
    }

    pub(super) fn header(&self) -> Option<&TreeFileHeader> {
        self.header.as_ref()
    }

    /// The header arrived, checked against the root.
    pub(super) fn set_header(&mut self, header: TreeFileHeader) {
        self.header = Some(header);
    }

    fn known_or_asked(&self, group: u64) -> bool {
        self.records.has_chunk(group) || self.records_requested.has_chunk(group)
    }

    /// The groups of `chunks` to ask the records of first: the first run of groups
    /// neither verified nor asked for. `None` if none (or no header yet).
    pub(super) fn missing_records(&self, chunks: Range<u64>) -> Option<Range<u64>> {
        let h = self.header.as_ref()?;
        let groups = h.group_of(chunks.start)..h.group_of(chunks.end.checked_sub(1)?) + 1;
        let first = groups.clone().find(|&g| !self.known_or_asked(g))?;
        let end = (first..groups.end)
            .find(|&g| self.known_or_asked(g))
            .unwrap_or(groups.end);
        Some(first..end)
    }

    /// The group of the first parked chunk whose record is neither verified nor asked
    /// for (its request failed, say): parked chunks hold memory, so it goes first.
    pub(super) fn missing_for_parked(&self) -> Option<Range<u64>> {
        let h = self.header.as_ref()?;
        let g = self
            .parked
            .keys()
            .map(|&c| h.group_of(c))
            .find(|&g| !self.known_or_asked(g))?;
        Some(g..g + 1)
    }

    /// The bytes of the tree file holding the records of `groups`, which are taken as
    /// asked for. `None` without a header or for groups it does not have.
    pub(super) fn ask_records(&mut self, groups: Range<u64>) -> Option<Range<u64>> {
        let h = self.header.as_ref()?;
        let start = h.record_range(groups.start).ok()?.start;
        let end = h.record_range(groups.end.checked_sub(1)?).ok()?.end;
        for g in groups {
            self.records_requested.set_chunk(g);
        }
        Some(start..end)
    }

    /// The request for the records of `groups` failed: they are to be asked for again.
    pub(super) fn records_failed(&mut self, groups: Range<u64>) {
        for g in groups {
            self.records_requested.reset_chunk(g);
        }
    }

    /// The records of `groups` arrived, one after another in `bytes`: each is checked
    /// against `tree` and its hashes stored there. What did not verify, as the chunks of
    /// its group and why.
    pub(super) fn add_records(
        &mut self,
        tree: &mut VerifyingTree,
        groups: Range<u64>,
        bytes: &[u8],
    ) -> Vec<(Range<u64>, TreeFileError)> {
        let mut bad = Vec::new();
        let Some(h) = self.header.as_ref() else {
            return bad;
        };
        let len = h.record_len() as usize;
        for (i, g) in groups.enumerate() {
            self.records_requested.reset_chunk(g);
            let Some(record) = bytes.get(i * len..(i + 1) * len) else {
                break;
            };
            match h.add_record(tree, g, record) {
                Ok(()) => self.records.set_chunk(g),
                Err(e) => bad.push((h.group_chunks(g), e)),
            }
        }
        bad
    }

    /// Whether the hashes to check `chunk` are in.
    pub(super) fn hashes_known(&self, chunk: u64) -> bool {
        self.header
            .as_ref()
            .is_some_and(|h| self.records.has_chunk(h.group_of(chunk)))
    }

    /// `chunk` came before its hashes: kept until they do.
    pub(super) fn park(&mut self, chunk: u64, data: Vec<u8>) {
        self.parked.insert(chunk, data);
    }

    /// Parked chunks whose hashes are in now, or that are `distrusted` (never checked):
    /// no longer parked.
    pub(super) fn unpark_ready(&mut self, distrusted: impl Fn(u64) -> bool) -> Vec<(u64, Vec<u8>)> {
        let Some(h) = self.header.as_ref() else {
            return Vec::new();
        };
        let ready: Vec<u64> = self
            .parked
            .keys()
            .copied()
            .filter(|&c| self.records.has_chunk(h.group_of(c)) || distrusted(c))
            .collect();
        ready
            .into_iter()
            .filter_map(|c| self.parked.remove(&c).map(|data| (c, data)))
            .collect()
    }

    /// Forgets every parked chunk: which they were.
    pub(super) fn drop_parked(&mut self) -> Vec<u64> {
        let chunks = self.parked.keys().copied().collect();
        self.parked.clear();
        chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::tree_file::encode_record;
    use crate::merkle::{HashAlgorithm, MerkleTree};

    const CS: usize = 1024;

    /// 40 chunks in groups of 8 (five groups), with the header and a receiver's tree.
    fn parts() -> (TreeParts, MerkleTree, VerifyingTree) {
        let data: Vec<u8> = (0..40 * CS).map(|i| (i * 7 + i / 1000) as u8).collect();
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
        let header = TreeFileHeader::of(&tree, 3).unwrap();
        let verifying = header.verifying_tree().unwrap();
        let mut parts = TreeParts::default();
        parts.set_header(header);
        (parts, tree, verifying)
    }

    fn record(parts: &TreeParts, tree: &MerkleTree, group: u64) -> Vec<u8> {
        encode_record(tree, parts.header().unwrap(), group)
    }

    #[test]
    fn the_header_is_asked_for_once_and_again_after_a_failure() {
        let mut parts = TreeParts::default();
        assert!(parts.ask_header());
        assert!(!parts.ask_header());
        parts.header_failed();
        assert!(parts.ask_header());
        // Nothing else is asked for before the header: its records' places are in it.
        assert_eq!(parts.missing_records(0..8), None);
        assert_eq!(parts.ask_records(0..1), None);
    }

    #[test]
    fn records_are_asked_for_in_runs_of_groups_nobody_asked_for() {
        let (mut parts, _, _) = parts();
        assert!(!parts.ask_header());
        assert_eq!(parts.missing_records(3..20), Some(0..3));
        let h = parts.header().unwrap().clone();
        let bytes = parts.ask_records(1..2).unwrap();
        assert_eq!(bytes, h.record_range(1).unwrap());
        // Group 0 is missing, group 1 asked, group 2 missing: the first run is group 0.
        assert_eq!(parts.missing_records(3..20), Some(0..1));
        assert_eq!(parts.missing_records(8..20), Some(2..3));
        parts.records_failed(1..2);
        assert_eq!(parts.missing_records(8..20), Some(1..3));
        assert_eq!(parts.ask_records(0..9), None, "past the last group");
    }

    #[test]
    fn a_record_that_verifies_makes_its_hashes_known_and_a_bad_one_is_reported() {
        let (mut parts, tree, mut verifying) = parts();
        parts.ask_records(0..2);
        let mut bytes = record(&parts, &tree, 0);
        let mut second = record(&parts, &tree, 1);
        second[5] ^= 1;
        bytes.extend(second);
        let bad = parts.add_records(&mut verifying, 0..2, &bytes);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].0, 8..16);
        assert!(parts.hashes_known(7));
        assert!(!parts.hashes_known(8));
        // The bad group is asked for again (the engine distrusts its chunks meanwhile).
        assert_eq!(parts.missing_records(8..9), Some(1..2));
    }

    #[test]
    fn parked_chunks_come_out_when_their_hashes_do_or_when_distrusted() {
        let (mut parts, tree, mut verifying) = parts();
        parts.park(3, vec![3]);
        parts.park(12, vec![12]);
        parts.park(30, vec![30]);
        assert_eq!(parts.missing_for_parked(), Some(0..1));
        parts.ask_records(0..1);
        assert_eq!(parts.missing_for_parked(), Some(1..2));
        assert!(parts.unpark_ready(|_| false).is_empty());
        let r0 = record(&parts, &tree, 0);
        assert!(parts.add_records(&mut verifying, 0..1, &r0).is_empty());
        assert_eq!(
            parts.unpark_ready(|c| c == 30),
            [(3, vec![3]), (30, vec![30])]
        );
        assert_eq!(parts.drop_parked(), [12]);
        assert_eq!(parts.missing_for_parked(), None);
    }
}
