//! `ppspp-sim`: runs the experiments of docs/EXPERIMENTS.md on the deterministic
//! simulator; each writes CSV and PNG into `--out` and prints a one-line JSON summary as
//! the last line of stdout.

use clap::{Args, Parser, Subcommand};
use ppspp::congestion::CongestionConfig;
use ppspp_sim::bulk::{Bulk, BulkRun, Flow};
use ppspp_sim::plot::{Series, csv, lines};
use ppspp_sim::scenario::jain;
use ppspp_sim::swarm::{self, Latency, SwarmParams};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "ppspp-sim",
    about = "Deterministic PPSPP swarm simulator experiments"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone)]
struct Common {
    /// Results folder (default target/sim/<experiment>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seed of the network and the content.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Subcommand)]
enum Cmd {
    /// Seeder→leecher over 5 Mbit/s, 60 ms one-way, 40 KB vs 400 KB queue (libswift Fig. 7).
    Link(Common),
    /// Link capacity 2–20 Mbit/s (libswift Fig. 8).
    Capacity(Common),
    /// One-way delay 25–500 ms over 10 Mbit/s (libswift Fig. 9).
    Delay(Common),
    /// Loss 0–3 % over 10 Mbit/s (libswift Figs. 10–11).
    Loss(Common),
    /// Two LEDBAT flows 60 s apart, with and without the DTL fixes (Jain's index).
    Latecomer(Common),
    /// One flow at priority 0 → 1 → 2 against a TCP-like flow (DTL Fig. 6).
    Priority(Common),
    /// One seeder and N leechers, homogeneous RTTs and the AS latency table.
    Swarm {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 100)]
        leechers: usize,
        /// Content size in KiB.
        #[arg(long, default_value_t = 256)]
        content_kib: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (name, common) = match &cli.cmd {
        Cmd::Link(c) => ("link", c),
        Cmd::Capacity(c) => ("capacity", c),
        Cmd::Delay(c) => ("delay", c),
        Cmd::Loss(c) => ("loss", c),
        Cmd::Latecomer(c) => ("latecomer", c),
        Cmd::Priority(c) => ("priority", c),
        Cmd::Swarm { common, .. } => ("swarm", common),
    };
    let out = common
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/sim").join(name));
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("ppspp-sim: {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let started = Instant::now();
    let result = match &cli.cmd {
        Cmd::Link(c) => link(&out, c.seed),
        Cmd::Capacity(c) => capacity(&out, c.seed),
        Cmd::Delay(c) => delay(&out, c.seed),
        Cmd::Loss(c) => loss(&out, c.seed),
        Cmd::Latecomer(c) => latecomer(&out, c.seed),
        Cmd::Priority(c) => priority(&out, c.seed),
        Cmd::Swarm {
            common,
            leechers,
            content_kib,
        } => swarm_cmd(&out, common.seed, *leechers, *content_kib),
    };
    match result {
        Ok(mut summary) => {
            let c = CLOSED.with(|c| c.borrow().clone());
            if !c.is_empty() {
                summary["leecher_closed_seeder"] = json!(c);
            }
            summary["experiment"] = json!(name);
            summary["out"] = json!(out.display().to_string());
            summary["wall_s"] = json!(round(started.elapsed().as_secs_f64(), 1));
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ppspp-sim {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

type Res = Result<Value, String>;

thread_local! {
    /// Every run in which a leecher closed its channel to the seeder: (run, time, reason).
    static CLOSED: std::cell::RefCell<Vec<Value>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs a scenario and records any channel the leecher closed (see `CLOSED`).
fn run(b: &Bulk) -> BulkRun {
    let r = ppspp_sim::bulk::run(b);
    for (i, c) in r.closed.iter().enumerate() {
        if let Some((t, why)) = c {
            let label = format!(
                "{} Mbit/s, owd {} ms, queue {} B, loss {}, flow {i}",
                b.bandwidth_bps / 1_000_000,
                b.owd.as_millis(),
                b.queue_bytes,
                b.loss
            );
            CLOSED.with(|v| {
                v.borrow_mut()
                    .push(json!({"run": label, "t_s": round(*t, 2), "reason": why}))
            });
        }
    }
    r
}

fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

fn base(bw: u64, owd_ms: u64, queue: usize, duration_s: f64, seed: u64) -> Bulk {
    Bulk {
        bandwidth_bps: bw,
        queue_bytes: queue,
        owd: Duration::from_millis(owd_ms),
        loss: 0.0,
        duration_s,
        sample_s: 0.5,
        flows: vec![Flow::ledbat(0.0)],
        content_len: None,
        seed,
    }
}

fn series(r: &BulkRun, f: impl Fn(&ppspp_sim::bulk::Sample) -> f64) -> Vec<(f64, f64)> {
    r.samples.iter().map(|s| (s.t, f(s))).collect()
}

/// CSV of single-flow runs: label, t, rate, cwnd, queue, progress.
fn single_csv(path: &Path, label: &str, runs: &[(String, BulkRun)]) -> Result<(), String> {
    let mut rows = Vec::new();
    for (name, r) in runs {
        for s in &r.samples {
            rows.push(vec![
                name.clone(),
                format!("{:.1}", s.t),
                format!("{:.4}", s.rate_mbps[0]),
                format!("{:.2}", s.cwnd[0]),
                format!("{:.2}", s.queue_ms),
                s.progress[0].to_string(),
            ]);
        }
    }
    csv(
        path,
        &format!("{label},t_s,rate_mbps,cwnd,queue_ms,bytes_downloaded"),
        &rows,
    )
}

fn link(out: &Path, seed: u64) -> Res {
    let mut runs = Vec::new();
    for q in [40_000usize, 400_000] {
        let r = run(&base(5_000_000, 60, q, 60.0, seed));
        runs.push((format!("{} KB", q / 1000), r));
    }
    single_csv(&out.join("link.csv"), "queue", &runs)?;
    let rate: Vec<Series> = runs
        .iter()
        .map(|(n, r)| Series::new(format!("queue {n}"), series(r, |s| s.rate_mbps[0])))
        .collect();
    lines(
        &out.join("link_rate.png"),
        "Seeder→leecher, 5 Mbit/s, 60 ms one-way: goodput",
        "time (s)",
        "Mbit/s",
        &rate,
    )?;
    let cwnd: Vec<Series> = runs
        .iter()
        .map(|(n, r)| Series::new(format!("queue {n}"), series(r, |s| s.cwnd[0])))
        .collect();
    lines(
        &out.join("link_cwnd.png"),
        "Seeder's congestion window (datagrams)",
        "time (s)",
        "cwnd",
        &cwnd,
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

fn capacity(out: &Path, seed: u64) -> Res {
    let mut runs = Vec::new();
    for mbit in [2u64, 5, 10, 15, 20] {
        let r = run(&base(mbit * 1_000_000, 10, 100_000, 30.0, seed));
        runs.push((format!("{mbit}"), r));
    }
    single_csv(&out.join("capacity.csv"), "capacity_mbps", &runs)?;
    let s: Vec<Series> = runs
        .iter()
        .map(|(n, r)| Series::new(format!("{n} Mbit/s"), series(r, |s| s.rate_mbps[0])))
        .collect();
    lines(
        &out.join("capacity_rate.png"),
        "Goodput by link capacity (10 ms one-way)",
        "time (s)",
        "Mbit/s",
        &s,
    )?;
    let mut util = json!({});
    for (n, r) in &runs {
        util[format!("{n}mbps")] = json!(round(r.mean(10.0, 30.0, |s| s.utilisation), 3));
    }
    Ok(json!({ "utilisation_10_30s": util }))
}

fn delay(out: &Path, seed: u64) -> Res {
    let mut runs = Vec::new();
    for owd in [25u64, 50, 100, 150, 200, 300, 500] {
        let r = run(&base(10_000_000, owd, 400_000, 60.0, seed));
        runs.push((format!("{owd}"), r));
    }
    single_csv(&out.join("delay.csv"), "owd_ms", &runs)?;
    let prog: Vec<Series> = runs
        .iter()
        .map(|(n, r)| Series::new(format!("{n} ms"), series(r, |s| s.progress[0] as f64 / 1e6)))
        .collect();
    lines(
        &out.join("delay_progress.png"),
        "Download progress by one-way delay (10 Mbit/s)",
        "time (s)",
        "MB downloaded",
        &prog,
    )?;
    let rate: Vec<Series> = runs
        .iter()
        .map(|(n, r)| Series::new(format!("{n} ms"), series(r, |s| s.rate_mbps[0])))
        .collect();
    lines(
        &out.join("delay_rate.png"),
        "Goodput by one-way delay (10 Mbit/s)",
        "time (s)",
        "Mbit/s",
        &rate,
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

fn loss(out: &Path, seed: u64) -> Res {
    let mut runs = Vec::new();
    for permille in [0u64, 5, 10, 15, 20, 25, 30] {
        let mut b = base(10_000_000, 10, 100_000, 60.0, seed);
        b.loss = permille as f64 / 1000.0;
        runs.push((format!("{:.1}", permille as f64 / 10.0), run(&b)));
    }
    single_csv(&out.join("loss.csv"), "loss_percent", &runs)?;
    let prog: Vec<Series> = runs
        .iter()
        .map(|(n, r)| Series::new(format!("{n} %"), series(r, |s| s.progress[0] as f64 / 1e6)))
        .collect();
    lines(
        &out.join("loss_progress.png"),
        "Download progress by loss rate (10 Mbit/s, 10 ms one-way)",
        "time (s)",
        "MB downloaded",
        &prog,
    )?;
    let pick: Vec<&(String, BulkRun)> = runs
        .iter()
        .filter(|(n, _)| n == "0.0" || n == "1.5")
        .collect();
    let rate: Vec<Series> = pick
        .iter()
        .map(|(n, r)| Series::new(format!("{n} % rate"), series(r, |s| s.rate_mbps[0])))
        .collect();
    lines(
        &out.join("loss_rate.png"),
        "Goodput at 0 % and 1.5 % loss (Fig. 11a)",
        "time (s)",
        "Mbit/s",
        &rate,
    )?;
    let cwnd: Vec<Series> = pick
        .iter()
        .map(|(n, r)| Series::new(format!("{n} % cwnd"), series(r, |s| s.cwnd[0])))
        .collect();
    lines(
        &out.join("loss_cwnd.png"),
        "Seeder's cwnd at 0 % and 1.5 % loss (Fig. 11b)",
        "time (s)",
        "cwnd (datagrams)",
        &cwnd,
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

fn latecomer(out: &Path, seed: u64) -> Res {
    let variants = [
        ("with DTL fixes (beta 0.99, slow start)", 0.99, true),
        ("without (beta 1.0, no slow start)", 1.0, false),
    ];
    let mut summary = json!({});
    let mut rows = Vec::new();
    for (i, (label, beta, slow_start)) in variants.iter().enumerate() {
        let cc = CongestionConfig {
            beta: *beta,
            slow_start: *slow_start,
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
        let r = run(&b);
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
        lines(
            &out.join(format!("latecomer_{key}.png")),
            &format!("Two LEDBAT flows, 4 Mbit/s, second at 60 s: {label}"),
            "time (s)",
            "Mbit/s",
            &[
                Series::new("first flow", series(&r, |s| s.rate_mbps[0])),
                Series::new("second flow", series(&r, |s| s.rate_mbps[1])),
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

fn priority(out: &Path, seed: u64) -> Res {
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
    let r = run(&b);
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
    lines(
        &out.join("priority.png"),
        "PPSPP priority 0 → 1 (40 s) → 2 (80 s) against TCP, 5 Mbit/s, RTT 24 ms",
        "time (s)",
        "Mbit/s",
        &[
            Series::new("PPSPP (DTL)", series(&r, |s| s.rate_mbps[0])),
            Series::new("TCP-like", series(&r, |s| s.rate_mbps[1])),
        ],
    )?;
    let mut summary = json!({});
    // Because the switched flow does not survive priority 0 (engine bug 1), also run a
    // flow at priority 1 and one at 2 from the start against TCP, 60 s each.
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
        let r = run(&b);
        let a = r.mean(20.0, 60.0, |s| s.rate_mbps[0]);
        let t = r.mean(20.0, 60.0, |s| s.rate_mbps[1]);
        summary[format!("from_start_priority{p}")] = json!({
            "ppspp_mbps_20_60s": round(a, 3),
            "tcp_mbps_20_60s": round(t, 3),
            "ratio": round(a / t.max(1e-9), 3),
        });
        fixed.push(Series::new(
            format!("PPSPP at priority {p}"),
            series(&r, |s| s.rate_mbps[0]),
        ));
        fixed.push(Series::new(
            format!("TCP vs priority {p}"),
            series(&r, |s| s.rate_mbps[1]),
        ));
    }
    lines(
        &out.join("priority_fixed.png"),
        "PPSPP at priority 1 or 2 from the start against TCP, 5 Mbit/s",
        "time (s)",
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

fn swarm_cmd(out: &Path, seed: u64, leechers: usize, content_kib: usize) -> Res {
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
