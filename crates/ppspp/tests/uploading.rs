//! An engine that does not upload (`Engine::set_uploading(false)`, a viewer on a metered
//! connection): it announces nothing and serves nothing, and a peer that meets only it
//! gets nothing until it uploads again.

use crate::common;

use common::engines::{sparse_leecher, sparse_seeder};
use common::virtual_net::VirtualNet as Net;
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::time::Time;
use std::time::Duration;

const CS: usize = 1024;

#[test]
fn a_peer_that_does_not_upload_announces_and_serves_nothing_until_it_does() {
    let data: Vec<u8> = (0..300 * CS).map(|i| (i * 5 + i / 71) as u8).collect();
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut nodes = vec![sparse_seeder(&tree, &data), sparse_leecher(&tree, 2, None)];
    nodes[0].set_uploading(false);
    assert!(!nodes[0].is_uploading());
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    net.run(&mut nodes, Time::from_millis(5_000), |_| false);
    assert_eq!(nodes[1].have().count_filled(), 0, "nothing came");
    assert_eq!(nodes[0].stats().bytes_uploaded, 0);
    nodes[0].set_uploading(true);
    net.run(&mut nodes, Time::from_millis(30_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete(), "everything came once it uploads");
}

#[test]
fn a_peer_that_stops_uploading_mid_transfer_sends_nothing_more() {
    let data: Vec<u8> = (0..3000 * CS).map(|i| (i * 3 + i / 97) as u8).collect();
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut nodes = vec![sparse_seeder(&tree, &data), sparse_leecher(&tree, 2, None)];
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    net.run(&mut nodes, Time::from_millis(5_000), |n| {
        n[1].have().count_filled() >= 100
    });
    let had = nodes[1].have().count_filled();
    assert!(
        had > 0 && !nodes[1].is_complete(),
        "mid-transfer: {had} chunks"
    );
    nodes[0].set_uploading(false);
    // What was on its way when the CHOKE went lands; nothing after.
    let until = net.now + Duration::from_millis(300);
    net.run(&mut nodes, until, |_| false);
    let settled = nodes[1].have().count_filled();
    let until = net.now + Duration::from_millis(5_000);
    net.run(&mut nodes, until, |_| false);
    assert_eq!(nodes[1].have().count_filled(), settled);
    assert!(!nodes[1].is_complete());
}
