//! Receiver side: verifies chunks and peak hashes against a trusted root.

use super::store::NodeStore;
use super::tree::{chunk_count_of, layer_count};
use super::{Hash, HashAlgorithm, MerkleError, MerkleTree, VerifyError};
use crate::Bin;

/// The part of a Merkle tree a receiver has verified, rooted at a trusted root hash.
///
/// Only verified hashes are stored: the root, verified peaks and the nodes they rebuild,
/// and for each verified chunk its path up to an already verified node plus the uncles
/// used. Every stored node's parent is stored too, so a node the tree reports verified
/// implies its whole path to the root is. Padding nodes (entirely past the end) are
/// all-zero and count as verified as soon as the chunk count is known.
///
/// Nothing here panics on peer input; a rejected chunk or peak list leaves the tree
/// unchanged.
#[derive(Clone, Debug)]
pub struct VerifyingTree {
    alg: HashAlgorithm,
    root: Hash,
    chunk_size: usize,
    content_len: Option<u64>,
    /// Chunk count and root position, once known.
    shape: Option<(u64, Bin)>,
    store: NodeStore,
}

impl VerifyingTree {
    /// A receiver that knows the content length (so the chunk count and root position).
    pub fn new(
        alg: HashAlgorithm,
        root: Hash,
        chunk_size: usize,
        content_len: u64,
    ) -> Result<VerifyingTree, MerkleError> {
        let mut t = VerifyingTree::new_unknown_size(alg, root, chunk_size)?;
        let n = chunk_count_of(content_len, chunk_size);
        if n == 0 {
            return Err(MerkleError::EmptyContent);
        }
        let root_bin = Bin::covering(n).ok_or(MerkleError::TooManyChunks)?;
        t.set_shape(n, root_bin);
        t.content_len = Some(content_len);
        Ok(t)
    }

    /// A receiver that knows only the root: the size is learnt from the peak hashes
    /// ([`add_peaks`](Self::add_peaks)) before any chunk can be verified.
    pub fn new_unknown_size(
        alg: HashAlgorithm,
        root: Hash,
        chunk_size: usize,
    ) -> Result<VerifyingTree, MerkleError> {
        if root.len() != alg.size() {
            return Err(MerkleError::WrongHashLength {
                expected: alg.size(),
                got: root.len(),
            });
        }
        if chunk_size == 0 {
            return Err(MerkleError::ZeroChunkSize);
        }
        Ok(VerifyingTree {
            alg,
            root,
            chunk_size,
            content_len: None,
            shape: None,
            store: NodeStore::new(alg.size()),
        })
    }

    /// A tree that has verified everything in `tree`: what a seeder serves its own content
    /// from, so seeders and relaying leechers answer with the same code.
    pub fn from_tree(tree: &MerkleTree) -> VerifyingTree {
        let n = tree.chunk_count();
        let root_bin = tree.root_bin();
        let mut t = VerifyingTree {
            alg: tree.algorithm(),
            root: tree.root(),
            chunk_size: tree.chunk_size(),
            content_len: Some(tree.content_len()),
            shape: None,
            store: NodeStore::new(tree.algorithm().size()),
        };
        t.set_shape(n, root_bin);
        for layer in 0..=root_bin.layer() {
            for offset in 0..layer_count(n, layer) {
                if let Some(bin) = Bin::new(layer, offset)
                    && let Some(hash) = tree.node(bin)
                {
                    t.store.insert(bin, &hash);
                }
            }
        }
        t
    }

    /// The hashes a receiver needs to verify `chunk`, taken from what this tree verified:
    /// the same walk and order as [`MerkleTree::uncles`], so a leecher relays chunks with
    /// the proofs it checked them with. Empty for a chunk this tree has not verified.
    pub fn uncles(&self, chunk: u64, receiver_knows: impl Fn(Bin) -> bool) -> Vec<(Bin, Hash)> {
        let mut out = Vec::new();
        self.uncles_into(chunk, receiver_knows, &mut out);
        out
    }

    /// [`uncles`](Self::uncles), appended to `out` (a sender reuses one list per DATA).
    pub fn uncles_into(
        &self,
        chunk: u64,
        receiver_knows: impl Fn(Bin) -> bool,
        out: &mut Vec<(Bin, Hash)>,
    ) {
        let start = out.len();
        let Some((n, root_bin)) = self.shape else {
            return;
        };
        let Some(mut node) = Bin::chunk(chunk) else {
            return;
        };
        if chunk >= n || !self.store.contains(node) {
            return;
        }
        while node != root_bin && !receiver_knows(node) {
            let sib = node.sibling();
            if sib.base_offset() < n && !receiver_knows(sib) {
                match self.store.get(sib) {
                    Some(hash) => out.push((sib, hash)),
                    // Every verified node's sibling is stored; a gap means no proof.
                    None => {
                        out.truncate(start);
                        return;
                    }
                }
            }
            node = node.parent();
        }
        out[start..].reverse();
    }

    /// Appends the peak hashes, left to right, if all of them are verified (else nothing);
    /// true if it did.
    pub fn peaks_into(&self, out: &mut Vec<(Bin, Hash)>) -> bool {
        let Some((n, _)) = self.shape else {
            return false;
        };
        let start = out.len();
        for p in Bin::peaks(n) {
            match self.verified_hash(p) {
                Some(h) => out.push((p, h)),
                None => {
                    out.truncate(start);
                    return false;
                }
            }
        }
        true
    }

    /// The verified peak hashes, left to right, if all of them are verified.
    pub fn peaks(&self) -> Option<Vec<(Bin, Hash)>> {
        let (n, _) = self.shape?;
        Bin::peaks(n)
            .map(|p| self.verified_hash(p).map(|h| (p, h)))
            .collect()
    }

    fn set_shape(&mut self, n: u64, root_bin: Bin) {
        self.shape = Some((n, root_bin));
        self.store.insert(root_bin, &self.root);
    }

    /// The hash function of the tree.
    pub fn algorithm(&self) -> HashAlgorithm {
        self.alg
    }

    /// The trusted root hash.
    pub fn root(&self) -> Hash {
        self.root
    }

    /// Chunk size in bytes (the last chunk may be shorter).
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// The root's position, once the chunk count is known.
    pub fn root_bin(&self) -> Option<Bin> {
        self.shape.map(|(_, b)| b)
    }

    /// The number of chunks, once known (from the content length or the peaks).
    pub fn chunk_count(&self) -> Option<u64> {
        self.shape.map(|(n, _)| n)
    }

    /// The content length in bytes: given at construction, or learnt when the last chunk
    /// of content of unknown size is verified.
    pub fn content_len(&self) -> Option<u64> {
        self.content_len
    }

    /// Number of node hashes held (a measure of memory use).
    pub fn stored_hashes(&self) -> u64 {
        self.store.len()
    }

    /// True if `bin`'s hash is verified (padding nodes inside the root's subtree are,
    /// since they are all-zero). Always false before the chunk count is known.
    pub fn is_verified(&self, bin: Bin) -> bool {
        match self.shape {
            Some((n, root_bin)) if root_bin.contains(bin) => {
                bin.base_offset() >= n || self.store.contains(bin)
            }
            _ => false,
        }
    }

    /// The verified hash of `bin` (all-zero for padding nodes), if any.
    pub fn verified_hash(&self, bin: Bin) -> Option<Hash> {
        match self.shape {
            Some((n, root_bin)) if root_bin.contains(bin) => {
                if bin.base_offset() >= n {
                    Some(Hash::zero(self.alg))
                } else {
                    self.store.get(bin)
                }
            }
            _ => None,
        }
    }

    fn check_hash_len(&self, bin: Bin, hash: &Hash) -> Result<(), VerifyError> {
        if hash.len() != self.alg.size() {
            return Err(VerifyError::WrongHashLength {
                bin,
                expected: self.alg.size(),
                got: hash.len(),
            });
        }
        Ok(())
    }

    /// Checks the peak hashes (left to right, descending size, as [`Bin::peaks`] lists
    /// them) against the root: the peaks plus zero padding must rebuild it. On success
    /// the peaks and the nodes between them and the root are stored as verified, the
    /// chunk count is learnt and returned. On failure nothing changes. If the chunk count
    /// is already known the peaks must match it.
    pub fn add_peaks(&mut self, peaks: &[(Bin, Hash)]) -> Result<u64, VerifyError> {
        for (bin, hash) in peaks {
            self.check_hash_len(*bin, hash)?;
        }
        let mut n = 0u64;
        for (bin, _) in peaks {
            if bin.is_none() {
                return Err(VerifyError::BadPeaks);
            }
            n = n
                .checked_add(bin.base_length())
                .ok_or(VerifyError::BadPeaks)?;
        }
        if n == 0 || !Bin::peaks(n).eq(peaks.iter().map(|(b, _)| *b)) {
            return Err(VerifyError::BadPeaks);
        }
        let root_bin = Bin::covering(n).ok_or(VerifyError::BadPeaks)?;
        let cs = self.chunk_size as u64;
        if (n - 1)
            .checked_mul(cs)
            .and_then(|x| x.checked_add(cs))
            .is_none()
        {
            return Err(VerifyError::BadPeaks); // content length would not fit in a u64
        }
        if let Some((known, _)) = self.shape
            && known != n
        {
            return Err(VerifyError::BadPeaks);
        }
        let mut built = Vec::new();
        let root = self.rebuild(root_bin, n, peaks, &mut built);
        if root != Some(self.root) {
            return Err(VerifyError::BadPeaks);
        }
        if self.shape.is_none() {
            self.set_shape(n, root_bin);
        }
        for (bin, hash) in peaks.iter().chain(&built) {
            self.store.insert(*bin, hash);
        }
        Ok(n)
    }

    /// The hash of `bin` from the peaks and zero padding, recording the internal nodes
    /// computed on the way. `None` if a real node is neither a peak nor above one (only
    /// possible with an inconsistent peak list).
    fn rebuild(
        &self,
        bin: Bin,
        n: u64,
        peaks: &[(Bin, Hash)],
        built: &mut Vec<(Bin, Hash)>,
    ) -> Option<Hash> {
        if bin.base_offset() >= n {
            return Some(Hash::zero(self.alg));
        }
        if let Some((_, h)) = peaks.iter().find(|(b, _)| *b == bin) {
            return Some(*h);
        }
        let (l, r) = bin.children()?;
        let left = self.rebuild(l, n, peaks, built)?;
        let right = self.rebuild(r, n, peaks, built)?;
        let h = self.alg.parent(&left, &right);
        built.push((bin, h));
        Some(h)
    }

    /// Verifies chunk `chunk` with content `data`, using the hashes `uncles` sent with it
    /// (in any order; the wire order is descending height). Walks up from the leaf,
    /// combining with a verified sibling or the given one, until it reaches a verified node,
    /// whose hash must equal the computed one. On success the path and the uncles used are
    /// stored as verified (given hashes above that point are ignored). On any error the
    /// tree is unchanged.
    ///
    /// Every chunk must be exactly `chunk_size` bytes except the last, whose length follows
    /// from the content length (or, while that is unknown, is 1 to `chunk_size` bytes and
    /// then fixes the content length).
    pub fn verify_chunk(
        &mut self,
        chunk: u64,
        data: &[u8],
        uncles: &[(Bin, Hash)],
    ) -> Result<(), VerifyError> {
        let (n, root_bin) = self.shape.ok_or(VerifyError::SizeUnknown)?;
        if chunk >= n {
            return Err(VerifyError::OutOfRange {
                chunk,
                chunk_count: n,
            });
        }
        let cs = self.chunk_size;
        let last = chunk == n - 1;
        let length_ok = if !last {
            data.len() == cs
        } else if let Some(len) = self.content_len {
            // n = ceil(len / cs) >= 1, so this is in 1..=cs.
            let expected = (len - (n - 1) * cs as u64) as usize;
            if data.len() != expected {
                return Err(VerifyError::WrongLength {
                    expected,
                    got: data.len(),
                });
            }
            true
        } else {
            (1..=cs).contains(&data.len())
        };
        if !length_ok {
            return Err(VerifyError::WrongLength {
                expected: cs,
                got: data.len(),
            });
        }
        let leaf = Bin::chunk(chunk).ok_or(VerifyError::OutOfRange {
            chunk,
            chunk_count: n,
        })?;

        let new_nodes = self.climb(root_bin, leaf, self.alg.digest(data), uncles)?;
        for (bin, hash) in &new_nodes {
            self.store.insert(*bin, hash);
        }
        if last && self.content_len.is_none() {
            self.content_len = Some((n - 1) * cs as u64 + data.len() as u64);
        }
        Ok(())
    }

    /// True if `data`, as chunk `chunk` and whatever its length, hashes up to a verified
    /// node with `uncles`. Nothing is stored: this tells whether data is genuine, not that
    /// it fits the content length ([`length_proof`](super::length_proof)).
    pub fn hashes_up(&self, chunk: u64, data: &[u8], uncles: &[(Bin, Hash)]) -> bool {
        let (Some((n, root_bin)), Some(leaf)) = (self.shape, Bin::chunk(chunk)) else {
            return false;
        };
        chunk < n
            && self
                .climb(root_bin, leaf, self.alg.digest(data), uncles)
                .is_ok()
    }

    /// Verifies the leaf hashes of every chunk under `bin` at once (`leaves`, left to
    /// right, one per chunk the bin covers; those past the end must be all-zero) with the
    /// `uncles` of `bin`'s path, as [`verify_chunk`](Self::verify_chunk) does for one chunk:
    /// the subtree they rebuild must hash up to a verified node. On success the subtree's
    /// nodes and the path are stored as verified, so its chunks then verify with no further
    /// hashes. On any error the tree is unchanged.
    pub fn add_subtree(
        &mut self,
        bin: Bin,
        leaves: &[Hash],
        uncles: &[(Bin, Hash)],
    ) -> Result<(), VerifyError> {
        let (n, root_bin) = self.shape.ok_or(VerifyError::SizeUnknown)?;
        if bin.is_none() || !root_bin.contains(bin) {
            return Err(VerifyError::OutOfRange {
                chunk: bin.base_offset(),
                chunk_count: n,
            });
        }
        if leaves.len() as u64 != bin.base_length() {
            return Err(VerifyError::WrongLeafCount {
                expected: bin.base_length(),
                got: leaves.len() as u64,
            });
        }
        let first = bin.base_offset();
        let mut layer: Vec<(Bin, Hash)> = Vec::with_capacity(leaves.len());
        for (i, hash) in leaves.iter().enumerate() {
            let leaf = Bin::chunk(first + i as u64).ok_or(VerifyError::OutOfRange {
                chunk: first + i as u64,
                chunk_count: n,
            })?;
            self.check_hash_len(leaf, hash)?;
            if leaf.base_offset() >= n && !hash.is_zero() {
                return Err(VerifyError::Mismatch { bin: leaf });
            }
            layer.push((leaf, *hash));
        }
        let mut nodes: Vec<(Bin, Hash)> = Vec::with_capacity(2 * leaves.len());
        while layer.len() > 1 {
            let mut up = Vec::with_capacity(layer.len() / 2);
            for pair in layer.chunks_exact(2) {
                let ((l, lh), (_, rh)) = (pair[0], pair[1]);
                let h = if lh.is_zero() && rh.is_zero() {
                    Hash::zero(self.alg)
                } else {
                    self.alg.parent(&lh, &rh)
                };
                up.push((l.parent(), h));
            }
            nodes.append(&mut layer);
            layer = up;
        }
        let (top, hash) = layer[0];
        let path = self.climb(root_bin, top, hash, uncles)?;
        for (b, h) in nodes.iter().chain(&path) {
            // Padding is derived from the chunk count, never stored.
            if b.base_offset() < n {
                self.store.insert(*b, h);
            }
        }
        Ok(())
    }

    /// Walks up from `start`, whose hash is `hash`, combining with a verified sibling or
    /// the given one from `uncles` (siblings of `start`'s ancestors), until it reaches a
    /// verified node, whose hash must equal the computed one. Returns the nodes to store
    /// (the path and the uncles used); changes nothing.
    fn climb(
        &self,
        root_bin: Bin,
        start: Bin,
        hash: Hash,
        uncles: &[(Bin, Hash)],
    ) -> Result<Vec<(Bin, Hash)>, VerifyError> {
        // Given hashes by layer: each layer has exactly one sibling on the path.
        let mut given: [Option<Hash>; 64] = [None; 64];
        for (bin, hash) in uncles {
            self.check_hash_len(*bin, hash)?;
            let on_path = *bin != root_bin
                && root_bin.contains(*bin)
                && bin.layer() >= start.layer()
                && !bin.contains(start)
                && bin.parent().contains(start);
            if !on_path {
                return Err(VerifyError::HashNotOnPath(*bin));
            }
            let slot = &mut given[bin.layer() as usize];
            match slot {
                Some(h) if h != hash => return Err(VerifyError::ConflictingHashes(*bin)),
                _ => *slot = Some(*hash),
            }
            if let Some(known) = self.verified_hash(*bin)
                && known != *hash
            {
                return Err(VerifyError::Mismatch { bin: *bin });
            }
        }

        let mut h = hash;
        let mut node = start;
        let mut new_nodes: Vec<(Bin, Hash)> = Vec::new();
        loop {
            if let Some(known) = self.verified_hash(node) {
                if known != h {
                    return Err(VerifyError::Mismatch { bin: node });
                }
                break;
            }
            if node == root_bin {
                // Unreachable: the root is always stored. Refuse rather than panic.
                return Err(VerifyError::Mismatch { bin: node });
            }
            let sib = node.sibling();
            let sib_hash = match self.verified_hash(sib) {
                Some(v) => v,
                None => {
                    let g = given[sib.layer() as usize].ok_or(VerifyError::MissingHash(sib))?;
                    new_nodes.push((sib, g));
                    g
                }
            };
            new_nodes.push((node, h));
            h = if node.is_left() {
                self.alg.parent(&h, &sib_hash)
            } else {
                self.alg.parent(&sib_hash, &h)
            };
            node = node.parent();
        }

        Ok(new_nodes)
    }
}
