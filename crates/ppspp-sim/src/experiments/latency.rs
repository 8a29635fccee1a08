//! `latency`: how much the testbed paper's AS latency table adds to a swarm's completion
//! time as the content grows (the paper's claim, at most ~15 %, is about a 50 MB file that
//! took thousands of seconds; `swarm` runs 256 KiB, which takes about 4 s). The `swarm`
//! setting (100 leechers, a seeder serving 2 at once) at RTT 0 and under the AS table, for
//! content of 256 KiB to 2 MiB.

use ppspp_sim::plot::{Series, csv, lines};
use ppspp_sim::swarm::{self, Latency, SwarmParams};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

use super::{Res, round};

const SIZES_KIB: [usize; 4] = [256, 512, 1024, 2048];
const LEECHERS: usize = 100;

/// Runs `latency` into `out`.
pub fn run(out: &Path, seed: u64) -> Res {
    let mut rows = Vec::new();
    let mut by_size = json!({});
    let mut ratio_points = Vec::new();
    let mut added_points = Vec::new();
    for kib in SIZES_KIB {
        let mean = |latency: Latency| {
            let mut p = SwarmParams::new(LEECHERS, seed, latency);
            p.content_len = kib * 1024;
            let r = swarm::run(&p);
            if r.complete != LEECHERS || r.corrupt_chunks != 0 {
                return Err(format!(
                    "{kib} KiB: {} of {LEECHERS} leechers complete, {} corrupt chunks",
                    r.complete, r.corrupt_chunks
                ));
            }
            Ok((r.mean_completion(), r.max_completion()))
        };
        let (base, base_max) = mean(Latency::Homogeneous(Duration::ZERO))?;
        let (as_table, as_max) = mean(Latency::AsTable)?;
        let ratio = as_table / base;
        rows.push(vec![
            kib.to_string(),
            format!("{base:.3}"),
            format!("{as_table:.3}"),
            format!("{ratio:.4}"),
            format!("{:.3}", as_table - base),
        ]);
        ratio_points.push((kib as f64, 100.0 * (ratio - 1.0)));
        added_points.push((kib as f64, as_table - base));
        by_size[format!("{kib}k")] = json!({
            "rtt0_mean_s": round(base, 2),
            "rtt0_max_s": round(base_max, 2),
            "as_table_mean_s": round(as_table, 2),
            "as_table_max_s": round(as_max, 2),
            "as_table_vs_rtt0": round(ratio, 3),
            "added_s": round(as_table - base, 2),
        });
    }
    csv(
        &out.join("latency.csv"),
        "content_kib,rtt0_mean_s,as_table_mean_s,as_table_vs_rtt0,added_s",
        &rows,
    )?;
    lines(
        &out.join("latency.png"),
        &format!("{LEECHERS} leechers: the AS latency table over RTT 0 vs content size"),
        "content (KiB)",
        "% added to the mean completion time",
        &[Series::new("AS table over RTT 0", ratio_points)],
    )?;
    lines(
        &out.join("latency_added.png"),
        &format!("{LEECHERS} leechers: seconds the AS latency table adds vs content size"),
        "content (KiB)",
        "seconds added to the mean completion time",
        &[Series::new("AS table − RTT 0", added_points)],
    )?;
    Ok(json!({ "leechers": LEECHERS, "by_size": by_size }))
}
