//! An engine bounded in how far ahead of the playhead it fetches
//! (`Engine::set_read_ahead`): nothing beyond is asked of peers, the window moves with
//! the playhead, and what was fetched stays held and served.

use crate::common;

use common::engines::{sparse_leecher, sparse_seeder};
use common::virtual_net::VirtualNet as Net;
use ppspp::engine::Engine;
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::SparseStore;
use ppspp::time::Time;
use std::time::Duration;

type Node = Engine<u32, SparseStore>;

const CS: usize = 1024;

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 11 + i / 517) as u8).collect()
}

fn held(node: &Node) -> Vec<std::ops::Range<u64>> {
    node.have().filled_ranges().collect()
}

#[test]
fn nothing_beyond_the_read_ahead_is_fetched_and_what_was_fetched_is_served() {
    let data = content(500 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut nodes = vec![
        sparse_seeder(&tree, &data),
        sparse_leecher(&tree, 2, None),
        sparse_leecher(&tree, 3, None),
    ];
    nodes[1].set_read_ahead(Some(50));
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    net.run(&mut nodes, Time::from_millis(5_000), |_| false);
    assert_eq!(held(&nodes[1]), vec![0..50], "the read-ahead from chunk 0");
    assert_eq!(nodes[1].wanted_end(), 50);
    // Playback moves on: the window with it; what is behind stays held.
    nodes[1].set_playhead(30);
    net.run(&mut nodes, Time::from_millis(10_000), |_| false);
    assert_eq!(held(&nodes[1]), vec![0..80]);
    assert_eq!(nodes[1].stats().chunks_verified, 80, "each chunk once");
    // A later peer that meets only this one gets all it holds from it.
    nodes[2].connect(1, net.now);
    let until = net.now + Duration::from_secs(5);
    net.run(&mut nodes, until, |_| false);
    assert_eq!(held(&nodes[2]), vec![0..80]);
    // No bound again: the rest comes.
    nodes[1].set_read_ahead(None);
    let until = net.now + Duration::from_secs(20);
    net.run(&mut nodes, until, |n| n[1].is_complete());
    assert!(nodes[1].is_complete());
}
