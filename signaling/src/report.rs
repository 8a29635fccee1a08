//! A client's `report`s: running totals since its join of the bytes it received (from
//! peers, the HTTP origin, seeders) and of its stalls, turned into what grew since its last
//! report. The server adds only that growth to the swarm's figures, and only as much as
//! could have happened in the time since: a page that lies moves its own share and nothing
//! more, and never anyone else's.

use std::time::Duration;

use ppspp_signal_protocol::ReportBytes;
use tokio::time::Instant;

/// The most bytes a second one source can account for in a report: 1 Gbit/s, above any
/// viewer's video.
const MAX_BYTES_PER_SECOND: u64 = 125_000_000;

/// Allowance on top of the rate, for a first report right after a fast start.
const SLACK_BYTES: u64 = 64 * 1024 * 1024;

/// What a report adds to its swarm's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Growth {
    pub bytes: ReportBytes,
    pub stalls: u64,
    pub stall_ms: u64,
}

/// The totals of one client's last report.
#[derive(Debug)]
pub(crate) struct ReportState {
    last: Growth,
    /// When the last report was taken (the join, before the first).
    at: Instant,
    /// Whether a report was taken since the join.
    reported: bool,
}

impl ReportState {
    /// A client that joined at `joined`, with nothing reported yet.
    pub(crate) fn new(joined: Instant) -> ReportState {
        ReportState {
            last: Growth::default(),
            at: joined,
            reported: false,
        }
    }

    /// Whether a report of this client was taken since its join.
    pub(crate) fn reported(&self) -> bool {
        self.reported
    }

    /// Takes a report of running totals `now`: what grew since the last one, or why it is
    /// refused (then nothing changes). `every` is the interval the server asked for; a
    /// report may come after half of it.
    pub(crate) fn take(
        &mut self,
        now: Instant,
        every: Duration,
        totals: Growth,
    ) -> Result<Growth, String> {
        let since = now.saturating_duration_since(self.at);
        if self.reported && since < every / 2 {
            return Err(format!("reports come at most every {} s", every.as_secs()));
        }
        let last = &self.last;
        let fields = [
            ("bytes.peers", totals.bytes.peers, last.bytes.peers),
            ("bytes.http", totals.bytes.http, last.bytes.http),
            ("bytes.seeders", totals.bytes.seeders, last.bytes.seeders),
            ("stalls", totals.stalls, last.stalls),
            ("stallMs", totals.stall_ms, last.stall_ms),
        ];
        if let Some((name, now_total, before)) = fields.iter().find(|(_, n, b)| n < b) {
            return Err(format!(
                "{name} went down from {before} to {now_total}: reports are running totals since the join"
            ));
        }
        let grew = Growth {
            bytes: ReportBytes {
                peers: totals.bytes.peers - last.bytes.peers,
                http: totals.bytes.http - last.bytes.http,
                seeders: totals.bytes.seeders - last.bytes.seeders,
            },
            stalls: totals.stalls - last.stalls,
            stall_ms: totals.stall_ms - last.stall_ms,
        };
        let secs = since.as_secs_f64();
        let most_bytes = (secs * MAX_BYTES_PER_SECOND as f64) as u64 + SLACK_BYTES;
        let bytes = grew
            .bytes
            .peers
            .saturating_add(grew.bytes.http)
            .saturating_add(grew.bytes.seeders);
        if bytes > most_bytes {
            return Err(format!(
                "{bytes} bytes in {secs:.1} s is more than a viewer receives"
            ));
        }
        // A stall lasts at least a moment, and stalls cannot outlast the time that passed.
        let most_ms = u64::try_from(since.as_millis()).unwrap_or(u64::MAX) + 1000;
        if grew.stall_ms > most_ms || grew.stalls > most_ms / 100 + 1 {
            return Err(format!(
                "{} stalls of {} ms in {secs:.1} s cannot be",
                grew.stalls, grew.stall_ms
            ));
        }
        self.last = totals;
        self.at = now;
        self.reported = true;
        Ok(grew)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: Duration = Duration::from_secs(30);

    fn totals(peers: u64, http: u64, seeders: u64, stalls: u64, stall_ms: u64) -> Growth {
        Growth {
            bytes: ReportBytes {
                peers,
                http,
                seeders,
            },
            stalls,
            stall_ms,
        }
    }

    #[test]
    fn each_report_adds_what_grew_since_the_last() {
        let joined = Instant::now();
        let mut r = ReportState::new(joined);
        assert!(!r.reported());
        let t1 = joined + EVERY;
        assert_eq!(
            r.take(t1, EVERY, totals(1000, 200, 300, 1, 500)),
            Ok(totals(1000, 200, 300, 1, 500))
        );
        assert!(r.reported());
        assert_eq!(
            r.take(t1 + EVERY, EVERY, totals(5000, 200, 800, 1, 500)),
            Ok(totals(4000, 0, 500, 0, 0))
        );
    }

    #[test]
    fn a_refused_report_changes_nothing() {
        let joined = Instant::now();
        let mut r = ReportState::new(joined);
        let t1 = joined + EVERY;
        r.take(t1, EVERY, totals(1000, 0, 0, 0, 0)).unwrap();
        // Too soon after the last.
        let early = r.take(t1 + EVERY / 4, EVERY, totals(2000, 0, 0, 0, 0));
        assert!(early.unwrap_err().contains("at most every 30 s"));
        // A total that went down.
        let down = r.take(t1 + EVERY, EVERY, totals(900, 0, 0, 0, 0));
        assert!(down.unwrap_err().contains("bytes.peers went down"));
        // More than a viewer can receive in the time since.
        let lie = r.take(t1 + EVERY, EVERY, totals(1000 + 10_000_000_000, 0, 0, 0, 0));
        assert!(lie.unwrap_err().contains("more than a viewer receives"));
        // Longer stalls than the time that passed.
        let stalls = r.take(t1 + EVERY, EVERY, totals(1000, 0, 0, 1, 40_000));
        assert!(stalls.unwrap_err().contains("cannot be"));
        // After all that, the next honest report still counts from the last taken one.
        assert_eq!(
            r.take(t1 + EVERY, EVERY, totals(3000, 0, 0, 2, 900)),
            Ok(totals(2000, 0, 0, 2, 900))
        );
    }

    #[test]
    fn the_bound_grows_with_the_time_since_the_last_report() {
        let joined = Instant::now();
        let mut r = ReportState::new(joined);
        // A first report right after the join may hold the slack, not more.
        let soon = joined + Duration::from_millis(100);
        assert!(
            r.take(soon, EVERY, totals(SLACK_BYTES + 13_000_000, 0, 0, 0, 0))
                .is_err()
        );
        assert!(r.take(soon, EVERY, totals(SLACK_BYTES, 0, 0, 0, 0)).is_ok());
        // A minute later, a minute's worth at the rate.
        let later = soon + Duration::from_secs(60);
        let most = SLACK_BYTES + 60 * MAX_BYTES_PER_SECOND;
        assert!(
            r.take(later, EVERY, totals(SLACK_BYTES + most + 1, 0, 0, 0, 0))
                .is_err()
        );
        assert!(
            r.take(later, EVERY, totals(SLACK_BYTES + most, 0, 0, 0, 0))
                .is_ok()
        );
    }
}
