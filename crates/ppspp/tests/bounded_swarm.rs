//! Pages bounded in memory playing one video together, as browsers do: a seeder marked as
//! origin, pages joining one after another, each playhead at its append position, waits
//! while starving, then every page seeking back into chunks its peers let go of long ago.
//! Their HAVEs stand (RFC 7574 has no way to take one back), so requests to them expire.
//! `cargo test -p ppspp --test integration bounded_swarm:: -- --nocapture` prints the page
//! steps stalled and a hash of every datagram sent, which compares the behaviour of two
//! builds on the paths a page drives.

use crate::common;
use common::engines::leecher_with;
use common::virtual_net::VirtualNet;
use ppspp::engine::{CloseReason, Engine, EngineConfig, Event, Misbehaviour, PickerKind};
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::MemoryStore;
use ppspp::time::Time;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

const PAGES: usize = 8;
const CHUNK: usize = 8192;
/// Chunks appended at most ahead of what plays.
const BUFFER: u64 = 24;
/// One step of the pages' loop.
const STEP: Duration = Duration::from_millis(50);

fn first_missing(n: &Engine<u32, MemoryStore>, from: u64, total: u64) -> u64 {
    (from..total)
        .find(|&c| !n.have().has_chunk(c))
        .unwrap_or(total)
}

/// What a run did.
struct Run {
    /// FNV-1a over every datagram sent, with its sender and receiver.
    hash: u64,
    /// Channels the pages closed, by reason.
    closes: Vec<CloseReason>,
    /// Page steps spent stalled (playback at the append position) before each page's
    /// seek back, and after it.
    stalls: u64,
    stalls_after_seek: [u64; PAGES],
    /// Bytes the seeder uploaded.
    seeder_uploaded: u64,
}

fn run(loss_per_mille: u64, seed: u64, bound: u64) -> Run {
    let len: usize = 3 * 1024 * 1024 + 1234;
    let data: Vec<u8> = (0..len as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CHUNK, &data).unwrap();
    let total = len.div_ceil(CHUNK) as u64;
    let vod = |seed| EngineConfig {
        seed,
        picker: PickerKind::Vod { window: 32 },
        max_held_bytes: Some(bound),
        ..EngineConfig::default()
    };
    let seeder = Engine::new_seeder(
        EngineConfig {
            max_held_bytes: None,
            ..vod(1)
        },
        &tree,
        MemoryStore::with_content(data, CHUNK),
        Time::ZERO,
    )
    .unwrap();
    let mut nodes = vec![seeder];
    for i in 1..=PAGES as u64 {
        nodes.push(leecher_with(&tree, vod(i + 1)));
    }
    let mut net = VirtualNet::new(Duration::from_millis(15), loss_per_mille, seed);
    let hash = Rc::new(Cell::new(0xcbf2_9ce4_8422_2325_u64));
    let seen = Rc::clone(&hash);
    net.observer = Some(Box::new(move |from, to, bytes: &[u8]| {
        let mut x = seen.get();
        for b in [from as u8, to as u8].iter().chain(bytes) {
            x = (x ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        seen.set(x);
    }));
    // `play`: the chunk playing; `append`: the first not appended (the playhead).
    let mut play = [0u64; PAGES + 1];
    let mut append = [0u64; PAGES + 1];
    let mut closes = Vec::new();
    let mut stalls = 0;
    let mut stalls_after_seek = [0; PAGES];
    let mut now = Time::ZERO;
    for step in 0..1200u64 {
        for i in 1..=PAGES {
            // Page i opens 250 ms after page i - 1, connected to the seeder and to those
            // before it.
            if step == (i as u64 - 1) * 5 {
                nodes[i].connect(0, now);
                nodes[i].set_origin(&0, true);
                for j in 1..i {
                    nodes[i].connect(j as u32, now);
                }
                nodes[i].set_read_ahead(Some(64));
                nodes[i].set_origin_read_ahead(Some(8));
            }
            if step < (i as u64 - 1) * 5 || play[i] >= total {
                continue;
            }
            if step == 600 + i as u64 * 7 {
                // A seek back to the middle, where the others played long ago.
                play[i] = total / 2 + i as u64 * 3;
                append[i] = play[i];
            }
            append[i] = first_missing(&nodes[i], append[i], total).min(play[i] + BUFFER);
            nodes[i].set_playhead(append[i]);
            if play[i] < append[i] {
                // Ten chunks a second.
                if step % 2 == 0 {
                    play[i] += 1;
                }
            } else if append[i] < total {
                if step >= 600 + i as u64 * 7 {
                    stalls_after_seek[i - 1] += 1;
                } else {
                    stalls += 1;
                }
            }
            let starving = append[i] < play[i] + 4 && append[i] < total;
            nodes[i].set_waiting_for(starving.then(|| append[i]..(append[i] + 4).min(total)));
        }
        if step == 900 {
            nodes[3].peer_lost(&0);
        }
        now += STEP;
        net.run(&mut nodes, now, |_| false);
        for node in &mut nodes[1..] {
            while let Some(e) = node.poll_event() {
                if let Event::PeerClosed { reason, .. } = e {
                    closes.push(reason);
                }
            }
        }
    }
    Run {
        hash: hash.get(),
        closes,
        stalls,
        stalls_after_seek,
        seeder_uploaded: nodes[0].stats().bytes_uploaded,
    }
}

#[test]
fn pages_seeking_back_neither_close_each_other_nor_crawl() {
    for (loss, seed, bound) in [(10, 7, 1 << 20), (30, 9, 512 << 10)] {
        let r = run(loss, seed, bound);
        println!(
            "loss {loss}‰, bound {bound} B: datagram hash {:016x}, page steps stalled {} before \
             the seek back and {:?} after it, seeder uploaded {} B, closes {:?}",
            r.hash, r.stalls, r.stalls_after_seek, r.seeder_uploaded, r.closes
        );
        // Asked for chunks they let go of, honest pages do not deliver them; asked again
        // later, each wait starts afresh: none is taken for a peer that stopped delivering.
        let stopped = r
            .closes
            .iter()
            .filter(|c| **c == CloseReason::Misbehaving(Misbehaviour::StoppedDelivering))
            .count();
        assert_eq!(stopped, 0, "closes: {:?}", r.closes);
        if bound >= 1 << 20 {
            // The package's smallest bound: after the seek back, due chunks asked of peers
            // that let them go are taken over by the seeder within a fraction of a second,
            // so no page stalls for 5 s in all.
            let worst = r.stalls_after_seek.iter().max().copied().unwrap_or(0);
            assert!(
                worst * STEP.as_millis() as u64 <= 5000,
                "page steps stalled after the seek back: {:?}",
                r.stalls_after_seek
            );
        }
    }
}
