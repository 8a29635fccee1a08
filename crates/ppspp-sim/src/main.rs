//! `ppspp-sim`: runs the experiments of docs/EXPERIMENTS.md on the deterministic
//! simulator; each writes CSV and PNG into `--out` and prints a one-line JSON summary as
//! the last line of stdout.

mod experiments;

use clap::{Args, Parser, Subcommand};
use experiments::round;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

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
    /// P2P upload beside a call's audio or video on a 1 Mbit/s wireless-like uplink
    /// (the wireless coexistence paper, Fig. 3).
    Coexist(Common),
    /// One seeder and N leechers, homogeneous RTTs and the AS latency table.
    Swarm {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value_t = 100)]
        leechers: usize,
        /// Content size in KiB.
        #[arg(long, default_value_t = 256)]
        content_kib: usize,
        /// Which latency cases to run (rtt0, rtt200, rtt500, rtt1000, as_table;
        /// comma-separated). Default: all.
        #[arg(long, value_delimiter = ',')]
        cases: Vec<String>,
    },
    /// The AS latency table over RTT 0 as the content grows, 256 KiB to 2 MiB (testbed
    /// paper).
    Latency(Common),
    /// Path-level peers vs single-path and ECMP routing, 20 hosts in 5 or 10 ASes, seeds
    /// `--seed` to `--seed` + 2 (BitTorrent-over-SCION paper).
    Multipath {
        #[command(flatten)]
        common: Common,
        /// Content size in MiB.
        #[arg(long, default_value_t = 16)]
        content_mib: usize,
    },
    /// The signaling server's samples at random vs by locality, 80 hosts in 10 ASes,
    /// seeds `--seed` to `--seed` + 2: inter-AS bytes, completion, islands.
    Locality {
        #[command(flatten)]
        common: Common,
        /// Content size in MiB.
        #[arg(long, default_value_t = 4)]
        content_mib: usize,
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
        Cmd::Coexist(c) => ("coexist", c),
        Cmd::Latency(c) => ("latency", c),
        Cmd::Multipath { common, .. } => ("multipath", common),
        Cmd::Locality { common, .. } => ("locality", common),
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
        Cmd::Link(c) => experiments::link::run(&out, c.seed),
        Cmd::Capacity(c) => experiments::capacity::run(&out, c.seed),
        Cmd::Delay(c) => experiments::delay::run(&out, c.seed),
        Cmd::Loss(c) => experiments::loss::run(&out, c.seed),
        Cmd::Latecomer(c) => experiments::latecomer::run(&out, c.seed),
        Cmd::Priority(c) => experiments::priority::run(&out, c.seed),
        Cmd::Coexist(c) => experiments::coexist::run(&out, c.seed),
        Cmd::Latency(c) => experiments::latency::run(&out, c.seed),
        Cmd::Multipath {
            common,
            content_mib,
        } => experiments::multipath::run(&out, common.seed, *content_mib),
        Cmd::Locality {
            common,
            content_mib,
        } => experiments::locality::run(&out, common.seed, *content_mib),
        Cmd::Swarm {
            common,
            leechers,
            content_kib,
            cases,
        } => experiments::swarm::run(&out, common.seed, *leechers, *content_kib, cases),
    };
    match result {
        Ok(mut summary) => {
            let c = experiments::closed();
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
