//! `latecomer`: two LEDBAT flows started apart, with and without the DTL fixes
//! (Jain's index).

use ppspp::congestion::CongestionConfig;
use ppspp_sim::bulk::Flow;
use ppspp_sim::plot::{Series, csv, time_lines};
use ppspp_sim::scenario::jain;
use serde_json::json;
use std::path::Path;

use super::{Res, base, round, run_bulk};

/// Runs `latecomer` into `out`.
pub fn run(out: &Path, seed: u64) -> Res {
    let variants = [
        ("with DTL fixes (beta 0.99, slow start)", 0.99, true),
        ("without (beta 1.0, no slow start)", 1.0, false),
    ];
    let mut summary = json!({});
    let mut rows = Vec::new();
    for (i, (label, beta, slow_start)) in variants.iter().enumerate() {
        // Without the fixes is the RFC's plain controller: every loss halves, too.
        let cc = CongestionConfig {
            beta: *beta,
            slow_start: *slow_start,
            random_loss_delay: if *slow_start {
                CongestionConfig::default().random_loss_delay
            } else {
                None
            },
            ..CongestionConfig::default()
        };
        let flow = |start: f64| Flow::Ppspp {
            start,
            congestion: cc.clone(),
            priorities: Vec::new(),
        };
        let mut b = base(4_000_000, 25, 400_000, 180.0, seed);
        b.flows = vec![flow(0.0), flow(60.0)];
        b.content_len = Some(4_000_000 / 8 * 180);
        let r = run_bulk(&b);
        let (a, c) = (
            r.mean(90.0, 180.0, |s| s.rate_mbps[0]),
            r.mean(90.0, 180.0, |s| s.rate_mbps[1]),
        );
        let key = if i == 0 {
            "with_fixes"
        } else {
            "without_fixes"
        };
        summary[key] = json!({
            "jain_90_180s": round(jain(&[a, c]), 3),
            "first_mbps": round(a, 3),
            "second_mbps": round(c, 3),
            "queue_ms_90_180s": round(r.mean(90.0, 180.0, |s| s.queue_ms), 1),
        });
        for s in &r.samples {
            rows.push(vec![
                key.to_string(),
                format!("{:.1}", s.t),
                format!("{:.4}", s.rate_mbps[0]),
                format!("{:.4}", s.rate_mbps[1]),
                format!("{:.2}", s.queue_ms),
            ]);
        }
        time_lines(
            &out.join(format!("latecomer_{key}.png")),
            &format!("Two LEDBAT flows, 4 Mbit/s, second at 60 s: {label}"),
            "Mbit/s",
            &[
                Series::over_time("first flow", &r, |s| s.rate_mbps[0]),
                Series::over_time("second flow", &r, |s| s.rate_mbps[1]),
            ],
        )?;
    }
    csv(
        &out.join("latecomer.csv"),
        "variant,t_s,first_mbps,second_mbps,queue_ms",
        &rows,
    )?;
    Ok(summary)
}
