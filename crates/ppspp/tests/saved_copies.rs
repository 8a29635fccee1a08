//! Saved copies of chunks (a page's OPFS): a chunk saved with its proof is read back and
//! verified against the root alone after a restart, is announced and served like any
//! other, and a damaged copy is refused and fetched again.

use crate::common;

use common::engines::{sparse_leecher, sparse_seeder};
use common::virtual_net::VirtualNet as Net;
use ppspp::engine::{Engine, Event};
use ppspp::merkle::{HashAlgorithm, MerkleTree, VerifyError};
use ppspp::store::SparseStore;
use ppspp::time::Time;
use std::collections::BTreeMap;
use std::time::Duration;

type Node = Engine<u32, SparseStore>;
/// What an adapter saved: chunk → (data, proof).
type Saved = BTreeMap<u64, (Vec<u8>, Vec<u8>)>;

const CS: usize = 1024;

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 + i / 251) as u8).collect()
}

fn tree_of(data: &[u8]) -> MerkleTree {
    MerkleTree::from_content(HashAlgorithm::Sha256, CS, data).unwrap()
}

fn seeder(tree: &MerkleTree, data: &[u8]) -> Node {
    sparse_seeder(tree, data)
}

fn leecher(tree: &MerkleTree, seed: u64, bound: Option<u64>) -> Node {
    sparse_leecher(tree, seed, bound)
}

/// Every chunk `node` holds, with its proof, as an adapter saves them.
fn save_all(node: &Node, len: u64) -> Saved {
    let mut saved = Saved::new();
    for c in 0..node.chunk_count() {
        if let Some(proof) = node.chunk_proof(c) {
            let cs = CS as u64;
            let end = ((c + 1) * cs).min(len);
            let mut data = Vec::new();
            assert!(node.store().read_range(c * cs..end, &mut data));
            saved.insert(c, (data, proof));
        }
    }
    saved
}

/// Answers every read `node` asks for from `saved` (a missing copy is reported missing).
fn answer_reads(node: &mut Node, saved: &Saved) -> u64 {
    let mut read = 0;
    while let Some(range) = node.poll_saved_read() {
        for c in range {
            match saved.get(&c) {
                Some((data, proof)) => {
                    read += 1;
                    let _ = node.handle_saved_chunk(c, data, proof);
                }
                None => node.handle_saved_missing(c..c + 1),
            }
        }
    }
    read
}

/// A leecher that fetched all of `data` from a seeder, and what it saved.
fn fetched_and_saved(tree: &MerkleTree, data: &[u8]) -> Saved {
    let mut nodes = vec![seeder(tree, data), leecher(tree, 2, None)];
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    net.run(&mut nodes, Time::from_millis(30_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete());
    save_all(&nodes[1], data.len() as u64)
}

#[test]
fn saved_chunks_verify_against_the_root_alone_after_a_restart() {
    // Not a power of two, with a short last chunk: proofs of several lengths.
    let data = content(300 * CS + 77);
    let tree = tree_of(&data);
    let saved = fetched_and_saved(&tree, &data);
    assert_eq!(saved.len(), 301);

    let mut fresh = leecher(&tree, 3, None);
    fresh.add_saved(0..fresh.chunk_count());
    let read = answer_reads(&mut fresh, &saved);
    assert_eq!(read, 301);
    assert!(fresh.is_complete());
    let stats = fresh.stats();
    assert_eq!(
        (stats.chunks_restored, stats.bytes_restored),
        (301, data.len() as u64)
    );
    assert_eq!(
        (stats.bytes_downloaded, stats.chunks_verified),
        (0, 0),
        "read back, not downloaded"
    );
    let mut out = Vec::new();
    assert!(fresh.store().read_range(0..data.len() as u64, &mut out));
    assert_eq!(out, data);
    let mut restored = 0;
    while let Some(e) = fresh.poll_event() {
        if matches!(e, Event::ChunkRestored { .. }) {
            restored += 1;
        }
    }
    assert_eq!(restored, 301);
}

#[test]
fn a_damaged_copy_is_refused_and_the_chunk_fetched_again() {
    let data = content(64 * CS);
    let tree = tree_of(&data);
    let mut saved = fetched_and_saved(&tree, &data);
    saved.get_mut(&5).unwrap().0[100] ^= 1;
    let proof = &mut saved.get_mut(&9).unwrap().1;
    proof[0] ^= 1;
    saved.get_mut(&12).unwrap().1.truncate(32 * 2);
    saved.get_mut(&13).unwrap().1.extend_from_slice(&[0; 32]);
    saved.remove(&20);

    let mut fresh = leecher(&tree, 3, None);
    fresh.add_saved(0..64);
    let mut refused = BTreeMap::new();
    while let Some(range) = fresh.poll_saved_read() {
        for c in range {
            match saved.get(&c) {
                Some((d, p)) => {
                    if let Err(e) = fresh.handle_saved_chunk(c, d, p) {
                        refused.insert(c, e);
                    }
                }
                None => fresh.handle_saved_missing(c..c + 1),
            }
        }
    }
    assert_eq!(refused.keys().copied().collect::<Vec<_>>(), [5, 9, 12, 13]);
    assert!(matches!(refused[&5], VerifyError::Mismatch { .. }));
    assert!(matches!(refused[&12], VerifyError::MissingHash(_)));
    assert!(matches!(refused[&13], VerifyError::HashNotOnPath(_)));
    for c in [5, 9, 12, 13, 20] {
        assert!(!fresh.store().holds(c), "chunk {c}");
    }
    assert_eq!(fresh.stats().chunks_saved_corrupt, 4);
    assert_eq!(fresh.stats().chunks_restored, 59);

    // The five come from a seeder, and nothing else does.
    let mut nodes = vec![seeder(&tree, &data), fresh];
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    net.run(&mut nodes, Time::from_millis(30_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete());
    assert_eq!(nodes[1].stats().chunks_verified, 5);
    let mut out = Vec::new();
    assert!(nodes[1].store().read_range(0..data.len() as u64, &mut out));
    assert_eq!(out, data);
}

#[test]
fn chunks_read_back_are_served_to_peers_and_not_fetched() {
    let data = content(200 * CS);
    let tree = tree_of(&data);
    let saved = fetched_and_saved(&tree, &data);
    // Node 0 restarted with every chunk saved and a seeder (node 2) connected: it reads
    // back rather than fetch. Node 1 then gets everything from node 0.
    let mut nodes = vec![
        leecher(&tree, 3, None),
        leecher(&tree, 4, None),
        seeder(&tree, &data),
    ];
    nodes[0].add_saved(0..200);
    nodes[0].connect(2, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    let mut t = Time::ZERO;
    while t < Time::from_millis(5_000) && !nodes[0].is_complete() {
        t += Duration::from_millis(10);
        net.run(&mut nodes, t, |_| false);
        answer_reads(&mut nodes[0], &saved);
    }
    assert!(nodes[0].is_complete());
    assert_eq!(nodes[0].stats().chunks_verified, 0, "nothing fetched");
    assert_eq!(nodes[2].stats().bytes_uploaded, 0);

    nodes[1].connect(0, t);
    net.run(&mut nodes, t + Duration::from_secs(30), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete());
    assert!(nodes[0].stats().bytes_uploaded >= data.len() as u64 / 2);
    let mut out = Vec::new();
    assert!(nodes[1].store().read_range(0..data.len() as u64, &mut out));
    assert_eq!(out, data);
}

#[test]
fn a_bounded_engine_reads_back_its_window_and_again_after_a_seek_back() {
    let data = content(400 * CS);
    let tree = tree_of(&data);
    let saved = fetched_and_saved(&tree, &data);
    let bound = 40 * CS as u64;
    let window = bound / 4 * 3 / CS as u64;
    let mut node = leecher(&tree, 3, Some(bound));
    node.add_saved(0..400);
    // Reads go from the playhead, within the window only.
    let first = node.poll_saved_read().unwrap();
    assert_eq!(first, 0..window);
    assert_eq!(node.poll_saved_read(), None, "nothing beyond the window");
    for c in first {
        let (data, proof) = &saved[&c];
        node.handle_saved_chunk(c, data, proof).unwrap();
    }
    assert_eq!(node.stats().chunks_restored, window);
    // Playing through: always within the bound, every chunk read back, none fetched.
    for played in 0..400 {
        node.set_playhead(played);
        answer_reads(&mut node, &saved);
        assert!(node.store().holds(played), "chunk {played}");
        assert!(node.store().held_bytes() <= bound);
    }
    assert!(!node.store().holds(10));
    let before = node.stats().chunks_restored;
    node.set_playhead(10);
    let again = answer_reads(&mut node, &saved);
    assert_eq!(again, window);
    assert!((10..10 + window).all(|c| node.store().holds(c)));
    assert_eq!(node.stats().chunks_restored - before, window);
    assert_eq!(node.stats().chunks_verified, 0);
}

#[test]
fn a_proof_is_only_given_for_held_chunks() {
    let data = content(10 * CS);
    let tree = tree_of(&data);
    let node = leecher(&tree, 3, None);
    assert_eq!(node.chunk_proof(0), None);
    let seeder = seeder(&tree, &data);
    // Ten chunks: four uncles for chunk 0 (1, 2–3, 4–7, 8–15 cut to 8–9); two for chunk 9
    // (chunk 8, and the peak 0–7).
    assert_eq!(seeder.chunk_proof(0).unwrap().len(), 4 * 32);
    assert_eq!(seeder.chunk_proof(9).unwrap().len(), 2 * 32);
    assert_eq!(seeder.chunk_proof(10), None);
}

#[test]
fn chunks_being_read_back_are_not_asked_of_peers_when_the_window_comes_back() {
    let data = content(400 * CS);
    let tree = tree_of(&data);
    let bound = 40 * CS as u64;
    let mut nodes = vec![seeder(&tree, &data), leecher(&tree, 3, Some(bound))];
    nodes[1].add_saved(0..10);
    let reading = nodes[1].poll_saved_read().unwrap();
    assert_eq!(reading, 0..10);
    // The window goes away and comes back while the read is in flight (never answered).
    nodes[1].set_playhead(200);
    nodes[1].set_playhead(0);
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    net.run(&mut nodes, Time::from_millis(10_000), |_| false);
    assert!((10..30).all(|c| nodes[1].store().holds(c)), "the rest came");
    assert!(
        reading.clone().all(|c| !nodes[1].store().holds(c)),
        "chunks being read were asked of the seeder"
    );
}
