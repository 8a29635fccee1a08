//! `loss`: one flow over links of different random loss (libswift Figs. 10–11).

use ppspp_sim::bulk::BulkRun;
use ppspp_sim::plot::{runs_csv, runs_over_time};
use serde_json::json;
use std::path::Path;

use super::{Res, base, round, run_bulk};

/// Runs `loss` into `out`.
pub fn run(out: &Path, seed: u64) -> Res {
    let mut runs = Vec::new();
    for permille in [0u64, 5, 10, 15, 20, 25, 30] {
        let mut b = base(10_000_000, 10, 100_000, 60.0, seed);
        b.loss = permille as f64 / 1000.0;
        runs.push((format!("{:.1}", permille as f64 / 10.0), run_bulk(&b)));
    }
    runs_csv(&out.join("loss.csv"), "loss_percent", &runs)?;
    runs_over_time(
        &out.join("loss_progress.png"),
        "Download progress by loss rate (10 Mbit/s, 10 ms one-way)",
        "MB downloaded",
        &runs,
        |n| format!("{n} %"),
        |s| s.progress[0] as f64 / 1e6,
    )?;
    let pick: Vec<&(String, BulkRun)> = runs
        .iter()
        .filter(|(n, _)| n == "0.0" || n == "1.5")
        .collect();
    runs_over_time(
        &out.join("loss_rate.png"),
        "Goodput at 0 % and 1.5 % loss (Fig. 11a)",
        "Mbit/s",
        pick.iter().copied(),
        |n| format!("{n} % rate"),
        |s| s.rate_mbps[0],
    )?;
    runs_over_time(
        &out.join("loss_cwnd.png"),
        "Seeder's cwnd at 0 % and 1.5 % loss (Fig. 11b)",
        "cwnd (datagrams)",
        pick.iter().copied(),
        |n| format!("{n} % cwnd"),
        |s| s.cwnd[0],
    )?;
    let mut m = json!({});
    for (n, r) in &runs {
        m[format!("{n}%")] = json!({
            "mean_mbps_0_60s": round(r.mean(0.0, 60.0, |s| s.rate_mbps[0]), 3),
            "mb_downloaded": round(r.samples.last().map_or(0, |s| s.progress[0]) as f64 / 1e6, 2),
        });
    }
    Ok(json!({ "by_loss": m }))
}
