//! What a peer's hashes prove about the content's length. The root fixes the content, so
//! only the true chunk count's peaks rebuild it, and only the true last chunk hashes up to
//! it: a receiver that knows only the root learns the length this way (a probe by root,
//! `discover.rs`), and one told a wrong length (a URI's `len=`) learns that the URI is
//! wrong, not the peer that sent what the root asks for.

use super::ContentInfo;
use crate::Bin;
use crate::merkle::{Hash, VerifyingTree};

/// The content's true size, as a peer's hashes (and last chunk) proved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProvenLength {
    /// The chunk count the root covers.
    pub chunks: u64,
    /// The chunk size in bytes (ours, which the root was built with).
    pub chunk_size: u32,
    /// The length in bytes, once the last chunk was seen to verify; else only the range
    /// the chunk count allows (`(chunks - 1) * chunk_size + 1 ..= chunks * chunk_size`).
    pub bytes: Option<u64>,
}

impl ProvenLength {
    /// What is wrong with a length `told`, in words, for an error message.
    pub fn explain(&self, told: u64) -> String {
        let cs = u64::from(self.chunk_size);
        let size = match self.bytes {
            Some(b) => format!("{b} bytes"),
            None => format!(
                "{} chunks of {cs} bytes ({} to {} bytes)",
                self.chunks,
                (self.chunks - 1) * cs + 1,
                self.chunks * cs
            ),
        };
        format!("the content length {told} is wrong: the root hash covers {size}")
    }
}

/// Learns the size of `tree` (which must not know it yet) from the peaks among `hashes`,
/// sent with the chunk at `leaf`. Peaks come first, then uncles, and uncles can look like
/// peaks (those of chunk 3 of 4 tile chunks 0..3 as the peaks of 3 chunks would): only
/// the right reading rebuilds the root, so each is tried, the peak runs from the longest,
/// then the root as the single peak with the uncles reaching it. False if none does.
pub(super) fn learn_peaks(tree: &mut VerifyingTree, leaf: Bin, hashes: &[(Bin, Hash)]) -> bool {
    let chain = peak_chain(hashes);
    let mut top = leaf;
    while !top.is_none() && hashes.iter().any(|(b, _)| *b == top.sibling()) {
        top = top.parent();
    }
    let single = [(top, tree.root())];
    (2..=chain.len())
        .rev()
        .map(|k| &chain[..k])
        .chain([&single[..]])
        .any(|peaks| tree.add_peaks(peaks).is_ok())
}

/// The content's true size if the chunk `chunk` (`data`, with `hashes`) a peer sent shows
/// that `content` (the length we were told, with `tree`'s root) is wrong: its peaks rebuild
/// the root for another chunk count, or it is the last chunk and verifies at another
/// length. `None` when it proves nothing of the kind (a bad chunk is then the peer's).
pub(super) fn disproved_length(
    content: &ContentInfo,
    tree: &VerifyingTree,
    chunk: u64,
    data: &[u8],
    hashes: &[(Bin, Hash)],
) -> Option<ProvenLength> {
    let told_chunks = tree.chunk_count()?;
    let leaf = Bin::chunk(chunk)?;
    let cs = tree.chunk_size();
    let uncles: Vec<(Bin, Hash)> = hashes
        .iter()
        .filter(|(b, _)| !b.contains(leaf) && b.parent().contains(leaf))
        .copied()
        .collect();
    let proven = |chunks: u64, bytes: Option<u64>| ProvenLength {
        chunks,
        chunk_size: content.chunk_size,
        bytes,
    };
    // Another chunk count's peaks rebuild the root for that count only.
    let mut fresh = VerifyingTree::new_unknown_size(tree.algorithm(), tree.root(), cs).ok()?;
    if learn_peaks(&mut fresh, leaf, hashes) {
        let chunks = fresh.chunk_count()?;
        let bytes = fresh
            .verify_chunk(chunk, data, &uncles)
            .ok()
            .and_then(|()| fresh.content_len());
        let wrong = chunks != told_chunks || bytes.is_some_and(|b| b != content.content_len);
        return wrong.then(|| proven(chunks, bytes));
    }
    // No peaks here: a chunk of another length than ours that hashes up to the root as the
    // last one (all padding to its right) is the true content's last chunk.
    let told_len = if chunk + 1 == told_chunks {
        content.content_len - chunk * cs as u64
    } else {
        cs as u64
    };
    let other_length = !data.is_empty() && data.len() <= cs && data.len() as u64 != told_len;
    if other_length && tree.hashes_up_as_last(chunk, data, &uncles) {
        let bytes = chunk * cs as u64 + data.len() as u64;
        return Some(proven(chunk + 1, Some(bytes)));
    }
    None
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
