//! `ppspp-linkem`: delay, jitter and random loss for the packets a netfilter queue hands
//! it (an `NFQUEUE` rule in a home router of `scripts/wan.sh`), since this kernel has no
//! `netem`. Each packet is dropped with the given probability or released after the delay
//! plus a uniform jitter, never before the packet ahead of it (a link does not reorder).
//! Decisions come from a generator seeded by `--seed`, so one seed gives one sequence of
//! losses and jitters. Rate caps are the kernel's `tbf`, set by the script.

mod link;

use clap::Parser;
use link::{Link, LinkConfig};
use std::io::ErrorKind;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The netfilter queue to serve.
    #[arg(long)]
    queue: u16,
    /// One-way delay added to every packet, in milliseconds.
    #[arg(long, default_value_t = 0.0)]
    delay_ms: f64,
    /// Extra delay, uniform in [0, jitter), in milliseconds.
    #[arg(long, default_value_t = 0.0)]
    jitter_ms: f64,
    /// Share of packets dropped, in percent.
    #[arg(long, default_value_t = 0.0)]
    loss_percent: f64,
    /// Seed of the loss and jitter decisions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// How long to sleep when nothing is queued or due sooner: the granularity of the delays.
const POLL: Duration = Duration::from_micros(500);
/// A release this late is counted: the path was that much longer than asked.
const LATE: Duration = Duration::from_millis(10);
/// How often a line on late releases may be printed.
const REPORT_EVERY: Duration = Duration::from_secs(5);

/// Late releases so far.
#[derive(Default)]
struct Lateness {
    released: u64,
    late: u64,
    worst: Duration,
    reported_at: Duration,
    reported_late: u64,
}

impl Lateness {
    fn count(&mut self, late: Duration) {
        self.released += 1;
        if late >= LATE {
            self.late += 1;
            self.worst = self.worst.max(late);
        }
    }

    /// At most every few seconds, and only after new late releases, a line with the
    /// totals so far (the tests' failure reports show the last one).
    fn report(&mut self, now: Duration) {
        if self.late == self.reported_late || now - self.reported_at < REPORT_EVERY {
            return;
        }
        println!(
            "linkem: {} of {} packets {}+ ms late by {:.0} s, worst {} ms (short of CPU)",
            self.late,
            self.released,
            LATE.as_millis(),
            now.as_secs_f64(),
            self.worst.as_millis()
        );
        self.reported_at = now;
        self.reported_late = self.late;
    }
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("ppspp-linkem: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let config = LinkConfig::new(args.delay_ms, args.jitter_ms, args.loss_percent, args.seed)?;
    let mut queue =
        nfq::Queue::open().map_err(|e| format!("cannot open a netfilter queue: {e}"))?;
    queue
        .bind(args.queue)
        .map_err(|e| format!("cannot bind queue {}: {e}", args.queue))?;
    queue
        .set_queue_max_len(args.queue, 8192)
        .map_err(|e| format!("cannot size queue {}: {e}", args.queue))?;
    queue.set_nonblocking(true);
    // Ready: the script waits for this line before it sends traffic through the queue.
    println!("linkem: queue {} ready", args.queue);
    let mut link = Link::new(config);
    let mut lateness = Lateness::default();
    let start = Instant::now();
    loop {
        loop {
            match queue.recv() {
                Ok(mut msg) => {
                    let now = start.elapsed();
                    if !link.admit(now) {
                        msg.set_verdict(nfq::Verdict::Drop);
                        queue.verdict(msg).map_err(|e| format!("verdict: {e}"))?;
                    } else {
                        link.hold(now, msg);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("receiving from queue {}: {e}", args.queue)),
            }
        }
        let now = start.elapsed();
        while let Some((mut msg, late)) = link.release(now) {
            lateness.count(late);
            msg.set_verdict(nfq::Verdict::Accept);
            queue.verdict(msg).map_err(|e| format!("verdict: {e}"))?;
        }
        lateness.report(now);
        let wait = link
            .next_due()
            .map_or(POLL, |due| due.saturating_sub(now).min(POLL));
        std::thread::sleep(wait);
    }
}
