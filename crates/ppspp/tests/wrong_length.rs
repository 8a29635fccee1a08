//! A swarm given the wrong content length (a URI's `len=`): the honest seeder's chunks
//! show it, the URI is reported, and nobody is blamed. A peer that sends bad data for the
//! same chunks is still refused.

use crate::common;

use common::virtual_net::VirtualNet as Net;
use ppspp::engine::{CloseReason, ContentInfo, Engine, EngineConfig, Event};
use ppspp::merkle::{ContentLength, HashAlgorithm, MerkleTree};
use ppspp::store::MemoryStore;
use ppspp::time::Time;
use std::time::Duration;

type Node = Engine<u32, MemoryStore>;

const CS: usize = 1024;

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 13 + i / 1021) as u8).collect()
}

/// A seeder of `data` (node 0) and a leecher told it is `stated` bytes long (node 1).
fn pair(data: &[u8], stated: u64) -> Vec<Node> {
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CS, data).unwrap();
    let seeder = Engine::new_seeder(
        EngineConfig {
            seed: 1,
            ..EngineConfig::default()
        },
        &tree,
        MemoryStore::with_content(data.to_vec(), CS),
        Time::ZERO,
    )
    .unwrap();
    let info = ContentInfo {
        root: tree.root(),
        hash: HashAlgorithm::Sha256,
        chunk_size: CS as u32,
        content_len: stated,
    };
    let mut leecher = Engine::new(
        EngineConfig {
            seed: 2,
            ..EngineConfig::default()
        },
        info,
        MemoryStore::new(stated as usize, CS),
        Time::ZERO,
    )
    .unwrap();
    leecher.connect(0, Time::ZERO);
    vec![seeder, leecher]
}

fn exactly(len: u64) -> ContentLength {
    ContentLength { min: len, max: len }
}

fn events(node: &mut Node) -> Vec<Event<u32>> {
    std::iter::from_fn(|| node.poll_event()).collect()
}

/// Runs the pair for up to 10 s, or until the leecher reports the wrong length; returns
/// every event the leecher reported.
fn run(nodes: &mut [Node], net: &mut Net) -> Vec<Event<u32>> {
    let mut seen = Vec::new();
    net.run(nodes, Time::from_millis(10_000), |_| false);
    seen.extend(events(&mut nodes[1]));
    seen
}

fn shown(ev: &[Event<u32>]) -> Vec<(u64, ContentLength)> {
    ev.iter()
        .filter_map(|e| match e {
            Event::WrongContentLength(w) => Some((w.stated, w.shown)),
            _ => None,
        })
        .collect()
}

fn blamed(ev: &[Event<u32>]) -> bool {
    ev.iter().any(|e| {
        matches!(
            e,
            Event::ChunkRejected { .. }
                | Event::PeerClosed {
                    reason: CloseReason::Misbehaving(_),
                    ..
                }
        )
    })
}

#[test]
fn a_wrong_length_is_reported_once_and_the_honest_seeder_is_kept() {
    let data = content(40 * CS + 300);
    let real = data.len() as u64;
    // Same chunk count (the last chunk shorter or longer), fewer chunks, more chunks.
    let cases = [
        (real - 100, exactly(real)),
        (real + 200, exactly(real)),
        // Chunk 0 climbs to the root in six steps: 33 to 64 chunks.
        (
            30 * CS as u64 + 5,
            ContentLength {
                min: 32 * CS as u64 + 1,
                max: 64 * CS as u64,
            },
        ),
        (64 * CS as u64, exactly(real)),
        // One chunk short: its peaks are a prefix of the real ones, which do not rebuild
        // the root as a set; the chunks' paths show content past chunk 39 and padding from
        // chunk 48.
        (
            40 * CS as u64 - 500,
            ContentLength {
                min: 40 * CS as u64 + 1,
                max: 48 * CS as u64,
            },
        ),
        // Forty full chunks: only the content past chunk 39 shows there is more.
        (
            40 * CS as u64,
            ContentLength {
                min: 40 * CS as u64 + 1,
                max: 48 * CS as u64,
            },
        ),
    ];
    for (stated, expected) in cases {
        let mut nodes = pair(&data, stated);
        let mut net = Net::new(Duration::from_millis(10), 0, 3);
        let ev = run(&mut nodes, &mut net);
        assert_eq!(
            shown(&ev),
            vec![(stated, expected)],
            "len={stated}: {ev:?} {:?}",
            nodes[1].stats()
        );
        assert!(!blamed(&ev), "len={stated}: the seeder was blamed: {ev:?}");
        assert!(!nodes[1].is_complete(), "len={stated}");
        // Nothing more is asked for once the length is known to be wrong.
        let before = nodes[0].stats().bytes_uploaded;
        let at = net.now;
        net.run(&mut nodes, at + Duration::from_secs(5), |_| false);
        let after = nodes[0].stats().bytes_uploaded;
        assert!(
            after - before <= 64 * CS as u64,
            "len={stated}: {} bytes sent after the report",
            after - before
        );
    }
}

#[test]
fn the_right_length_reports_nothing_and_a_corrupting_peer_is_still_refused() {
    let data = content(40 * CS + 300);
    let mut nodes = pair(&data, data.len() as u64);
    let mut net = Net::new(Duration::from_millis(10), 0, 3);
    net.corrupt_from = Some(0);
    let ev = run(&mut nodes, &mut net);
    assert!(shown(&ev).is_empty(), "{ev:?}");
    assert!(blamed(&ev), "a corrupting seeder must be refused: {ev:?}");

    // A seeder whose DATA lose their tail: short chunks that are not the content's.
    let mut nodes = pair(&data, data.len() as u64);
    let mut net = Net::new(Duration::from_millis(10), 0, 3);
    net.rewrite.insert(
        0,
        Box::new(|d: &[u8]| {
            let cut = if d.len() > 512 { 10 } else { 0 };
            d[..d.len() - cut].to_vec()
        }),
    );
    let ev = run(&mut nodes, &mut net);
    assert!(shown(&ev).is_empty(), "{ev:?}");
    assert!(blamed(&ev), "a truncating seeder must be refused: {ev:?}");

    let mut nodes = pair(&data, data.len() as u64);
    let mut net = Net::new(Duration::from_millis(10), 0, 3);
    let ev = run(&mut nodes, &mut net);
    assert!(nodes[1].is_complete());
    assert!(shown(&ev).is_empty() && !blamed(&ev), "{ev:?}");
}
