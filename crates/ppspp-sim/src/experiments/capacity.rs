//! `capacity`: one flow over links of different capacity (libswift Fig. 8).

use ppspp_sim::plot::{runs_csv, runs_over_time};
use serde_json::json;
use std::path::Path;

use super::{Res, base, round, run_bulk};

/// Runs `capacity` into `out`.
pub fn run(out: &Path, seed: u64) -> Res {
    let mut runs = Vec::new();
    for mbit in [2u64, 5, 10, 15, 20] {
        let r = run_bulk(&base(mbit * 1_000_000, 10, 100_000, 30.0, seed));
        runs.push((format!("{mbit}"), r));
    }
    runs_csv(&out.join("capacity.csv"), "capacity_mbps", &runs)?;
    runs_over_time(
        &out.join("capacity_rate.png"),
        "Goodput by link capacity (10 ms one-way)",
        "Mbit/s",
        &runs,
        |n| format!("{n} Mbit/s"),
        |s| s.rate_mbps[0],
    )?;
    let mut util = json!({});
    for (n, r) in &runs {
        util[format!("{n}mbps")] = json!(round(r.mean(10.0, 30.0, |s| s.utilisation), 3));
    }
    Ok(json!({ "utilisation_10_30s": util }))
}
