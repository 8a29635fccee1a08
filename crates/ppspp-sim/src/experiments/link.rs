//! `link`: seeder→leecher over one bottleneck with a small and a large drop-tail queue
//! (libswift Fig. 7).

use ppspp_sim::plot::{runs_csv, runs_over_time};
use serde_json::json;
use std::path::Path;

use super::{Res, base, round, run_bulk};

/// Runs `link` into `out`.
pub fn run(out: &Path, seed: u64) -> Res {
    let mut runs = Vec::new();
    for q in [40_000usize, 400_000] {
        let r = run_bulk(&base(5_000_000, 60, q, 60.0, seed));
        runs.push((format!("{} KB", q / 1000), r));
    }
    runs_csv(&out.join("link.csv"), "queue", &runs)?;
    runs_over_time(
        &out.join("link_rate.png"),
        "Seeder→leecher, 5 Mbit/s, 60 ms one-way: goodput",
        "Mbit/s",
        &runs,
        |n| format!("queue {n}"),
        |s| s.rate_mbps[0],
    )?;
    runs_over_time(
        &out.join("link_cwnd.png"),
        "Seeder's congestion window (datagrams)",
        "cwnd",
        &runs,
        |n| format!("queue {n}"),
        |s| s.cwnd[0],
    )?;
    let mut summary = json!({});
    for (n, r) in &runs {
        summary[n.replace(' ', "")] = json!({
            "goodput_mbps_10_60s": round(r.mean(10.0, 60.0, |s| s.rate_mbps[0]), 3),
            "utilisation_10_60s": round(r.mean(10.0, 60.0, |s| s.utilisation), 3),
            "queue_ms_10_60s": round(r.mean(10.0, 60.0, |s| s.queue_ms), 1),
            "peak_rate_mbps": round(r.samples.iter().map(|s| s.rate_mbps[0]).fold(0.0, f64::max), 2),
        });
    }
    Ok(summary)
}
