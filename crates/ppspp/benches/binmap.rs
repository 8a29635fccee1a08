//! Binmap versus a plain bitmap (`Vec<u64>`): set, find_empty and find_complement
//! throughput, and memory, for sequential, random and chess patterns over 2^16 and 2^20
//! chunks. The memory table is printed to stderr before the timings.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ppspp::Bin;
use ppspp::binmap::Binmap;
use std::hint::black_box;

/// Baseline: one bit per chunk.
struct Bitmap(Vec<u64>);

impl Bitmap {
    fn new(n: u64) -> Bitmap {
        Bitmap(vec![0; n.div_ceil(64) as usize])
    }
    fn set(&mut self, i: u64) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }
    fn heap_bytes(&self) -> usize {
        self.0.capacity() * 8
    }
    /// First chunk in `from..end` that is set in `src` and empty in `self`
    /// (`src = None` means "all set", i.e. find_empty).
    fn find(&self, src: Option<&Bitmap>, from: u64, end: u64) -> Option<u64> {
        let mut w = (from / 64) as usize;
        let mut mask = !0u64 << (from % 64);
        while (w as u64) * 64 < end {
            let s = src.map_or(!0, |s| s.0[w]);
            let bits = s & !self.0[w] & mask;
            if bits != 0 {
                let i = w as u64 * 64 + u64::from(bits.trailing_zeros());
                return (i < end).then_some(i);
            }
            w += 1;
            mask = !0;
        }
        None
    }
}

/// Deterministic xorshift, so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[derive(Clone, Copy, Debug)]
enum Pattern {
    /// The first 90% of the chunks, set in order (a sequential download).
    Sequential,
    /// Half of the chunks, chosen at random (heavy fragmentation).
    Random,
    /// Every other chunk (the worst case for a binmap).
    Chess,
}

fn chunks(p: Pattern, n: u64) -> Vec<u64> {
    match p {
        Pattern::Sequential => (0..n * 9 / 10).collect(),
        Pattern::Random => {
            let mut r = Rng(0x9E37_79B9_7F4A_7C15);
            (0..n).filter(|_| r.next() & 1 == 1).collect()
        }
        Pattern::Chess => (0..n).step_by(2).collect(),
    }
}

fn build(p: Pattern, n: u64) -> (Binmap, Bitmap) {
    let mut m = Binmap::new();
    let mut b = Bitmap::new(n);
    for i in chunks(p, n) {
        m.set(Bin::chunk(i).unwrap_or(Bin::NONE));
        b.set(i);
    }
    (m, b)
}

const PATTERNS: [Pattern; 3] = [Pattern::Sequential, Pattern::Random, Pattern::Chess];
const SIZES: [u32; 2] = [16, 20];

fn memory_table() {
    eprintln!("\nmemory: pattern, chunks, binmap cells, binmap heap bytes, bitmap bytes, ratio");
    for p in PATTERNS {
        for s in SIZES {
            let n = 1u64 << s;
            let (m, b) = build(p, n);
            eprintln!(
                "memory: {:?}, 2^{s}, {}, {}, {}, {:.2}",
                p,
                m.cells(),
                m.heap_bytes(),
                b.heap_bytes(),
                m.heap_bytes() as f64 / b.heap_bytes() as f64
            );
        }
    }
    eprintln!();
}

fn bench(c: &mut Criterion) {
    memory_table();
    let mut g = c.benchmark_group("set");
    g.sample_size(10);
    for p in PATTERNS {
        for s in SIZES {
            let n = 1u64 << s;
            let list = chunks(p, n);
            g.throughput(Throughput::Elements(list.len() as u64));
            let id = format!("{p:?}/2^{s}");
            g.bench_with_input(BenchmarkId::new("binmap", &id), &list, |bch, list| {
                bch.iter(|| {
                    let mut m = Binmap::new();
                    for &i in list {
                        m.set(Bin::chunk(i).unwrap_or(Bin::NONE));
                    }
                    black_box(m.cells())
                })
            });
            g.bench_with_input(BenchmarkId::new("bitmap", &id), &list, |bch, list| {
                bch.iter(|| {
                    let mut b = Bitmap::new(n);
                    for &i in list {
                        b.set(i);
                    }
                    black_box(b.0.len())
                })
            });
        }
    }
    g.finish();

    // 1024 searches from random start positions per iteration.
    let mut g = c.benchmark_group("find");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1024));
    for p in PATTERNS {
        for s in SIZES {
            let n = 1u64 << s;
            let (m, b) = build(p, n);
            let mut want = Binmap::new();
            want.set(Bin::covering(n).unwrap_or(Bin::NONE));
            let mut bwant = Bitmap::new(n);
            for w in bwant.0.iter_mut() {
                *w = !0;
            }
            let mut r = Rng(7);
            let starts: Vec<u64> = (0..1024).map(|_| r.next() % n).collect();
            let twists: Vec<u64> = (0..1024).map(|_| r.next() & 63).collect();
            let range = Bin::covering(n).unwrap_or(Bin::NONE);
            let id = format!("{p:?}/2^{s}");
            g.bench_function(BenchmarkId::new("binmap_find_empty", &id), |bch| {
                bch.iter(|| {
                    let mut acc = 0u64;
                    for &st in &starts {
                        acc ^= m.find_empty(st..n).map_or(0, Bin::raw);
                    }
                    black_box(acc)
                })
            });
            g.bench_function(BenchmarkId::new("bitmap_find_empty", &id), |bch| {
                bch.iter(|| {
                    let mut acc = 0u64;
                    for &st in &starts {
                        acc ^= b.find(None, st, n).unwrap_or(0);
                    }
                    black_box(acc)
                })
            });
            g.bench_function(BenchmarkId::new("binmap_find_complement", &id), |bch| {
                bch.iter(|| {
                    let mut acc = 0u64;
                    for &t in &twists {
                        acc ^= Binmap::find_complement(&m, &want, range, t).map_or(0, Bin::raw);
                    }
                    black_box(acc)
                })
            });
            g.bench_function(BenchmarkId::new("bitmap_find_complement", &id), |bch| {
                bch.iter(|| {
                    let mut acc = 0u64;
                    for &st in &starts {
                        acc ^= b.find(Some(&bwant), st, n).unwrap_or(0);
                    }
                    black_box(acc)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
