//! `locality`: the signaling server's samples drawn at random against by locality (the
//! newcomer's own network first, a share of the places still at random), for a swarm spread
//! over the ASes of the multipath experiment's small Internet. What crosses AS boundaries
//! per byte delivered, how fast hosts get their first chunk and complete, and whether the
//! swarm holds together (hosts the samples' channels leave cut off from the seeder).

use ppspp_sim::multipath::{
    Meeting, MultipathParams, MultipathResult, Routing, TIER1, TIER2, run as run_one,
};
use ppspp_sim::plot::{Series, csv, lines};
use ppspp_sim::sampling::Sampling;
use serde_json::json;
use std::path::Path;

use super::{Res, round};

/// 8 hosts in each of the 10 Tier-2 ASes, host 0 the seeder.
const HOSTS: usize = 80;
/// A welcome's sample: smaller than an AS's hosts, so that how it is drawn matters (the
/// server's default is 20, for rooms of up to 1,000).
const SAMPLE: usize = 4;
/// Viewers' access links: faster than the core, as in `multipath`, so that crossing the
/// core is what costs.
const ACCESS_BPS: u64 = 100_000_000;
const UPLOAD_SLOTS: usize = 4;
const SEEDS: u64 = 3;
/// The cases: how samples are drawn. The server's default keeps a quarter of the places
/// random (here 1 of 4); none random shows what the random places are for.
const CASES: [(&str, Sampling); 4] = [
    ("random", Sampling::Random),
    (
        "local (2 of 4 random)",
        Sampling::Local { random_places: 2 },
    ),
    (
        "local (1 of 4 random)",
        Sampling::Local { random_places: 1 },
    ),
    ("local (none random)", Sampling::Local { random_places: 0 }),
];

/// Runs `locality` into `out` with `content_mib` MiB of content, seeds `seed` to `seed + 2`.
pub fn run(out: &Path, seed: u64, content_mib: usize) -> Res {
    let mut cases = Vec::new();
    for (c, &(_, sampling)) in CASES.iter().enumerate() {
        for s in seed..seed + SEEDS {
            cases.push((c, s, params(content_mib, sampling, s)));
        }
    }
    let results: Vec<MultipathResult> = super::on_all_cores(&cases, "locality", |c| run_one(&c.2));
    let mut rows = Vec::new();
    let mut summary = json!({
        "hosts": HOSTS,
        "ases": TIER2,
        "sample": SAMPLE,
        "content_bytes": content_mib << 20,
        "seeds": [seed, seed + SEEDS - 1],
    });
    let mut core_points = Vec::new();
    let mut time_points = Vec::new();
    for (c, (name, _)) in CASES.iter().enumerate() {
        let runs: Vec<(&u64, &MultipathResult)> = cases
            .iter()
            .zip(&results)
            .filter(|(case, _)| case.0 == c)
            .map(|(case, r)| (&case.1, r))
            .collect();
        for (s, r) in &runs {
            if r.corrupt_chunks != 0 {
                return Err(format!(
                    "{name} seed {s}: {} corrupt chunks",
                    r.corrupt_chunks
                ));
            }
            let complete = r.completion_s.iter().filter(|c| c.is_some()).count();
            rows.push(vec![
                name.to_string(),
                s.to_string(),
                r.channels.to_string(),
                r.cross_as_channels.to_string(),
                r.cut_off.to_string(),
                complete.to_string(),
                format!("{:.3}", r.core_bytes_per_content_byte),
                format!("{:.2}", mean(r.completion_s.iter().filter_map(|c| *c))),
                format!("{:.3}", mean(r.first_chunk_s.iter().filter_map(|c| *c))),
                format!("{:.3}", r.duplicate_share),
            ]);
        }
        let n = runs.len() as f64;
        let core = runs
            .iter()
            .map(|(_, r)| r.core_bytes_per_content_byte)
            .sum::<f64>()
            / n;
        let completion = runs
            .iter()
            .map(|(_, r)| mean(r.completion_s.iter().filter_map(|c| *c)))
            .sum::<f64>()
            / n;
        let first = runs
            .iter()
            .map(|(_, r)| mean(r.first_chunk_s.iter().filter_map(|c| *c)))
            .sum::<f64>()
            / n;
        let complete: usize = runs
            .iter()
            .map(|(_, r)| r.completion_s.iter().filter(|c| c.is_some()).count())
            .sum();
        let cut_off: usize = runs.iter().map(|(_, r)| r.cut_off).sum();
        let cross = runs
            .iter()
            .map(|(_, r)| r.cross_as_channels as f64 / r.channels as f64)
            .sum::<f64>()
            / n;
        core_points.push((c as f64, core));
        time_points.push((c as f64, completion));
        summary["cases"][*name] = json!({
            "core_bytes_per_content_byte": round(core, 3),
            "mean_completion_s": round(completion, 2),
            "mean_first_chunk_s": round(first, 3),
            "complete": format!("{complete} of {}", runs.len() * (HOSTS - 1)),
            "hosts_cut_off": cut_off,
            "cross_as_share_of_channels": round(cross, 3),
        });
    }
    csv(
        &out.join("locality.csv"),
        "sampling,seed,channels,cross_as_channels,cut_off,complete,core_bytes_per_content_byte,mean_completion_s,mean_first_chunk_s,duplicate_share",
        &rows,
    )?;
    lines(
        &out.join("locality.png"),
        &format!(
            "{HOSTS} hosts in {TIER2} ASes, samples of {SAMPLE}, {content_mib} MiB, {SEEDS} seeds"
        ),
        "sampling (0 random; 1, 2, 3 local with 2, 1, 0 random places)",
        "mean over seeds",
        &[
            Series::new("core bytes per content byte", core_points),
            Series::new("mean completion (s)", time_points),
        ],
    )?;
    Ok(summary)
}

fn params(content_mib: usize, sampling: Sampling, seed: u64) -> MultipathParams {
    MultipathParams {
        host_ases: (TIER1..TIER1 + TIER2).collect(),
        hosts: HOSTS,
        content_len: content_mib << 20,
        chunk_size: 8192,
        routing: Routing::SinglePath,
        max_outgoing: None,
        max_unchoked: UPLOAD_SLOTS,
        access_bps: ACCESS_BPS,
        queue_bytes: 100_000,
        seed,
        limit_s: 600.0,
        meeting: Meeting::Samples {
            size: SAMPLE,
            sampling,
        },
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    sum / n.max(1) as f64
}
