//! Merkle tree throughput: building (hashing) and receiver-side verification.
//!
//! `cargo bench -p ppspp --bench merkle`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ppspp::merkle::{HashAlgorithm, MerkleTree, VerifyingTree};

const CONTENT: usize = 4 << 20;

fn content() -> Vec<u8> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    (0..CONTENT)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

fn cases() -> Vec<(HashAlgorithm, usize)> {
    let mut v = Vec::new();
    for alg in [HashAlgorithm::Sha1, HashAlgorithm::Sha256] {
        for kib in [1, 4, 16] {
            v.push((alg, kib << 10));
        }
    }
    v
}

fn build(c: &mut Criterion) {
    let data = content();
    let mut g = c.benchmark_group("merkle_build");
    g.throughput(Throughput::Bytes(CONTENT as u64));
    g.sample_size(10);
    for (alg, cs) in cases() {
        let id = BenchmarkId::new(alg.name(), format!("{}KiB", cs >> 10));
        g.bench_with_input(id, &cs, |b, &cs| {
            b.iter(|| MerkleTree::from_content(alg, cs, black_box(&data)).unwrap())
        });
    }
    g.finish();
}

fn verify(c: &mut Criterion) {
    let data = content();
    let mut g = c.benchmark_group("merkle_verify");
    g.throughput(Throughput::Bytes(CONTENT as u64));
    g.sample_size(10);
    for (alg, cs) in cases() {
        let tree = MerkleTree::from_content(alg, cs, &data).unwrap();
        // The uncles each chunk needs when downloaded in order (pruned), prepared up front.
        let mut rx = VerifyingTree::new(alg, tree.root(), cs, CONTENT as u64).unwrap();
        let proofs: Vec<_> = (0..tree.chunk_count())
            .map(|i| {
                let u = tree.uncles(i, |b| rx.is_verified(b));
                let chunk = &data[i as usize * cs..(i as usize + 1) * cs];
                rx.verify_chunk(i, chunk, &u).unwrap();
                u
            })
            .collect();
        let id = BenchmarkId::new(alg.name(), format!("{}KiB", cs >> 10));
        g.bench_with_input(id, &cs, |b, &cs| {
            b.iter(|| {
                let mut rx = VerifyingTree::new(alg, tree.root(), cs, CONTENT as u64).unwrap();
                for (i, u) in proofs.iter().enumerate() {
                    let chunk = &data[i * cs..(i + 1) * cs];
                    rx.verify_chunk(i as u64, black_box(chunk), u).unwrap();
                }
                rx
            })
        });
    }
    g.finish();
}

criterion_group!(benches, build, verify);
criterion_main!(benches);
