//! When to try the signaling servers again after the connection dropped: the policy the
//! page's client follows too (`rejoinDelayMs` in web/src/signaling.ts; both are checked
//! against tests/policy/adapters.json).

use std::time::Duration;

/// The first wait.
const FIRST: Duration = Duration::from_secs(1);
/// The longest wait before jitter.
const MAX: Duration = Duration::from_secs(30);

/// The wait before attempt number `attempt` (from 0) through `urls` servers: it doubles
/// with each round through them, up to [`MAX`], times a jitter of 0.75 to 1.25 picked by
/// `random` (0 to 1) so peers that lost one server do not all come back at once.
pub fn rejoin_delay(attempt: u32, urls: usize, random: f64) -> Duration {
    let round = attempt / u32::try_from(urls).unwrap_or(u32::MAX).max(1);
    let doubled = FIRST.saturating_mul(1 << round.min(5));
    doubled
        .min(MAX)
        .mul_f64(0.75 + random.clamp(0.0, 1.0) * 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn policy() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/policy/adapters.json"
        );
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).expect("tests/policy/adapters.json is JSON")
    }

    #[test]
    fn rejoin_delays_are_the_shared_policy() {
        let p = &policy()["signalingRejoin"];
        assert_eq!(p["firstMs"].as_u64(), Some(FIRST.as_millis() as u64));
        assert_eq!(p["maxMs"].as_u64(), Some(MAX.as_millis() as u64));
        let cases = p["delays"].as_array().expect("delays");
        assert!(cases.len() >= 5);
        for c in cases {
            let attempt = c["attempt"].as_u64().expect("attempt") as u32;
            let urls = c["urls"].as_u64().expect("urls") as usize;
            let random = c["random"].as_f64().expect("random");
            let got = rejoin_delay(attempt, urls, random).as_secs_f64() * 1000.0;
            let want = c["ms"].as_f64().expect("ms");
            assert!((got - want).abs() < 0.001, "{c}: {got} ms");
        }
    }

    #[test]
    fn the_data_channel_queue_is_the_shared_policy() {
        let p = &policy()["dataChannel"];
        assert_eq!(
            p["highWaterBytes"].as_u64(),
            Some(crate::rtc::MAX_BUFFERED as u64)
        );
        assert_eq!(
            p["maxQueuedBytes"].as_u64(),
            Some(crate::rtc::MAX_QUEUED as u64)
        );
    }
}
