//! `priority`: a PPSPP flow whose priority changes, against a TCP-like flow (DTL Fig. 6).

use ppspp::congestion::CongestionConfig;
use ppspp_sim::bulk::Flow;
use ppspp_sim::plot::{Series, csv, time_lines};
use serde_json::json;
use std::path::Path;

use super::{Res, base, round, run_bulk};

/// Runs `priority` into `out`.
pub fn run(out: &Path, seed: u64) -> Res {
    let mut b = base(5_000_000, 12, 100_000, 120.0, seed);
    b.flows = vec![
        Flow::Ppspp {
            start: 0.0,
            congestion: CongestionConfig::default(),
            priorities: vec![(40.0, 1), (80.0, 2)],
        },
        Flow::Tcp {
            start: 0.0,
            stop: 1e9,
        },
    ];
    b.content_len = Some(5_000_000 / 8 * 120);
    let r = run_bulk(&b);
    let rows: Vec<Vec<String>> = r
        .samples
        .iter()
        .map(|s| {
            vec![
                format!("{:.1}", s.t),
                format!("{:.4}", s.rate_mbps[0]),
                format!("{:.4}", s.rate_mbps[1]),
                format!("{:.2}", s.cwnd[0]),
                format!("{:.2}", s.cwnd[1]),
            ]
        })
        .collect();
    csv(
        &out.join("priority.csv"),
        "t_s,ppspp_mbps,tcp_mbps,ppspp_cwnd,tcp_cwnd",
        &rows,
    )?;
    time_lines(
        &out.join("priority.png"),
        "PPSPP priority 0 → 1 (40 s) → 2 (80 s) against TCP, 5 Mbit/s, RTT 24 ms",
        "Mbit/s",
        &[
            Series::over_time("PPSPP (DTL)", &r, |s| s.rate_mbps[0]),
            Series::over_time("TCP-like", &r, |s| s.rate_mbps[1]),
        ],
    )?;
    let mut summary = json!({});
    // Also a flow at priority 1 and one at 2 from the start against TCP (why: the
    // `priority` section of docs/EXPERIMENTS.md).
    let mut fixed = Vec::new();
    for p in [1u32, 2] {
        let mut b = base(5_000_000, 12, 100_000, 60.0, seed);
        b.flows = vec![
            Flow::Ppspp {
                start: 0.0,
                congestion: CongestionConfig {
                    priority: p,
                    ..CongestionConfig::default()
                },
                priorities: Vec::new(),
            },
            Flow::Tcp {
                start: 0.0,
                stop: 1e9,
            },
        ];
        b.content_len = Some(5_000_000 / 8 * 60);
        let r = run_bulk(&b);
        let a = r.mean(20.0, 60.0, |s| s.rate_mbps[0]);
        let t = r.mean(20.0, 60.0, |s| s.rate_mbps[1]);
        summary[format!("from_start_priority{p}")] = json!({
            "ppspp_mbps_20_60s": round(a, 3),
            "tcp_mbps_20_60s": round(t, 3),
            "ratio": round(a / t.max(1e-9), 3),
        });
        fixed.push(Series::over_time(
            format!("PPSPP at priority {p}"),
            &r,
            |s| s.rate_mbps[0],
        ));
        fixed.push(Series::over_time(format!("TCP vs priority {p}"), &r, |s| {
            s.rate_mbps[1]
        }));
    }
    time_lines(
        &out.join("priority_fixed.png"),
        "PPSPP at priority 1 or 2 from the start against TCP, 5 Mbit/s",
        "Mbit/s",
        &fixed,
    )?;
    for (p, from, to) in [(0, 10.0, 40.0), (1, 50.0, 80.0), (2, 90.0, 120.0)] {
        let a = r.mean(from, to, |s| s.rate_mbps[0]);
        let t = r.mean(from, to, |s| s.rate_mbps[1]);
        summary[format!("priority{p}")] = json!({
            "ppspp_mbps": round(a, 3),
            "tcp_mbps": round(t, 3),
            "ratio": round(a / t.max(1e-9), 3),
        });
    }
    Ok(summary)
}
