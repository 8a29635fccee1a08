//! Engine throughput in memory: a seeder and a leecher engine exchange datagrams directly
//! (no network, no sleeping), so this measures protocol processing: codec, Merkle
//! verification, binmaps, scheduling. Throughput is per content byte delivered.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ppspp::engine::{ContentInfo, Engine, EngineConfig};
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::MemoryStore;
use ppspp::time::Time;
use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

const CONTENT: usize = 4 << 20;

/// Moves datagrams both ways until the leecher completes; virtual time advances 20 µs per
/// datagram (a 50 k datagrams/s link with no queue), so pacing and timers behave.
fn transfer(data: &[u8], tree: &MerkleTree, chunk_size: usize) -> u64 {
    let mut seeder: Engine<u32, MemoryStore> = Engine::new_seeder(
        EngineConfig::default(),
        tree,
        MemoryStore::with_content(data.to_vec(), chunk_size),
        Time::ZERO,
    )
    .unwrap();
    let info = ContentInfo {
        root: tree.root(),
        hash: tree.algorithm(),
        chunk_size: chunk_size as u32,
        content_len: data.len() as u64,
    };
    let mut leecher: Engine<u32, MemoryStore> = Engine::new(
        EngineConfig {
            seed: 2,
            ..EngineConfig::default()
        },
        info,
        MemoryStore::new(data.len(), chunk_size),
        Time::ZERO,
    )
    .unwrap();
    leecher.connect(0, Time::ZERO);
    let mut now = Time::ZERO;
    let mut wire: VecDeque<(u32, Vec<u8>)> = VecDeque::new();
    let mut datagrams = 0u64;
    let mut buf = Vec::new();
    while !leecher.is_complete() {
        // The wire holds copies: one link, one datagram at a time.
        while let Some(to) = seeder.poll_transmit(now, &mut buf) {
            wire.push_back((to, buf.clone()));
        }
        while let Some(to) = leecher.poll_transmit(now, &mut buf) {
            wire.push_back((to, buf.clone()));
        }
        if let Some((to, bytes)) = wire.pop_front() {
            now += Duration::from_micros(20);
            datagrams += 1;
            if to == 0 {
                seeder.handle_datagram(now, 1, &bytes);
            } else {
                leecher.handle_datagram(now, 0, &bytes);
            }
        } else {
            let next = [seeder.poll_timeout(), leecher.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .expect("a stalled transfer has a timer");
            now = now.max(next);
            seeder.handle_timeout(now);
            leecher.handle_timeout(now);
        }
    }
    datagrams
}

fn engine_throughput(c: &mut Criterion) {
    let data: Vec<u8> = (0..CONTENT).map(|i| (i * 31 + i / 977) as u8).collect();
    let mut group = c.benchmark_group("engine_transfer_sha1");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(CONTENT as u64));
    for chunk_size in [1024usize, 8192] {
        let tree = MerkleTree::from_content(HashAlgorithm::Sha1, chunk_size, &data).unwrap();
        group.bench_with_input(
            BenchmarkId::from_parameter(chunk_size),
            &chunk_size,
            |b, &cs| b.iter(|| black_box(transfer(&data, &tree, cs))),
        );
    }
    group.finish();
}

criterion_group!(benches, engine_throughput);
criterion_main!(benches);
