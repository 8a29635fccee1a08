//! `multipath`: path-level peers against single-path (BGP-like) and per-flow ECMP routing
//! (the BitTorrent-over-SCION paper, Figs. 4–6; the scenario is `ppspp_sim::multipath`).
//! 20 hosts, one of them the seeder, in 5 or in 10 Tier-2 ASes of a small Internet; for
//! each routing, aggregate goodput and mean download time, first with no limit on the
//! channels a host opens (Fig. 4), then with OutgoingConns limits (Figs. 5 and 6). One
//! swarm's figures depend much on its seed (which peers meet, which get the seeder's upload
//! slots first), so every case runs with three seeds and the ratios are compared per seed.

use ppspp_sim::multipath::{
    Meeting, MultipathParams, MultipathResult, Routing, TIER1, run as run_one,
};
use ppspp_sim::plot::{Series, csv, lines};
use serde_json::json;
use std::path::Path;

use super::{Res, round};

const HOSTS: usize = 20;
/// Host links faster than the inter-AS links, so that the core is the bottleneck, as the
/// paper makes it ("to make all candidates network bound").
const ACCESS_BPS: u64 = 100_000_000;
/// BitTorrent's usual number of upload slots.
const UPLOAD_SLOTS: usize = 4;
/// The OutgoingConns limits swept (the paper: 3 to 10).
const OUTGOING: [usize; 4] = [3, 5, 8, 12];
const SEEDS: u64 = 3;
const ROUTINGS: [(&str, Routing); 3] = [
    ("single_path", Routing::SinglePath),
    ("ecmp", Routing::Ecmp),
    ("multipath", Routing::Multipath),
];

/// Runs `multipath` into `out` with `content_mib` MiB of content, seeds `seed` to
/// `seed + 2`.
pub fn run(out: &Path, seed: u64, content_mib: usize) -> Res {
    let networks: [(&str, Vec<usize>); 2] = [
        ("5ases", (TIER1..TIER1 + 5).collect()),
        ("10ases", (TIER1..TIER1 + 10).collect()),
    ];
    let limits: Vec<Option<usize>> = std::iter::once(None)
        .chain(OUTGOING.iter().map(|&k| Some(k)))
        .collect();
    let mut cases = Vec::new();
    for (net, host_ases) in &networks {
        for &limit in &limits {
            for (r, &(_, routing)) in ROUTINGS.iter().enumerate() {
                for s in seed..seed + SEEDS {
                    cases.push((
                        *net,
                        limit,
                        r,
                        s,
                        params(host_ases, content_mib, routing, limit, s),
                    ));
                }
            }
        }
    }
    let results: Vec<MultipathResult> = super::on_all_cores(&cases, "multipath", |c| run_one(&c.4));

    let mut rows = Vec::new();
    let mut summary = json!({
        "hosts": HOSTS,
        "content_bytes": content_mib << 20,
        "access_bps": ACCESS_BPS,
        "upload_slots": UPLOAD_SLOTS,
        "seeds": [seed, seed + SEEDS - 1],
    });
    // (network, limit, routing, seed) → (goodput, mean download time).
    let mut figures = std::collections::BTreeMap::new();
    for ((net, limit, r, s, p), res) in cases.iter().zip(&results) {
        let limit_name = limit.map_or("all".to_string(), |k| k.to_string());
        let complete = res.completion_s.iter().filter(|c| c.is_some()).count();
        if complete != p.hosts - 1 || res.corrupt_chunks != 0 {
            return Err(format!(
                "{net} {} outgoing {limit_name} seed {s}: {complete} of {} complete, {} corrupt chunks",
                ROUTINGS[*r].0,
                p.hosts - 1,
                res.corrupt_chunks
            ));
        }
        let goodput = res.aggregate_goodput_mbps(p.content_len);
        let mean = res.mean_completion();
        figures.insert((*net, *limit, *r, *s), (goodput, mean));
        rows.push(vec![
            net.to_string(),
            limit_name,
            ROUTINGS[*r].0.to_string(),
            s.to_string(),
            res.channels.to_string(),
            format!("{goodput:.2}"),
            format!("{mean:.2}"),
            format!("{:.2}", res.core_bytes_per_content_byte),
            format!("{:.3}", res.duplicate_share),
        ]);
    }
    for (net, _) in &networks {
        let mut curves: Vec<Vec<(f64, f64)>> = vec![Vec::new(); ROUTINGS.len()];
        for &limit in &limits {
            let limit_name = limit.map_or("all".to_string(), |k| k.to_string());
            for (r, (name, _)) in ROUTINGS.iter().enumerate() {
                // Per seed against single path on the same seed.
                let ratios: Vec<(f64, f64)> = (seed..seed + SEEDS)
                    .map(|s| {
                        let (g, m) = figures[&(*net, limit, r, s)];
                        let (g0, m0) = figures[&(*net, limit, 0, s)];
                        (g / g0, m / m0)
                    })
                    .collect();
                let means: Vec<f64> = (seed..seed + SEEDS)
                    .map(|s| figures[&(*net, limit, r, s)].1)
                    .collect();
                let mean_download = means.iter().sum::<f64>() / SEEDS as f64;
                if let Some(k) = limit {
                    curves[r].push((k as f64, mean_download));
                }
                let goodput_ratios: Vec<f64> = ratios.iter().map(|x| round(x.0, 3)).collect();
                let time_ratios: Vec<f64> = ratios.iter().map(|x| round(x.1, 3)).collect();
                summary[*net][&limit_name][*name] = json!({
                    "mean_download_s": round(mean_download, 2),
                    "goodput_vs_single_path": goodput_ratios,
                    "goodput_vs_single_path_geomean": round(geomean(ratios.iter().map(|x| x.0)), 3),
                    "download_time_vs_single_path": time_ratios,
                    "download_time_vs_single_path_geomean": round(geomean(ratios.iter().map(|x| x.1)), 3),
                });
            }
        }
        let series: Vec<Series> = ROUTINGS
            .iter()
            .zip(curves)
            .map(|((name, _), points)| Series::new(*name, points))
            .collect();
        lines(
            &out.join(format!("multipath_{net}.png")),
            &format!(
                "{net}: {HOSTS} hosts, {content_mib} MiB, {SEEDS} seeds: mean download time vs OutgoingConns"
            ),
            "outgoing channels per host across the core (OutgoingConns)",
            "mean download time (s)",
            &series,
        )?;
    }
    csv(
        &out.join("multipath.csv"),
        "network,outgoing,routing,seed,channels,aggregate_goodput_mbps,mean_download_s,core_bytes_per_content_byte,duplicate_share",
        &rows,
    )?;
    Ok(summary)
}

fn params(
    host_ases: &[usize],
    content_mib: usize,
    routing: Routing,
    max_outgoing: Option<usize>,
    seed: u64,
) -> MultipathParams {
    MultipathParams {
        host_ases: host_ases.to_vec(),
        hosts: HOSTS,
        content_len: content_mib << 20,
        chunk_size: 8192,
        routing,
        max_outgoing,
        max_unchoked: UPLOAD_SLOTS,
        access_bps: ACCESS_BPS,
        queue_bytes: 100_000,
        seed,
        limit_s: 3600.0,
        meeting: Meeting::Mesh,
    }
}

fn geomean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x.ln(), n + 1));
    (sum / n.max(1) as f64).exp()
}
