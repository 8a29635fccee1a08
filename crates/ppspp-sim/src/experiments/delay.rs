//! `delay`: one flow over links of different one-way delay (libswift Fig. 9).

use ppspp_sim::plot::{runs_csv, runs_over_time};
use serde_json::json;
use std::path::Path;

use super::{Res, base, round, run_bulk};

/// Runs `delay` into `out`.
pub fn run(out: &Path, seed: u64) -> Res {
    let mut runs = Vec::new();
    for owd in [25u64, 50, 100, 150, 200, 300, 500] {
        let r = run_bulk(&base(10_000_000, owd, 400_000, 60.0, seed));
        runs.push((format!("{owd}"), r));
    }
    runs_csv(&out.join("delay.csv"), "owd_ms", &runs)?;
    runs_over_time(
        &out.join("delay_progress.png"),
        "Download progress by one-way delay (10 Mbit/s)",
        "MB downloaded",
        &runs,
        |n| format!("{n} ms"),
        |s| s.progress[0] as f64 / 1e6,
    )?;
    runs_over_time(
        &out.join("delay_rate.png"),
        "Goodput by one-way delay (10 Mbit/s)",
        "Mbit/s",
        &runs,
        |n| format!("{n} ms"),
        |s| s.rate_mbps[0],
    )?;
    let mut m = json!({});
    for (n, r) in &runs {
        m[format!("{n}ms")] = json!({
            "mean_mbps_0_60s": round(r.mean(0.0, 60.0, |s| s.rate_mbps[0]), 3),
            "mean_mbps_30_60s": round(r.mean(30.0, 60.0, |s| s.rate_mbps[0]), 3),
        });
    }
    Ok(json!({ "by_owd": m }))
}
