//! `swarm`: one seeder and many leechers, homogeneous RTTs and the AS latency table.

use ppspp_sim::plot::{Series, csv, lines};
use ppspp_sim::swarm::{self, Latency, SwarmParams};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

use super::{Res, round};

/// Runs `swarm` into `out` with `leechers` leechers and `content_kib` KiB of content, for
/// the latency cases named in `only` (all if empty).
pub fn run(out: &Path, seed: u64, leechers: usize, content_kib: usize, only: &[String]) -> Res {
    let mut cases: Vec<(String, Latency)> = [0u64, 200, 500, 1000]
        .iter()
        .map(|&ms| {
            (
                format!("rtt{ms}"),
                Latency::Homogeneous(Duration::from_millis(ms)),
            )
        })
        .collect();
    cases.push(("as_table".into(), Latency::AsTable));
    if let Some(unknown) = only.iter().find(|o| !cases.iter().any(|c| &c.0 == *o)) {
        return Err(format!(
            "no latency case {unknown}; the cases are rtt0, rtt200, rtt500, rtt1000 and as_table"
        ));
    }
    cases.retain(|c| only.is_empty() || only.contains(&c.0));
    let mut rows = Vec::new();
    let mut per_case = json!({});
    let mut complete = usize::MAX;
    let mut corrupt = 0;
    let mut ratio: f64 = 0.0;
    let mut homo = Vec::new();
    let mut base_mean = None;
    for (name, lat) in cases {
        let mut p = SwarmParams::new(leechers, seed, lat.clone());
        p.content_len = content_kib * 1024;
        let r = swarm::run(&p);
        complete = complete.min(r.complete);
        corrupt += r.corrupt_chunks;
        ratio = ratio.max(r.seeder_upload_ratio);
        for (i, (t, as_)) in r.completion_s.iter().enumerate() {
            rows.push(vec![
                name.clone(),
                i.to_string(),
                as_.to_string(),
                t.map_or(String::new(), |t| format!("{t:.3}")),
            ]);
        }
        let mean = r.mean_completion();
        if base_mean.is_none() {
            base_mean = Some(mean);
        }
        let mut entry = json!({
            "complete": r.complete,
            "mean_s": round(mean, 2),
            "max_s": round(r.max_completion(), 2),
            "vs_rtt0": round(mean / base_mean.unwrap_or(mean).max(1e-9), 3),
            "seeder_upload_ratio": round(r.seeder_upload_ratio, 3),
        });
        if let Latency::Homogeneous(rtt) = lat {
            homo.push((rtt.as_millis() as f64, mean, r.max_completion()));
        } else {
            let mut by_as = json!({});
            for a in 1..=5 {
                let xs: Vec<f64> = r
                    .completion_s
                    .iter()
                    .filter(|c| c.1 == a)
                    .filter_map(|c| c.0)
                    .collect();
                by_as[format!("AS{a}")] =
                    json!(round(xs.iter().sum::<f64>() / xs.len().max(1) as f64, 2));
            }
            entry["mean_s_by_as"] = by_as;
        }
        per_case[name] = entry;
    }
    csv(
        &out.join("swarm.csv"),
        "case,leecher,as,completion_s",
        &rows,
    )?;
    lines(
        &out.join("swarm_completion.png"),
        &format!("{leechers} leechers, {content_kib} KiB: completion time vs homogeneous RTT"),
        "RTT (ms)",
        "completion time (s)",
        &[
            Series::new("mean", homo.iter().map(|h| (h.0, h.1)).collect()),
            Series::new("slowest", homo.iter().map(|h| (h.0, h.2)).collect()),
        ],
    )?;
    Ok(json!({
        "leechers": leechers,
        "complete": complete,
        "corrupt_chunks": corrupt,
        "seeder_upload_ratio": round(ratio, 3),
        "content_bytes": content_kib * 1024,
        "cases": per_case,
    }))
}
