//! The experiments of docs/EXPERIMENTS.md, one module each, and what they share: the
//! bulk-transfer base scenario, the record of closed channels, rounding for summaries
//! (plots and CSV: `ppspp_sim::plot`). Each module's `run` writes its CSV and PNG files
//! into `out` and returns its JSON summary.

pub mod capacity;
pub mod coexist;
pub mod delay;
pub mod latecomer;
pub mod latency;
pub mod link;
pub mod locality;
pub mod loss;
pub mod multipath;
pub mod priority;
pub mod swarm;

use ppspp_sim::bulk::{Bulk, BulkRun, Flow};
use serde_json::{Value, json};
use std::time::Duration;

/// An experiment's JSON summary, or why it failed.
pub type Res = Result<Value, String>;

thread_local! {
    /// Every run in which a leecher closed its channel to the seeder: (run, time, reason).
    static CLOSED: std::cell::RefCell<Vec<Value>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The channels leechers closed so far in this process (see `CLOSED`).
pub fn closed() -> Vec<Value> {
    CLOSED.with(|c| c.borrow().clone())
}

/// Runs a scenario and records any channel the leecher closed (see `CLOSED`).
pub fn run_bulk(b: &Bulk) -> BulkRun {
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

/// `x` rounded to `digits` decimal places.
/// Runs `run` on every case, the cases spread over the machine's cores (the runs are
/// independent); the results come back in the cases' order. `what` names the experiment
/// in the panic of a run that panicked.
pub fn on_all_cores<C: Sync, R: Send>(
    cases: &[C],
    what: &str,
    run: impl Fn(&C) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let run = &run;
    std::thread::scope(|scope| {
        let parts: Vec<_> = cases
            .chunks(cases.len().div_ceil(threads).max(1))
            .map(|part| scope.spawn(move || part.iter().map(run).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| panic!("a {what} run panicked")))
            .collect()
    })
}

pub fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

/// One LEDBAT flow from the start over a lossless bottleneck of `bw` bit/s.
pub fn base(bw: u64, owd_ms: u64, queue: usize, duration_s: f64, seed: u64) -> Bulk {
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
