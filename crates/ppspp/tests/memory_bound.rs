//! Engines that hold at most `EngineConfig::max_held_bytes` of the content: a window from
//! the playhead is fetched, what falls behind is let go of, and a seek back fetches it
//! again from peers that saw it announced. (Peers that ask for what went: the unit tests
//! of `engine/memory_bound.rs`.)

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
    (0..len).map(|i| (i * 7 + i / 333) as u8).collect()
}

fn seeder(tree: &MerkleTree, data: &[u8]) -> Node {
    sparse_seeder(tree, data)
}

fn leecher(tree: &MerkleTree, seed: u64, bound: Option<u64>) -> Node {
    sparse_leecher(tree, seed, bound)
}

/// Plays node `who` through the content: the playhead moves to the first chunk it lacks,
/// one step every `step`; checks the bound after every step. Returns the time reached.
fn play_through(nodes: &mut [Node], net: &mut Net, who: usize, bound: u64, limit: Time) -> Time {
    let n = nodes[who].chunk_count();
    let mut played = 0;
    while played < n && net.now < limit {
        let at = net.now + Duration::from_millis(20);
        net.run(nodes, at, |_| false);
        let node = &mut nodes[who];
        assert!(
            node.store().held_bytes() <= bound,
            "holds {} bytes, more than {bound}",
            node.store().held_bytes()
        );
        // Playback goes on over what is held.
        while played < n && node.store().holds(played) {
            played += 1;
        }
        node.set_playhead(played.min(n - 1));
    }
    net.now
}

#[test]
fn a_bounded_leecher_plays_through_holding_at_most_its_bound() {
    let data = content(600 * CS + 100);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let bound = 64 * CS as u64;
    let mut nodes = vec![seeder(&tree, &data), leecher(&tree, 2, Some(bound))];
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    let end = play_through(&mut nodes, &mut net, 1, bound, Time::from_millis(120_000));
    let stats = nodes[1].stats();
    assert_eq!(
        stats.chunks_verified,
        nodes[1].chunk_count(),
        "every chunk came once, at {end:?}"
    );
    assert!(stats.chunks_evicted >= stats.chunks_verified - 64);
    assert!(
        !nodes[1].is_complete(),
        "a bounded leecher of more does not hold it all"
    );
    // The last chunks are held, the first are not.
    let last = nodes[1].chunk_count() - 1;
    assert!(nodes[1].store().holds(last) && !nodes[1].store().holds(0));
    let mut out = Vec::new();
    assert!(
        nodes[1]
            .store()
            .read_range(last * CS as u64..data.len() as u64, &mut out)
    );
    assert_eq!(out, &data[last as usize * CS..]);
}

#[test]
fn a_seek_back_fetches_what_was_let_go_of_and_nothing_beyond_the_window() {
    let data = content(400 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let bound = 40 * CS as u64;
    let mut nodes = vec![seeder(&tree, &data), leecher(&tree, 2, Some(bound))];
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    play_through(&mut nodes, &mut net, 1, bound, Time::from_millis(60_000));
    assert!(!nodes[1].store().holds(10));
    let verified = nodes[1].stats().chunks_verified;
    nodes[1].set_playhead(10);
    let now = net.now;
    net.run(&mut nodes, now + Duration::from_secs(5), |_| false);
    // The window from chunk 10, three quarters of the bound, and nothing else.
    let window = (bound / 4 * 3) / CS as u64;
    assert_eq!(nodes[1].wanted_end(), 10 + window);
    assert!((10..10 + window).all(|c| nodes[1].store().holds(c)));
    assert!(!nodes[1].store().holds(10 + window));
    assert_eq!(nodes[1].stats().chunks_verified - verified, window);
    assert!(nodes[1].store().held_bytes() <= bound);
}

#[test]
fn without_a_bound_everything_is_held_as_before() {
    let data = content(300 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let mut nodes = vec![seeder(&tree, &data), leecher(&tree, 2, None)];
    nodes[1].connect(0, Time::ZERO);
    let mut net = Net::new(Duration::from_millis(5), 0, 1);
    net.run(&mut nodes, Time::from_millis(30_000), |n| {
        n[1].is_complete()
    });
    assert!(nodes[1].is_complete());
    assert_eq!(nodes[1].wanted_end(), nodes[1].chunk_count());
    assert_eq!(nodes[1].store().held_bytes(), data.len() as u64);
    assert_eq!(nodes[1].stats().chunks_evicted, 0);
}

/// A bounded page announces what it gets after its bound is reached: letting a chunk go
/// and keeping a new one leaves its chunk count where it was, and that must not read as
/// "nothing new".
#[test]
fn a_bounded_leecher_keeps_announcing_after_letting_go() {
    use ppspp::codec::{CodecConfig, Message, decode_datagram};
    use std::cell::Cell;
    use std::rc::Rc;

    let data = content(400 * CS);
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, &data).unwrap();
    let bound = 32 * CS as u64;
    let mut nodes = vec![
        seeder(&tree, &data),
        leecher(&tree, 2, Some(bound)),
        leecher(&tree, 3, Some(bound)),
    ];
    let mut net = Net::new(Duration::from_millis(5), 0, 9);
    let newest_announced = Rc::new(Cell::new(0u64));
    let seen = newest_announced.clone();
    let codec = CodecConfig {
        hash_size: 32,
        chunk_size: CS as u32,
        ..CodecConfig::default()
    };
    net.observer = Some(Box::new(move |from, to, bytes| {
        let Ok(dg) = decode_datagram(bytes, &codec) else {
            return;
        };
        if from != 1 || to != 2 {
            return;
        }
        for msg in dg.messages().flatten() {
            if let Message::Have(spec) = msg
                && let Some((_, last)) = spec.chunk_range(CS as u32)
            {
                seen.set(seen.get().max(last));
            }
        }
    }));
    nodes[1].connect(0, Time::ZERO);
    nodes[2].connect(1, Time::ZERO);
    let end = play_through(&mut nodes, &mut net, 1, bound, Time::from_millis(60_000));
    // HAVEs with nothing else to go with wait up to `max_have_delay`.
    net.run(&mut nodes, end + Duration::from_millis(100), |_| false);
    assert!(nodes[1].stats().chunks_evicted > 300);
    assert!(
        newest_announced.get() >= 390,
        "node 1 announced up to chunk {} of 400",
        newest_announced.get()
    );
}
