//! Sender side: the complete Merkle tree of content we hold.

use core::fmt;

use super::{Hash, HashAlgorithm, MerkleError};
use crate::Bin;

/// Number of chunks of `content_len` bytes cut into `chunk_size` pieces (0 for no content).
pub(crate) fn chunk_count_of(content_len: u64, chunk_size: usize) -> u64 {
    let cs = chunk_size as u64;
    if cs == 0 || content_len == 0 {
        return 0;
    }
    (content_len - 1) / cs + 1
}

/// Number of non-padding nodes at `layer` in a tree of `n >= 1` leaves.
pub(crate) fn layer_count(n: u64, layer: u32) -> u64 {
    ((n - 1) >> layer) + 1
}

/// The complete Merkle tree (RFC 7574 §5.1) of static content.
///
/// Node hashes sit in one flat byte vector, layer by layer (all leaves, then their parents,
/// …, then the root), holding only nodes that cover at least one real chunk: about
/// `2·n·hash_size` bytes for `n` chunks. Padding nodes (entirely past the end) are all-zero
/// and are not stored.
#[derive(Clone)]
pub struct MerkleTree {
    alg: HashAlgorithm,
    chunk_size: usize,
    content_len: u64,
    chunk_count: u64,
    root_bin: Bin,
    /// Index (in hashes) where each layer starts in `hashes`, for layers `0..=root layer`.
    layer_starts: Vec<u64>,
    hashes: Vec<u8>,
}

impl MerkleTree {
    /// Hashes `content` cut into `chunk_size`-byte chunks (the last one may be shorter).
    ///
    /// Empty content has no chunks and so no root: it gives [`MerkleError::EmptyContent`].
    pub fn from_content(
        alg: HashAlgorithm,
        chunk_size: usize,
        content: &[u8],
    ) -> Result<MerkleTree, MerkleError> {
        let mut b = MerkleTree::builder(alg, chunk_size);
        b.push(content);
        b.finish()
    }

    /// Builds the tree from the leaf hashes (one per chunk, in order) of content of
    /// `content_len` bytes.
    pub fn from_leaf_hashes(
        alg: HashAlgorithm,
        chunk_size: usize,
        content_len: u64,
        leaves: Vec<Hash>,
    ) -> Result<MerkleTree, MerkleError> {
        let size = alg.size();
        if let Some(h) = leaves.iter().find(|h| h.len() != size) {
            return Err(MerkleError::WrongHashLength {
                expected: size,
                got: h.len(),
            });
        }
        let mut bytes = Vec::with_capacity(leaves.len() * size);
        for h in &leaves {
            bytes.extend_from_slice(h.as_bytes());
        }
        MerkleTree::from_leaf_bytes(alg, chunk_size, content_len, bytes)
    }

    /// An incremental builder: feed the content in pieces of any size.
    pub fn builder(alg: HashAlgorithm, chunk_size: usize) -> MerkleBuilder {
        MerkleBuilder {
            alg,
            chunk_size,
            pending: Vec::new(),
            leaves: Vec::new(),
            bytes: 0,
        }
    }

    /// `leaves` holds the leaf hashes back to back.
    fn from_leaf_bytes(
        alg: HashAlgorithm,
        chunk_size: usize,
        content_len: u64,
        mut hashes: Vec<u8>,
    ) -> Result<MerkleTree, MerkleError> {
        if chunk_size == 0 {
            return Err(MerkleError::ZeroChunkSize);
        }
        let n = chunk_count_of(content_len, chunk_size);
        if n == 0 {
            return Err(MerkleError::EmptyContent);
        }
        let root_bin = Bin::covering(n).ok_or(MerkleError::TooManyChunks)?;
        let size = alg.size();
        let got = (hashes.len() / size) as u64;
        if got != n || !hashes.len().is_multiple_of(size) {
            return Err(MerkleError::LeafCountMismatch { expected: n, got });
        }
        let top = root_bin.layer();
        let mut layer_starts = Vec::with_capacity(top as usize + 1);
        let mut total = 0u64;
        for layer in 0..=top {
            layer_starts.push(total);
            total += layer_count(n, layer);
        }
        hashes.reserve_exact((total - n) as usize * size);
        let zero = Hash::zero(alg);
        for layer in 1..=top {
            let below = layer_starts[layer as usize - 1] as usize;
            let below_count = layer_count(n, layer - 1) as usize;
            for o in 0..layer_count(n, layer) as usize {
                let at = |i: usize| {
                    if i < below_count {
                        let s = (below + i) * size;
                        Hash::from_slice(&hashes[s..s + size]).unwrap_or(zero)
                    } else {
                        zero
                    }
                };
                let p = alg.parent(&at(2 * o), &at(2 * o + 1));
                hashes.extend_from_slice(p.as_bytes());
            }
        }
        Ok(MerkleTree {
            alg,
            chunk_size,
            content_len,
            chunk_count: n,
            root_bin,
            layer_starts,
            hashes,
        })
    }

    /// The hash function of the tree.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.alg
    }

    /// Chunk size in bytes (the last chunk may be shorter).
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// Content length in bytes.
    pub fn content_len(&self) -> u64 {
        self.content_len
    }

    /// Chunks in the content, i.e. leaves of the tree.
    pub fn chunk_count(&self) -> u64 {
        self.chunk_count
    }

    /// The root hash: the swarm ID of static content.
    pub fn root(&self) -> Hash {
        self.stored(self.root_bin.layer(), 0)
    }

    /// The root's position: [`Bin::covering`] of the chunk count.
    pub fn root_bin(&self) -> Bin {
        self.root_bin
    }

    /// The stored hash at `layer`, `offset` (which must be a non-padding node).
    fn stored(&self, layer: u32, offset: u64) -> Hash {
        let size = self.alg.size();
        let i = (self.layer_starts[layer as usize] + offset) as usize * size;
        Hash::from_slice(&self.hashes[i..i + size]).unwrap_or(Hash::zero(self.alg))
    }

    /// The hash of any node in the root's subtree (all-zero for padding nodes past the end);
    /// `None` outside it.
    pub fn node(&self, bin: Bin) -> Option<Hash> {
        if !self.root_bin.contains(bin) {
            return None;
        }
        if bin.base_offset() >= self.chunk_count {
            return Some(Hash::zero(self.alg));
        }
        Some(self.stored(bin.layer(), bin.layer_offset()))
    }

    /// The peak hashes, left to right (descending size): one per set bit of the chunk count.
    pub fn peaks(&self) -> Vec<(Bin, Hash)> {
        Bin::peaks(self.chunk_count)
            .map(|b| (b, self.stored(b.layer(), b.layer_offset())))
            .collect()
    }

    /// The hashes a receiver needs to verify `chunk`: its sibling, then the uncles walking
    /// up, stopping at (not including) the first node for which `receiver_knows` is true
    /// (the root is always known and never included). Siblings the receiver knows are
    /// skipped, and so are padding siblings (all-zero, past the end), which any receiver
    /// derives from the chunk count. Returned top first (descending height), the order of
    /// INTEGRITY messages on the wire. Empty for a chunk past the end.
    pub fn uncles(&self, chunk: u64, receiver_knows: impl Fn(Bin) -> bool) -> Vec<(Bin, Hash)> {
        let mut out = Vec::new();
        if chunk >= self.chunk_count {
            return out;
        }
        let Some(mut node) = Bin::chunk(chunk) else {
            return out;
        };
        while node != self.root_bin && !receiver_knows(node) {
            let sib = node.sibling();
            if sib.base_offset() < self.chunk_count && !receiver_knows(sib) {
                out.push((sib, self.stored(sib.layer(), sib.layer_offset())));
            }
            node = node.parent();
        }
        out.reverse();
        out
    }
}

impl fmt::Debug for MerkleTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MerkleTree")
            .field("alg", &self.alg)
            .field("chunk_size", &self.chunk_size)
            .field("content_len", &self.content_len)
            .field("chunk_count", &self.chunk_count)
            .field("root", &self.root())
            .finish_non_exhaustive()
    }
}

/// Builds a [`MerkleTree`] from content fed in pieces (see [`MerkleTree::builder`]).
#[derive(Clone)]
pub struct MerkleBuilder {
    alg: HashAlgorithm,
    chunk_size: usize,
    /// Start of an incomplete chunk (always shorter than `chunk_size`).
    pending: Vec<u8>,
    /// Leaf hashes so far, back to back.
    leaves: Vec<u8>,
    bytes: u64,
}

impl MerkleBuilder {
    /// Adds the next `data` bytes of content (any length; cut into chunks here).
    pub fn push(&mut self, mut data: &[u8]) {
        self.bytes += data.len() as u64;
        let cs = self.chunk_size;
        if cs == 0 {
            return; // finish() reports the error
        }
        if !self.pending.is_empty() {
            let take = (cs - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < cs {
                return;
            }
            let leaf = self.alg.digest(&self.pending);
            self.leaves.extend_from_slice(leaf.as_bytes());
            self.pending.clear();
        }
        let mut chunks = data.chunks_exact(cs);
        for chunk in &mut chunks {
            let leaf = self.alg.digest(chunk);
            self.leaves.extend_from_slice(leaf.as_bytes());
        }
        self.pending.extend_from_slice(chunks.remainder());
    }

    /// Bytes of content pushed so far (for progress reports).
    pub fn bytes_hashed(&self) -> u64 {
        self.bytes
    }

    /// Hashes the short last chunk, if any, and builds the tree.
    pub fn finish(mut self) -> Result<MerkleTree, MerkleError> {
        if !self.pending.is_empty() {
            let leaf = self.alg.digest(&self.pending);
            self.leaves.extend_from_slice(leaf.as_bytes());
        }
        MerkleTree::from_leaf_bytes(self.alg, self.chunk_size, self.bytes, self.leaves)
    }
}

impl fmt::Debug for MerkleBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MerkleBuilder")
            .field("alg", &self.alg)
            .field("chunk_size", &self.chunk_size)
            .field("bytes_hashed", &self.bytes)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_parameters() {
        let alg = HashAlgorithm::Sha1;
        assert_eq!(
            MerkleTree::from_content(alg, 0, b"abc").err(),
            Some(MerkleError::ZeroChunkSize)
        );
        assert_eq!(
            MerkleTree::from_content(alg, 1024, b"").err(),
            Some(MerkleError::EmptyContent)
        );
        let leaf = alg.digest(b"x");
        assert_eq!(
            MerkleTree::from_leaf_hashes(alg, 4, 9, vec![leaf; 2]).err(),
            Some(MerkleError::LeafCountMismatch {
                expected: 3,
                got: 2
            })
        );
        assert_eq!(
            MerkleTree::from_leaf_hashes(alg, 4, 4, vec![HashAlgorithm::Sha256.digest(b"x")]).err(),
            Some(MerkleError::WrongHashLength {
                expected: 20,
                got: 32
            })
        );
        // 2^63 chunks fit, one more does not (leaf count checked after).
        assert_eq!(
            MerkleTree::from_leaf_hashes(alg, 1, u64::MAX, vec![]).err(),
            Some(MerkleError::TooManyChunks)
        );
        let mut b = MerkleTree::builder(alg, 0);
        b.push(b"abc");
        assert_eq!(b.bytes_hashed(), 3);
        assert_eq!(b.finish().err(), Some(MerkleError::ZeroChunkSize));
    }

    #[test]
    fn builder_matches_one_shot_for_any_split() {
        let content: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 256) as u8).collect();
        let alg = HashAlgorithm::Sha256;
        let whole = MerkleTree::from_content(alg, 64, &content).unwrap();
        for piece in [1usize, 3, 63, 64, 65, 200, 1000] {
            let mut b = MerkleTree::builder(alg, 64);
            for p in content.chunks(piece) {
                b.push(p);
            }
            b.push(&[]);
            assert_eq!(b.bytes_hashed(), 1000);
            let t = b.finish().unwrap();
            assert_eq!(t.root(), whole.root(), "piece {piece}");
            assert_eq!(t.chunk_count(), 16);
            assert_eq!(t.content_len(), 1000);
        }
    }

    #[test]
    fn node_layout_and_padding() {
        // 5 chunks: root at bin 15 (layer 3), chunks 5..7 are padding.
        let alg = HashAlgorithm::Sha1;
        let content = vec![7u8; 5 * 16 - 3];
        let t = MerkleTree::from_content(alg, 16, &content).unwrap();
        assert_eq!(t.root_bin(), Bin::from_raw(7));
        let leaf = |i: u64| t.node(Bin::chunk(i).unwrap()).unwrap();
        assert_eq!(leaf(0), alg.digest(&[7u8; 16]));
        assert_eq!(leaf(4), alg.digest(&[7u8; 13]));
        for pad in [10u64, 12, 14, 13] {
            assert!(t.node(Bin::from_raw(pad)).unwrap().is_zero(), "bin {pad}");
        }
        let n9 = alg.parent(&leaf(4), &Hash::zero(alg));
        assert_eq!(t.node(Bin::from_raw(9)), Some(n9));
        let n11 = alg.parent(&n9, &Hash::zero(alg));
        assert_eq!(t.node(Bin::from_raw(11)), Some(n11));
        let n1 = alg.parent(&leaf(0), &leaf(1));
        let n5 = alg.parent(&leaf(2), &leaf(3));
        let n3 = alg.parent(&n1, &n5);
        assert_eq!(t.node(Bin::from_raw(3)), Some(n3));
        assert_eq!(t.root(), alg.parent(&n3, &n11));
        assert_eq!(t.node(Bin::from_raw(15)), None);
        assert_eq!(t.node(Bin::from_raw(16)), None);
        assert_eq!(t.node(Bin::NONE), None);
        assert_eq!(t.node(Bin::ALL), None);
        let peaks: Vec<u64> = t.peaks().iter().map(|(b, _)| b.raw()).collect();
        assert_eq!(peaks, [3, 8]);
        assert_eq!(t.uncles(5, |_| false), vec![]);
        assert_eq!(t.uncles(u64::MAX, |_| false), vec![]);
        // Chunk 4 (bin 8): siblings 10 and 13 are padding, only 3 is sent.
        assert_eq!(t.uncles(4, |_| false), vec![(Bin::from_raw(3), n3)]);
    }
}
