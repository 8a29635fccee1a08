//! Decode (and encode) throughput of the wire codec.

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ppspp::codec::{
    ChunkSpec, CodecConfig, DecodeError, Message, decode_datagram, encode_datagram,
};

/// Decodes every message and folds them into a number so nothing is optimised away.
fn decode_count(bytes: &[u8], config: &CodecConfig) -> Result<usize, DecodeError> {
    let d = decode_datagram(bytes, config)?;
    let mut n = d.channel as usize;
    for m in d.messages() {
        n = n.wrapping_add(m?.message_type().code() as usize);
    }
    Ok(n)
}

fn m74_session() -> Vec<Vec<u8>> {
    common::load_json("libswift-m74-session.json")["datagrams"]
        .as_array()
        .expect("datagrams")
        .iter()
        .map(|d| common::unhex(d["hex"].as_str().expect("hex")))
        .collect()
}

/// Three INTEGRITY messages (uncle hashes) and a 1 KiB DATA, as a seeder sends them.
fn data_datagram(config: &CodecConfig) -> Vec<u8> {
    let hash = [0x5Au8; 20];
    let payload = [0xA5u8; 1024];
    let msgs = [
        Message::Integrity {
            chunks: ChunkSpec::Chunk32 { start: 8, end: 15 },
            hash: &hash,
        },
        Message::Integrity {
            chunks: ChunkSpec::Chunk32 { start: 4, end: 7 },
            hash: &hash,
        },
        Message::Integrity {
            chunks: ChunkSpec::Chunk32 { start: 2, end: 3 },
            hash: &hash,
        },
        Message::Data {
            chunks: ChunkSpec::Chunk32 { start: 1, end: 1 },
            timestamp: 1_795_329_065_392_730,
            payload: &payload,
        },
    ];
    let mut out = Vec::new();
    encode_datagram(0x9f32_965a, &msgs, config, &mut out).expect("encodes");
    out
}

fn bench(c: &mut Criterion) {
    let config = CodecConfig::default();
    let session = m74_session();
    let total: usize = session.iter().map(Vec::len).sum();
    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(total as u64));
    g.bench_function("m74_session_73_datagrams", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for d in &session {
                acc = acc.wrapping_add(decode_count(black_box(d), &config).expect("decodes"));
            }
            acc
        })
    });
    let dgram = data_datagram(&config);
    g.throughput(Throughput::Bytes(dgram.len() as u64));
    g.bench_function("data_1k_with_3_integrity", |b| {
        b.iter(|| decode_count(black_box(&dgram), &config).expect("decodes"))
    });
    g.finish();

    let decoded = decode_datagram(&dgram, &config)
        .and_then(|d| d.collect_messages())
        .expect("decodes");
    let mut g = c.benchmark_group("encode");
    g.throughput(Throughput::Bytes(dgram.len() as u64));
    let mut out = Vec::with_capacity(1500);
    g.bench_function("data_1k_with_3_integrity", |b| {
        b.iter(|| {
            out.clear();
            encode_datagram(0x9f32_965a, black_box(&decoded), &config, &mut out).expect("encodes");
            out.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
