//! Sparse storage of verified node hashes, allocated in pages on demand.
//!
//! Nodes are grouped per layer into pages of 64 consecutive offsets, each page one flat
//! byte array plus a 64-bit "present" mask, kept in a `BTreeMap`. A sequential download
//! fills pages densely (about `hash_size` bytes per verified node); nothing is allocated
//! for nodes never verified, so even an absurd chunk count announced by peers costs only
//! what was actually verified.

use std::collections::BTreeMap;

use super::Hash;
use crate::Bin;

const PAGE_SHIFT: u32 = 6;
const PAGE: u64 = 1 << PAGE_SHIFT;

#[derive(Clone, Debug)]
struct Page {
    present: u64,
    hashes: Box<[u8]>,
}

#[derive(Clone, Debug)]
pub(crate) struct NodeStore {
    size: usize,
    pages: BTreeMap<(u32, u64), Page>,
    len: u64,
}

impl NodeStore {
    pub(crate) fn new(hash_size: usize) -> NodeStore {
        NodeStore {
            size: hash_size,
            pages: BTreeMap::new(),
            len: 0,
        }
    }

    fn key(bin: Bin) -> ((u32, u64), usize) {
        let offset = bin.layer_offset();
        (
            (bin.layer(), offset >> PAGE_SHIFT),
            (offset & (PAGE - 1)) as usize,
        )
    }

    pub(crate) fn get(&self, bin: Bin) -> Option<Hash> {
        let (key, i) = NodeStore::key(bin);
        let page = self.pages.get(&key)?;
        if page.present & (1 << i) == 0 {
            return None;
        }
        Hash::from_slice(&page.hashes[i * self.size..(i + 1) * self.size])
    }

    pub(crate) fn contains(&self, bin: Bin) -> bool {
        let (key, i) = NodeStore::key(bin);
        self.pages
            .get(&key)
            .is_some_and(|p| p.present & (1 << i) != 0)
    }

    /// Stores `hash` (which has the store's hash size) for `bin`.
    pub(crate) fn insert(&mut self, bin: Bin, hash: &Hash) {
        let (key, i) = NodeStore::key(bin);
        let size = self.size;
        let page = self.pages.entry(key).or_insert_with(|| Page {
            present: 0,
            hashes: vec![0u8; PAGE as usize * size].into_boxed_slice(),
        });
        if page.present & (1 << i) == 0 {
            self.len += 1;
        }
        page.present |= 1 << i;
        page.hashes[i * size..(i + 1) * size].copy_from_slice(hash.as_bytes());
    }

    /// Number of stored nodes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}
