//! The content's hash tree as a file (docs/FORMATS.md), for content served by a plain HTTP
//! server: a reader fetches the fixed-size header once, then one fixed-size record per
//! group of chunks by HTTP Range, and checks each against the root before using a hash.
//!
//! - Header: the format, hash function, group size, chunk size, content length, root and
//!   peak hashes. The peaks must rebuild the root ([`VerifyingTree::add_peaks`]), which
//!   also fixes the chunk count; the content length must match it.
//! - Record of group `g`: the leaf hashes of chunks `g·G … g·G+G−1` (all-zero past the
//!   end), then the uncles of the group's subtree from its layer up to the root (all-zero
//!   where the uncle is padding). The group's subtree must hash up to a verified node
//!   ([`VerifyingTree::add_subtree`]); after that its chunks verify with no more hashes.
//!
//! So a reader needs `O(G + log n)` hashes for any chunk, in one request, and none of the
//! rest of the tree.

use core::fmt;
use core::ops::Range;

use super::{Hash, HashAlgorithm, MerkleTree, VerifyError, VerifyingTree};
use crate::Bin;

/// The first eight bytes of every tree file.
pub const MAGIC: [u8; 8] = *b"PPSPPTRE";
/// The format version this code reads and writes.
pub const VERSION: u8 = 1;
/// The group size written by default: 2^6 = 64 chunks per record.
pub const DEFAULT_GROUP_LAYER: u32 = 6;
/// The largest group a reader accepts: 2^16 chunks, a record of at most 4 MiB.
pub const MAX_GROUP_LAYER: u32 = 16;
/// At most this many peaks (one per set bit of a 64-bit chunk count).
const PEAK_SLOTS: usize = 64;
/// Bytes before the root hash.
const FIXED: usize = 24;

/// Why a tree file (or a part of it) was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeFileError {
    /// Fewer bytes than the header or record needs.
    Truncated {
        /// Bytes needed.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// Not a tree file (wrong magic).
    NotATreeFile,
    /// A format version this code does not read.
    UnsupportedVersion(u8),
    /// The file's hash function is not the swarm's (`None`: not a known function).
    WrongHashFunction(Option<HashAlgorithm>),
    /// The file's root is not the swarm's.
    WrongRoot,
    /// The file's chunk size is not the swarm's.
    WrongChunkSize(u32),
    /// The file's content length is not the swarm's.
    WrongLength(u64),
    /// The group layer is above the root or [`MAX_GROUP_LAYER`], or the peak count is not
    /// that of the chunk count.
    BadShape,
    /// The peaks do not rebuild the root, or the content length does not match them.
    BadPeaks,
    /// The group is past the end of the content.
    NoSuchGroup(u64),
    /// A record's hashes do not verify against the root.
    BadRecord {
        /// The group.
        group: u64,
        /// What failed.
        error: VerifyError,
    },
}

impl fmt::Display for TreeFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TreeFileError::Truncated { expected, got } => {
                write!(f, "tree file data is {got} bytes, expected {expected}")
            }
            TreeFileError::NotATreeFile => f.write_str("not a PPSPP tree file (bad magic)"),
            TreeFileError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "tree file version {v} is not supported (this reads {VERSION})"
                )
            }
            TreeFileError::WrongHashFunction(Some(a)) => {
                write!(
                    f,
                    "tree file uses {}, not the swarm's hash function",
                    a.name()
                )
            }
            TreeFileError::WrongHashFunction(None) => {
                f.write_str("tree file names an unknown hash function")
            }
            TreeFileError::WrongRoot => f.write_str("tree file is for another root hash"),
            TreeFileError::WrongChunkSize(cs) => {
                write!(f, "tree file chunk size {cs} is not the swarm's")
            }
            TreeFileError::WrongLength(len) => {
                write!(
                    f,
                    "tree file is for content of {len} bytes, not the length the swarm was given (its URI's len=)"
                )
            }
            TreeFileError::BadShape => f.write_str("tree file header is inconsistent"),
            TreeFileError::BadPeaks => {
                f.write_str("tree file peak hashes or length do not match the root")
            }
            TreeFileError::NoSuchGroup(g) => write!(f, "tree file has no group {g}"),
            TreeFileError::BadRecord { group, error } => {
                write!(f, "tree file record {group} does not verify: {error}")
            }
        }
    }
}

impl core::error::Error for TreeFileError {}

/// A tree file's header: what it describes and where its records are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeFileHeader {
    alg: HashAlgorithm,
    group_layer: u32,
    chunk_size: u32,
    content_len: u64,
    root: Hash,
    peaks: Vec<(Bin, Hash)>,
    /// The root's layer.
    root_layer: u32,
}

impl TreeFileHeader {
    /// The header for `tree`, with groups of 2^`group_layer` chunks (at most the whole
    /// tree, and at most 2^[`MAX_GROUP_LAYER`]). `None` for a chunk size beyond `u32`.
    pub fn of(tree: &MerkleTree, group_layer: u32) -> Option<TreeFileHeader> {
        let root_layer = tree.root_bin().layer();
        Some(TreeFileHeader {
            alg: tree.algorithm(),
            group_layer: group_layer.min(root_layer).min(MAX_GROUP_LAYER),
            chunk_size: u32::try_from(tree.chunk_size()).ok()?,
            content_len: tree.content_len(),
            root: tree.root(),
            peaks: tree.peaks(),
            root_layer,
        })
    }

    /// The header's size in bytes for hash function `alg` (it does not depend on the
    /// content): what a reader fetches first.
    pub const fn len_for(alg: HashAlgorithm) -> usize {
        FIXED + (1 + PEAK_SLOTS) * alg.size()
    }

    /// The header's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::len_for(self.alg));
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(self.alg.wire_code());
        out.push(self.group_layer as u8);
        out.push(self.peaks.len() as u8);
        out.extend_from_slice(&self.chunk_size.to_be_bytes());
        out.extend_from_slice(&self.content_len.to_be_bytes());
        out.extend_from_slice(self.root.as_bytes());
        for (_, h) in &self.peaks {
            out.extend_from_slice(h.as_bytes());
        }
        out.resize(Self::len_for(self.alg), 0);
        out
    }

    /// Reads a header (at least [`len_for`](Self::len_for) bytes) and checks it against the
    /// swarm (its URI's hash function, root, chunk size and length). The peaks are checked
    /// against the root by [`verifying_tree`](Self::verifying_tree). The length is checked
    /// here because the root does not bind it: peaks of one chunk count can rebuild the same
    /// root as those of another (the tree has no per-layer domain separation).
    pub fn decode(
        bytes: &[u8],
        alg: HashAlgorithm,
        root: &Hash,
        chunk_size: u32,
        content_len: u64,
    ) -> Result<TreeFileHeader, TreeFileError> {
        let len = Self::len_for(alg);
        if bytes.len() >= MAGIC.len() && bytes[..MAGIC.len()] != MAGIC {
            return Err(TreeFileError::NotATreeFile);
        }
        if bytes.len() < len {
            return Err(TreeFileError::Truncated {
                expected: len,
                got: bytes.len(),
            });
        }
        if bytes[8] != VERSION {
            return Err(TreeFileError::UnsupportedVersion(bytes[8]));
        }
        let file_alg = HashAlgorithm::from_wire_code(bytes[9]);
        if file_alg != Some(alg) {
            return Err(TreeFileError::WrongHashFunction(file_alg));
        }
        let group_layer = u32::from(bytes[10]);
        let peak_count = usize::from(bytes[11]);
        let cs = u32::from_be_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(&bytes[16..24]);
        if cs != chunk_size || cs == 0 {
            return Err(TreeFileError::WrongChunkSize(cs));
        }
        let file_len = u64::from_be_bytes(len_bytes);
        if file_len != content_len {
            return Err(TreeFileError::WrongLength(file_len));
        }
        let h = alg.size();
        let hash_at = |i: usize| Hash::from_slice(&bytes[FIXED + i * h..FIXED + (i + 1) * h]);
        if hash_at(0) != Some(*root) {
            return Err(TreeFileError::WrongRoot);
        }
        let n = content_len.div_ceil(u64::from(cs));
        let bins: Vec<Bin> = Bin::peaks(n).collect();
        if n == 0 || peak_count != bins.len() || peak_count > PEAK_SLOTS {
            return Err(TreeFileError::BadShape);
        }
        let root_layer = Bin::covering(n).ok_or(TreeFileError::BadShape)?.layer();
        if group_layer > root_layer || group_layer > MAX_GROUP_LAYER {
            return Err(TreeFileError::BadShape);
        }
        let mut peaks = Vec::with_capacity(peak_count);
        for (i, bin) in bins.into_iter().enumerate() {
            peaks.push((bin, hash_at(1 + i).ok_or(TreeFileError::BadShape)?));
        }
        Ok(TreeFileHeader {
            alg,
            group_layer,
            chunk_size: cs,
            content_len,
            root: *root,
            peaks,
            root_layer,
        })
    }

    /// A receiver's tree for this content with the header's peaks verified against the root
    /// (which checks the content length too: it fixes the chunk count the peaks cover).
    pub fn verifying_tree(&self) -> Result<VerifyingTree, TreeFileError> {
        let mut t = VerifyingTree::new(
            self.alg,
            self.root,
            self.chunk_size as usize,
            self.content_len,
        )
        .map_err(|_| TreeFileError::BadPeaks)?;
        t.add_peaks(&self.peaks)
            .map_err(|_| TreeFileError::BadPeaks)?;
        Ok(t)
    }

    /// Checks the header's peaks against the root of `tree` (a receiver's tree for the same
    /// content, perhaps holding hashes already) and stores them there as verified. On error
    /// `tree` is unchanged.
    pub fn add_peaks_to(&self, tree: &mut VerifyingTree) -> Result<(), TreeFileError> {
        if tree.root() != self.root
            || tree.algorithm() != self.alg
            || tree.content_len() != Some(self.content_len)
        {
            return Err(TreeFileError::WrongRoot);
        }
        tree.add_peaks(&self.peaks)
            .map(|_| ())
            .map_err(|_| TreeFileError::BadPeaks)
    }

    /// The header and, in a file written with the default group size, the first record:
    /// what a reader fetches first (`None` for empty content). Whether the record is there
    /// the header tells ([`first_record_follows`](Self::first_record_follows)).
    pub fn first_read_len(alg: HashAlgorithm, chunk_size: u32, content_len: u64) -> Option<u64> {
        let n = content_len.div_ceil(u64::from(chunk_size.max(1)));
        let root_layer = Bin::covering(n)?.layer();
        let layer = DEFAULT_GROUP_LAYER.min(root_layer);
        let hashes = (1u64 << layer) + u64::from(root_layer - layer);
        Some(Self::len_for(alg) as u64 + hashes * alg.size() as u64)
    }

    /// True if a [`first_read_len`](Self::first_read_len) read holds group 0's record whole
    /// after the header (the file uses the default group size).
    pub fn first_record_follows(&self) -> bool {
        self.group_layer == DEFAULT_GROUP_LAYER.min(self.root_layer)
    }

    /// The hash function.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.alg
    }

    /// The chunk size in bytes.
    pub fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// The content length in bytes.
    pub fn content_len(&self) -> u64 {
        self.content_len
    }

    /// The root hash.
    pub fn root(&self) -> Hash {
        self.root
    }

    /// Chunks in the content.
    pub fn chunk_count(&self) -> u64 {
        self.content_len.div_ceil(u64::from(self.chunk_size))
    }

    /// Chunks per group (per record).
    pub fn group_size(&self) -> u64 {
        1 << self.group_layer
    }

    /// Groups (records) in the file.
    pub fn group_count(&self) -> u64 {
        self.chunk_count().div_ceil(self.group_size())
    }

    /// The group holding chunk `chunk`'s hashes.
    pub fn group_of(&self, chunk: u64) -> u64 {
        chunk >> self.group_layer
    }

    /// The chunks of group `group` that exist (the last group may be partial).
    pub fn group_chunks(&self, group: u64) -> Range<u64> {
        let first = group.saturating_mul(self.group_size());
        first.min(self.chunk_count())
            ..first
                .saturating_add(self.group_size())
                .min(self.chunk_count())
    }

    /// Uncle slots per record: one per layer from the group's up to the root's.
    fn uncle_slots(&self) -> u32 {
        self.root_layer - self.group_layer
    }

    /// A record's size in bytes.
    pub fn record_len(&self) -> u64 {
        (self.group_size() + u64::from(self.uncle_slots())) * self.alg.size() as u64
    }

    /// The file's size in bytes.
    pub fn file_len(&self) -> u64 {
        (Self::len_for(self.alg) as u64)
            .saturating_add(self.group_count().saturating_mul(self.record_len()))
    }

    /// Where group `group`'s record lies in the file (an HTTP Range, end exclusive).
    pub fn record_range(&self, group: u64) -> Result<Range<u64>, TreeFileError> {
        if group >= self.group_count() {
            return Err(TreeFileError::NoSuchGroup(group));
        }
        // Saturating: a header may claim any length (a range past the file then fails).
        let start = (Self::len_for(self.alg) as u64)
            .saturating_add(group.saturating_mul(self.record_len()));
        Ok(start..start.saturating_add(self.record_len()))
    }

    /// Where chunks `chunks` lie in the content (an HTTP Range, end exclusive; the last
    /// chunk may be short). Empty past the end.
    pub fn content_range(&self, chunks: Range<u64>) -> Range<u64> {
        let cs = u64::from(self.chunk_size);
        let at = |c: u64| c.saturating_mul(cs).min(self.content_len);
        at(chunks.start)..at(chunks.end.max(chunks.start))
    }

    /// The bin of group `group`'s subtree.
    fn group_bin(&self, group: u64) -> Option<Bin> {
        Bin::new(self.group_layer, group)
    }

    /// Checks group `group`'s record (`bytes`, exactly [`record_len`](Self::record_len))
    /// against `tree` (from [`verifying_tree`](Self::verifying_tree)) and stores its hashes
    /// there as verified. On error `tree` is unchanged.
    pub fn add_record(
        &self,
        tree: &mut VerifyingTree,
        group: u64,
        bytes: &[u8],
    ) -> Result<(), TreeFileError> {
        let bin = self
            .group_bin(group)
            .filter(|_| group < self.group_count())
            .ok_or(TreeFileError::NoSuchGroup(group))?;
        let want = self.record_len() as usize;
        if bytes.len() != want {
            return Err(TreeFileError::Truncated {
                expected: want,
                got: bytes.len(),
            });
        }
        let h = self.alg.size();
        let mut hashes = bytes
            .chunks_exact(h)
            .map(|b| Hash::from_slice(b).ok_or(TreeFileError::BadShape));
        let leaves = hashes
            .by_ref()
            .take(self.group_size() as usize)
            .collect::<Result<Vec<Hash>, _>>()?;
        let mut uncles = Vec::with_capacity(self.uncle_slots() as usize);
        let mut node = bin;
        for hash in hashes {
            uncles.push((node.sibling(), hash?));
            node = node.parent();
        }
        tree.add_subtree(bin, &leaves, &uncles)
            .map_err(|error| TreeFileError::BadRecord { group, error })
    }
}

/// The whole tree file of `tree` with groups of 2^`group_layer` chunks (see
/// [`TreeFileHeader::of`]), or `None` for a chunk size beyond `u32`.
pub fn encode_file(tree: &MerkleTree, group_layer: u32) -> Option<Vec<u8>> {
    let header = TreeFileHeader::of(tree, group_layer)?;
    let mut out = header.encode();
    out.reserve(header.file_len() as usize - out.len());
    for g in 0..header.group_count() {
        out.extend(encode_record(tree, &header, g));
    }
    Some(out)
}

/// Group `group`'s record for `tree` (whose header is `header`).
pub fn encode_record(tree: &MerkleTree, header: &TreeFileHeader, group: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(header.record_len() as usize);
    let zero = Hash::zero(tree.algorithm());
    let first = group * header.group_size();
    for c in first..first + header.group_size() {
        let leaf = Bin::chunk(c).and_then(|b| tree.node(b)).unwrap_or(zero);
        out.extend_from_slice(leaf.as_bytes());
    }
    let mut node = header.group_bin(group).unwrap_or(Bin::from_raw(0));
    for _ in 0..header.uncle_slots() {
        let uncle = tree.node(node.sibling()).unwrap_or(zero);
        out.extend_from_slice(uncle.as_bytes());
        node = node.parent();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 31 + i / 7) as u8).collect()
    }

    fn file(tree: &MerkleTree, group_layer: u32) -> (TreeFileHeader, Vec<u8>) {
        let header = TreeFileHeader::of(tree, group_layer).unwrap();
        let bytes = encode_file(tree, group_layer).unwrap();
        assert_eq!(bytes.len() as u64, header.file_len());
        assert_eq!(bytes[..header.encode().len()], header.encode());
        (header, bytes)
    }

    fn read_header(tree: &MerkleTree, bytes: &[u8]) -> Result<TreeFileHeader, TreeFileError> {
        let len = TreeFileHeader::len_for(tree.algorithm());
        TreeFileHeader::decode(
            &bytes[..len.min(bytes.len())],
            tree.algorithm(),
            &tree.root(),
            tree.chunk_size() as u32,
            tree.content_len(),
        )
    }

    /// Every chunk of `data` verifies with its group's record alone, fetched by its range.
    fn every_chunk_verifies(data: &[u8], cs: usize, alg: HashAlgorithm, group_layer: u32) {
        let tree = MerkleTree::from_content(alg, cs, data).unwrap();
        let (header, bytes) = file(&tree, group_layer);
        let read = read_header(&tree, &bytes).unwrap();
        assert_eq!(read, header);
        for chunk in 0..tree.chunk_count() {
            // A fresh reader per chunk: only this group's record is known.
            let mut v = read.verifying_tree().unwrap();
            let g = read.group_of(chunk);
            assert!(read.group_chunks(g).contains(&chunk));
            let r = read.record_range(g).unwrap();
            read.add_record(&mut v, g, &bytes[r.start as usize..r.end as usize])
                .unwrap();
            let c = read.content_range(chunk..chunk + 1);
            v.verify_chunk(chunk, &data[c.start as usize..c.end as usize], &[])
                .unwrap_or_else(|e| panic!("chunk {chunk} of {}: {e}", tree.chunk_count()));
        }
    }

    #[test]
    fn every_chunk_verifies_with_one_record_for_many_shapes() {
        for (len, cs, layer) in [
            (1, 1024, 6),
            (1024, 1024, 6),
            (1025, 1024, 6),
            (64 * 1024, 1024, 6),
            (64 * 1024 + 1, 1024, 6),
            (100 * 1024 + 17, 1024, 2),
            (300 * 1024, 1024, 0),
            (1000 * 100 + 3, 100, 4),
        ] {
            every_chunk_verifies(&content(len), cs, HashAlgorithm::Sha256, layer);
        }
        every_chunk_verifies(&content(7000), 64, HashAlgorithm::Sha1, 3);
    }

    #[test]
    fn range_arithmetic() {
        let data = content(200 * 1024 + 100);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &data).unwrap();
        let h = TreeFileHeader::of(&tree, 6).unwrap();
        // 201 chunks, root layer 8 (256 leaves), 4 groups of 64, 2 uncle slots each.
        assert_eq!(h.chunk_count(), 201);
        assert_eq!(h.group_count(), 4);
        assert_eq!(h.record_len(), (64 + 2) * 32);
        assert_eq!(TreeFileHeader::len_for(HashAlgorithm::Sha256), 24 + 65 * 32);
        assert_eq!(h.record_range(0).unwrap(), 2104..2104 + 2112);
        assert_eq!(h.record_range(3).unwrap(), 2104 + 3 * 2112..2104 + 4 * 2112);
        assert_eq!(h.record_range(4), Err(TreeFileError::NoSuchGroup(4)));
        assert_eq!(h.group_of(63), 0);
        assert_eq!(h.group_of(64), 1);
        assert_eq!(h.group_chunks(3), 192..201);
        assert_eq!(h.group_chunks(9), 201..201);
        assert_eq!(h.content_range(0..2), 0..2048);
        assert_eq!(h.content_range(199..201), 199 * 1024..200 * 1024 + 100);
        assert_eq!(
            h.content_range(300..400),
            200 * 1024 + 100..200 * 1024 + 100
        );
        // A tree smaller than a group is one group.
        let small = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &content(3000)).unwrap();
        let s = TreeFileHeader::of(&small, 6).unwrap();
        assert_eq!(
            (s.group_size(), s.group_count(), s.record_len()),
            (4, 1, 4 * 32)
        );
        // The first read: the header and group 0's record, for the default group size only.
        let first = |t: &MerkleTree| {
            TreeFileHeader::first_read_len(t.algorithm(), 1024, t.content_len()).unwrap()
        };
        assert_eq!(first(&tree), 2104 + 2112);
        assert!(h.first_record_follows());
        assert_eq!(first(&small), 2104 + 4 * 32);
        assert!(s.first_record_follows());
        assert!(!TreeFileHeader::of(&tree, 4).unwrap().first_record_follows());
        assert_eq!(
            TreeFileHeader::first_read_len(HashAlgorithm::Sha256, 1024, 0),
            None
        );
    }

    #[test]
    fn peaks_go_into_a_tree_that_holds_hashes_already() {
        let data = content(200 * 1024 + 100);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &data).unwrap();
        let (_, bytes) = file(&tree, 6);
        let header = read_header(&tree, &bytes).unwrap();
        let mut v =
            VerifyingTree::new(tree.algorithm(), tree.root(), 1024, tree.content_len()).unwrap();
        header.add_peaks_to(&mut v).unwrap();
        let r = header.record_range(1).unwrap();
        header
            .add_record(&mut v, 1, &bytes[r.start as usize..r.end as usize])
            .unwrap();
        let c = header.content_range(70..71);
        v.verify_chunk(70, &data[c.start as usize..c.end as usize], &[])
            .unwrap();
        // Again, once its hashes are there: nothing changes, nothing fails.
        header.add_peaks_to(&mut v).unwrap();
        // A tree of other content refuses the header.
        let other = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &content(5000)).unwrap();
        let mut w =
            VerifyingTree::new(other.algorithm(), other.root(), 1024, other.content_len()).unwrap();
        assert_eq!(header.add_peaks_to(&mut w), Err(TreeFileError::WrongRoot));
    }

    #[test]
    fn a_header_for_another_swarm_or_damaged_is_refused() {
        let data = content(10_000);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &data).unwrap();
        let (_, bytes) = file(&tree, 6);
        let len = TreeFileHeader::len_for(HashAlgorithm::Sha256);
        let head = &bytes[..len];
        let alg = HashAlgorithm::Sha256;
        let root = tree.root();
        let decode = |b: &[u8]| TreeFileHeader::decode(b, alg, &root, 1024, 10_000);
        assert!(decode(head).is_ok());
        assert_eq!(
            decode(&head[..100]),
            Err(TreeFileError::Truncated {
                expected: len,
                got: 100
            })
        );
        let other = MerkleTree::from_content(alg, 1024, &content(9_999))
            .unwrap()
            .root();
        assert_eq!(
            TreeFileHeader::decode(head, alg, &other, 1024, 10_000),
            Err(TreeFileError::WrongRoot)
        );
        assert_eq!(
            TreeFileHeader::decode(head, HashAlgorithm::Sha1, &root, 1024, 10_000),
            Err(TreeFileError::WrongHashFunction(Some(alg)))
        );
        assert_eq!(
            TreeFileHeader::decode(head, alg, &root, 2048, 10_000),
            Err(TreeFileError::WrongChunkSize(1024))
        );
        let damaged = |at: usize| {
            let mut b = head.to_vec();
            b[at] ^= 1;
            b
        };
        assert_eq!(decode(&damaged(0)), Err(TreeFileError::NotATreeFile));
        assert_eq!(
            decode(&damaged(8)),
            Err(TreeFileError::UnsupportedVersion(0))
        );
        assert_eq!(
            decode(&damaged(9)),
            Err(TreeFileError::WrongHashFunction(Some(
                HashAlgorithm::Sha384
            )))
        );
        // Another length: refused, even where its peaks would rebuild the root (10 chunks
        // as 8 + 2 and 20 as 16 + 4 give the same root from the same two hashes).
        for len in [10_001u64, 20_000, 9_000] {
            let mut b = head.to_vec();
            b[16..24].copy_from_slice(&len.to_be_bytes());
            assert_eq!(decode(&b), Err(TreeFileError::WrongLength(len)));
            if len == 20_000 {
                // Believed, it buys nothing: records then do not verify.
                let h = TreeFileHeader::decode(&b, alg, &root, 1024, len).unwrap();
                let mut v = h.verifying_tree().unwrap();
                // The real file's only record, with a zero uncle slot for the claimed shape.
                let mut record = bytes[2104..].to_vec();
                record.resize(h.record_len() as usize, 0);
                assert!(h.add_record(&mut v, 0, &record).is_err());
            }
        }
        // A changed peak hash.
        let bad_peak = decode(&damaged(24 + 32 + 5)).unwrap();
        assert_eq!(
            bad_peak.verifying_tree().err(),
            Some(TreeFileError::BadPeaks)
        );
    }

    #[test]
    fn a_damaged_record_is_refused_and_changes_nothing() {
        let data = content(150 * 1024);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &data).unwrap();
        let (h, bytes) = file(&tree, 6);
        let r = h.record_range(1).unwrap();
        let record = &bytes[r.start as usize..r.end as usize];
        // Every hash of the record matters: a leaf's, and an uncle's.
        for at in [0, 5 * 32 + 3, 64 * 32 + 1, 65 * 32 + 31] {
            let mut v = h.verifying_tree().unwrap();
            let mut bad = record.to_vec();
            bad[at] ^= 0x80;
            assert!(
                matches!(
                    h.add_record(&mut v, 1, &bad),
                    Err(TreeFileError::BadRecord { group: 1, .. })
                ),
                "byte {at}"
            );
            // Nothing was stored: chunk 64 still needs hashes.
            assert!(
                v.verify_chunk(64, &data[64 * 1024..65 * 1024], &[])
                    .is_err()
            );
            h.add_record(&mut v, 1, record).unwrap();
            v.verify_chunk(64, &data[64 * 1024..65 * 1024], &[])
                .unwrap();
        }
        let mut v = h.verifying_tree().unwrap();
        assert!(matches!(
            h.add_record(&mut v, 1, &record[1..]),
            Err(TreeFileError::Truncated { .. })
        ));
        // Group 1's record is not group 0's.
        assert!(matches!(
            h.add_record(&mut v, 0, record),
            Err(TreeFileError::BadRecord { group: 0, .. })
        ));
        assert_eq!(
            h.add_record(&mut v, 3, record),
            Err(TreeFileError::NoSuchGroup(3))
        );
        // A verified record does not make a wrong chunk verify.
        h.add_record(&mut v, 1, record).unwrap();
        let mut chunk = data[70 * 1024..71 * 1024].to_vec();
        chunk[9] ^= 1;
        assert!(v.verify_chunk(70, &chunk, &[]).is_err());
    }

    #[test]
    fn no_header_makes_a_reader_panic() {
        let data = content(5_000);
        let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &data).unwrap();
        let (_, bytes) = file(&tree, 6);
        let head = &bytes[..TreeFileHeader::len_for(HashAlgorithm::Sha256)];
        for at in 8..24 {
            for value in [0u8, 1, 0x3f, 0x40, 0x7f, 0x80, 0xff] {
                let mut b = head.to_vec();
                b[at] = value;
                // Expect what the header itself says, so as many checks as possible pass.
                let cs = u32::from_be_bytes(b[12..16].try_into().unwrap());
                let len = u64::from_be_bytes(b[16..24].try_into().unwrap());
                let Ok(h) =
                    TreeFileHeader::decode(&b, HashAlgorithm::Sha256, &tree.root(), cs, len)
                else {
                    continue;
                };
                let _ = (h.file_len(), h.record_range(0), h.record_range(u64::MAX));
                let _ = (h.group_chunks(u64::MAX), h.content_range(0..u64::MAX));
                if let Ok(mut v) = h.verifying_tree() {
                    let _ = h.add_record(&mut v, 0, &bytes[head.len()..]);
                }
            }
        }
    }
}
