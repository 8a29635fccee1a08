//! Native half of the verification benchmark (`make bench`, scripts/bench-native.mjs): the
//! same `VerifyBench` workload the browser times in Wasm, timed here with `Instant`.
//!
//! Prints one JSON line: for SHA-1 and SHA-256 and chunk sizes 1, 4 and 16 KiB, the MB/s
//! (10^6 bytes per second) of `VerifyBench::run` over 32 MiB of content, as
//! `{min, median, max, runs}` over 3 runs; setup (content, sender tree) is not timed.
//!
//!     cargo run --release -p ppspp-wasm --features bench --example verify -- [--smoke]
//!
//! `--smoke`: 1 MiB of content and 1 run each (numbers, not meaningful ones).

use ppspp_wasm::bench::VerifyBench;
use std::fmt::Write as _;
use std::time::Instant;

const HASHES: [&str; 2] = ["sha1", "sha256"];
const CHUNK_SIZES: [usize; 3] = [1024, 4096, 16384];

fn main() {
    let smoke = std::env::args().skip(1).any(|a| a == "--smoke");
    let (len, runs) = if smoke { (1 << 20, 1) } else { (32 << 20, 3) };
    let mut json = format!("{{\"content_bytes\":{len},\"runs_each\":{runs}");
    for hash in HASHES {
        for cs in CHUNK_SIZES {
            let bench = match VerifyBench::new(hash, cs, len) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("verify: {hash} {cs}: {e}");
                    std::process::exit(1);
                }
            };
            let chunks = len.div_ceil(cs) as u64;
            let mut mbps = Vec::with_capacity(runs);
            for _ in 0..runs {
                let t = Instant::now();
                let n = std::hint::black_box(bench.run());
                let secs = t.elapsed().as_secs_f64();
                if n != chunks {
                    eprintln!("verify: {hash} {cs}: verified {n} of {chunks} chunks");
                    std::process::exit(1);
                }
                mbps.push(len as f64 / secs / 1e6);
            }
            let _ = write!(json, ",\"{hash}_{}k\":{}", cs / 1024, stats(&mbps));
        }
    }
    json.push('}');
    println!("{json}");
}

/// `{"min":…,"median":…,"max":…,"runs":[…]}` of MB/s figures.
fn stats(runs: &[f64]) -> String {
    let mut s = runs.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    let list: Vec<String> = runs.iter().map(|v| format!("{v:.1}")).collect();
    format!(
        "{{\"min\":{:.1},\"median\":{median:.1},\"max\":{:.1},\"runs\":[{}]}}",
        s[0],
        s[n - 1],
        list.join(",")
    )
}
