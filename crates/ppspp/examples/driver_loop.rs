//! The driver loop every adapter writes once: a seeder and a leecher engine exchange a
//! file over an in-memory "network" with a fixed delay, in virtual time.
//!
//! Run with `cargo run -p ppspp --example driver_loop`. A real adapter swaps the queue for
//! sockets or data channels and virtual time for a clock; the calls stay the same.

use ppspp::engine::{ContentInfo, Engine, EngineConfig, Event, SansIo};
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::MemoryStore;
use ppspp::time::Time;
use std::collections::VecDeque;
use std::time::Duration;

/// Peers are named by plain numbers here: 0 is the seeder, 1 the leecher.
type Node = Engine<u32, MemoryStore>;

/// One-way delay of the in-memory network.
const DELAY: Duration = Duration::from_millis(10);

/// Sends everything `node` has to send now; each datagram arrives `DELAY` later.
fn drain(
    node: &mut impl SansIo<Addr = u32>,
    from: u32,
    now: Time,
    buf: &mut Vec<u8>,
    wire: &mut VecDeque<(Time, u32, u32, Vec<u8>)>,
) {
    while let Some(to) = node.poll_transmit(now, buf) {
        wire.push_back((now + DELAY, from, to, buf.clone()));
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let content: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let chunk_size = 1024;
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, chunk_size, &content)?;
    let info = ContentInfo {
        root: tree.root(),
        hash: tree.algorithm(),
        chunk_size: chunk_size as u32,
        content_len: content.len() as u64,
    };
    let seeder = Engine::new_seeder(
        EngineConfig::default(),
        &tree,
        MemoryStore::with_content(content.clone(), chunk_size),
        Time::ZERO,
    )?;
    let leecher = Engine::new(
        EngineConfig {
            seed: 1,
            ..EngineConfig::default()
        },
        info,
        MemoryStore::new(content.len(), chunk_size),
        Time::ZERO,
    )?;
    let mut nodes: [Node; 2] = [seeder, leecher];
    let mut wire = VecDeque::new();
    let mut buf = Vec::new();
    let mut now = Time::ZERO;

    // The leecher opens the channel; its handshake goes out on the first drain.
    nodes[1].connect(0, now);
    loop {
        // 1. Send everything that is due.
        for (id, node) in nodes.iter_mut().enumerate() {
            drain(node, id as u32, now, &mut buf, &mut wire);
        }
        // 2. Act on events.
        while let Some(event) = nodes[1].poll_event() {
            if let Event::Complete = event {
                let got = nodes[1].store().bytes();
                assert_eq!(got, &content[..], "every byte verified and stored");
                println!(
                    "complete after {:?} of virtual time",
                    now.saturating_since(Time::ZERO)
                );
                return Ok(());
            }
        }
        // 3. Sleep until the next datagram arrives or the next deadline passes.
        let next_datagram = wire.front().map(|(at, ..)| *at);
        let next_timer = nodes.iter().filter_map(|n| n.poll_timeout()).min();
        now = match (next_datagram, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => return Err("nothing left to do before the transfer completed".into()),
        }
        .max(now);
        // 4. Hand in what arrived, then the time.
        while wire.front().is_some_and(|(at, ..)| *at <= now) {
            if let Some((_, from, to, bytes)) = wire.pop_front() {
                nodes[to as usize].handle_datagram(now, from, &bytes);
            }
        }
        for node in &mut nodes {
            if node.poll_timeout().is_some_and(|t| t <= now) {
                node.handle_timeout(now);
            }
        }
    }
}
