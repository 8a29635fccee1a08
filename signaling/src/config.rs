//! Server limits, and the ICE servers handed to clients. Every resource a client can make
//! the server spend is bounded by one of these.

use std::time::Duration;

use std::sync::Arc;

use crate::ice::{self, MAX_ICE_URLS, MAX_TURN_CREDENTIAL_TTL, TurnSecret};
use crate::locality::AsTable;
use crate::redis_config::RedisConfig;

/// The shortest TURN secret accepted, in bytes: 128 bits if they are random.
pub const MIN_TURN_SECRET_LEN: usize = 16;

/// The shortest and longest interval between a client's reports.
const MIN_REPORT_EVERY: Duration = Duration::from_secs(5);
const MAX_REPORT_EVERY: Duration = Duration::from_secs(3600);

/// Limits and timers of a signaling server. `Config::default()` is what the binary runs
/// with when no flag or environment variable says otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Largest text frame a client may send, in bytes. A larger one gets `too-large` and
    /// the connection is closed.
    pub max_message_bytes: usize,
    /// Most peers in one room (swarm). A `join` beyond gets `room-full`.
    pub max_peers_per_room: usize,
    /// Most rooms open at once. A `join` that would open one more gets `too-many-rooms`.
    pub max_rooms: usize,
    /// Most WebSocket connections open at once. Upgrades beyond get HTTP 503.
    pub max_connections: usize,
    /// Most WebSocket connections from one client address (an IPv4 address, or an IPv6
    /// /64). Upgrades beyond get HTTP 503. The address is the TCP peer's: behind a proxy,
    /// every client has the proxy's.
    pub max_connections_per_ip: usize,
    /// Most HTTP connections not (yet) upgraded to WebSocket (health checks, handshakes in
    /// progress). A new TCP connection beyond is closed at once.
    pub max_http_connections: usize,
    /// Most such HTTP connections from one client address, so that one address cannot take
    /// all of `max_http_connections`. A new TCP connection beyond is closed at once.
    pub max_http_connections_per_ip: usize,
    /// An HTTP connection that does not deliver a complete request head within this long
    /// (also between requests on a kept-alive connection) is closed.
    pub http_header_timeout: Duration,
    /// Most peers listed in a `welcome`: the closest of the room to the newcomer (same
    /// address block, then same AS), and `random_sample_share` of them from the whole room
    /// at random.
    pub sample_size: usize,
    /// The share of a `welcome`'s sample drawn from the whole room at random (0 to 1; at
    /// least one place once the sample has two): what keeps a swarm spread over networks
    /// from splitting into islands. 1: every sample at random, as without locality.
    pub random_sample_share: f64,
    /// The address block that counts as one network for samples: an IPv4 prefix length
    /// (default 24; 0 leaves blocks out).
    pub locality_v4_prefix: u8,
    /// The same for IPv6 (default 48).
    pub locality_v6_prefix: u8,
    /// A prefix-to-AS table (CAIDA's pfx2as format): peers in the newcomer's AS come next
    /// after its block. None: blocks only.
    pub as_table: Option<Arc<AsTable>>,
    /// The request header holding the client's address, set by a proxy in front (e.g.
    /// `X-Real-IP`); its last comma-separated address counts, for locality. None (the
    /// default): the TCP peer's address. Set it only behind a proxy that always sets the
    /// header, or clients can claim any address.
    pub client_ip_header: Option<String>,
    /// Token-bucket refill: frames per second a client may send on average.
    pub rate_per_sec: f64,
    /// Token-bucket depth: frames a client may send in a burst.
    pub rate_burst: f64,
    /// A connection that sends nothing (no message, no pong) for this long is closed.
    pub idle_timeout: Duration,
    /// How often the server pings each client. Should be well under `idle_timeout`.
    pub ping_interval: Duration,
    /// Bytes queued for one client (relayed signals and `peer-left` notices, each counted
    /// as its length plus a fixed overhead). Signals may fill three quarters of it; a signal
    /// beyond is refused to its sender with `peer-busy`. The last quarter is for `peer-left`
    /// notices; a client whose queue has no room even for a notice is disconnected as a slow
    /// reader.
    pub outbound_queue_bytes: usize,
    /// Bytes of one sender's signals queued for one client; beyond, `peer-busy`. Must hold
    /// the largest relayed signal (`max_message_bytes` plus a little).
    pub outbound_queue_bytes_per_sender: usize,
    /// `peer-left` notices per second a room may send to peers that did not know the
    /// leaver (it banks up to 10 s of them). Peers that knew it (from a `welcome` sample or
    /// signals) are always told.
    pub room_notice_rate: f64,
    /// A single write to a client that takes longer than this closes the connection (a
    /// client that does not read).
    pub write_timeout: Duration,
    /// On shutdown, how long `serve` waits for connections to close before returning.
    pub shutdown_grace: Duration,
    /// STUN server URLs (`stun:` or `stuns:`) every `welcome` lists in `iceServers`, in
    /// one entry without credentials. Empty by default.
    pub stun_urls: Vec<String>,
    /// TURN server URLs (`turn:` or `turns:`) every `welcome` lists in `iceServers`, in one
    /// entry with a username and credential made for the joining client from
    /// `turn_secret`. Empty by default; when set, `turn_secret` is required.
    pub turn_urls: Vec<String>,
    /// The secret shared with the TURN server (coturn's `static-auth-secret`, with
    /// `use-auth-secret`). Its `Debug` is redacted.
    pub turn_secret: Option<TurnSecret>,
    /// How long a TURN credential is valid from the `join` it was issued for (whole
    /// seconds count): between 1 s and 7 days.
    pub turn_credential_ttl: Duration,
    /// How often clients that report (the site opted in) send their figures: the
    /// `welcome`'s `reportEvery`, in whole seconds (5 s to 1 hour). Zero: the server takes
    /// no reports and the welcome says nothing of them.
    pub report_every: Duration,
    /// Peers a room needs before its welcomes list any (0 or 1, the default 0: always).
    /// Below, a newcomer's welcome has an empty sample and `p2pFrom`: pages play from their
    /// HTTP origin, and peer-to-peer starts when the newcomer that brings the room to this
    /// number is offered the others. For sites whose origin is cheap for small audiences.
    pub p2p_min_peers: usize,
    /// Rooms in this Redis, shared with every other instance configured alike, instead of
    /// in this process's memory. `None` (the default): one process serves the site.
    /// With Redis, `max_peers_per_room` holds across instances; `max_rooms` and every
    /// per-client limit are each instance's own.
    pub redis: Option<RedisConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_message_bytes: 16 * 1024,
            max_peers_per_room: 1000,
            max_rooms: 10_000,
            max_connections: 10_000,
            max_connections_per_ip: 100,
            max_http_connections: 256,
            max_http_connections_per_ip: 32,
            http_header_timeout: Duration::from_secs(10),
            sample_size: 20,
            random_sample_share: 0.25,
            locality_v4_prefix: 24,
            locality_v6_prefix: 48,
            as_table: None,
            client_ip_header: None,
            rate_per_sec: 50.0,
            rate_burst: 200.0,
            idle_timeout: Duration::from_secs(60),
            ping_interval: Duration::from_secs(20),
            outbound_queue_bytes: 256 * 1024,
            outbound_queue_bytes_per_sender: 64 * 1024,
            room_notice_rate: 100.0,
            write_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
            stun_urls: Vec::new(),
            turn_urls: Vec::new(),
            turn_secret: None,
            turn_credential_ttl: Duration::from_secs(24 * 3600),
            report_every: Duration::from_secs(30),
            p2p_min_peers: 0,
            redis: None,
        }
    }
}

impl Config {
    /// Checks that the limits make sense (non-zero sizes, ping interval under the idle
    /// timeout), so a bad flag fails at startup rather than at the first client.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("max_message_bytes", self.max_message_bytes),
            ("max_peers_per_room", self.max_peers_per_room),
            ("max_rooms", self.max_rooms),
            ("max_connections", self.max_connections),
            ("max_connections_per_ip", self.max_connections_per_ip),
            ("max_http_connections", self.max_http_connections),
            (
                "max_http_connections_per_ip",
                self.max_http_connections_per_ip,
            ),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        if self.max_message_bytes < 256 {
            return Err("max_message_bytes must be at least 256".into());
        }
        // A relayed signal is the client's frame with `to` replaced by `from` (as long);
        // allow for the JSON printer writing numbers longer than the client did.
        let largest_signal = self.max_message_bytes.saturating_add(1024);
        if self.outbound_queue_bytes_per_sender < largest_signal {
            return Err(format!(
                "outbound_queue_bytes_per_sender must be at least max_message_bytes + 1024 ({largest_signal})"
            ));
        }
        if self.outbound_queue_bytes / 4 * 3 < self.outbound_queue_bytes_per_sender {
            return Err(
                "outbound_queue_bytes must be at least 4/3 of outbound_queue_bytes_per_sender \
                 (signals may fill three quarters of it)"
                    .into(),
            );
        }
        if !(self.room_notice_rate.is_finite() && self.room_notice_rate >= 0.0) {
            return Err("room_notice_rate must be a number >= 0".into());
        }
        if !(self.rate_per_sec.is_finite() && self.rate_per_sec > 0.0) {
            return Err("rate_per_sec must be a positive number".into());
        }
        if !(self.rate_burst.is_finite() && self.rate_burst >= 1.0) {
            return Err("rate_burst must be at least 1".into());
        }
        for (name, d) in [
            ("idle_timeout", self.idle_timeout),
            ("ping_interval", self.ping_interval),
            ("write_timeout", self.write_timeout),
            ("http_header_timeout", self.http_header_timeout),
        ] {
            if d.is_zero() {
                return Err(format!("{name} must be greater than zero"));
            }
        }
        if self.ping_interval >= self.idle_timeout {
            return Err("ping_interval must be shorter than idle_timeout".into());
        }
        if let Some(redis) = &self.redis {
            redis.validate()?;
        }
        self.validate_ice()
    }

    /// The ICE part of [`Config::validate`]: URL schemes, TURN only with a secret (and a
    /// secret only with TURN), a bounded credential lifetime.
    fn validate_ice(&self) -> Result<(), String> {
        for (field, urls, schemes) in [
            ("stun_urls", &self.stun_urls, ["stun:", "stuns:"]),
            ("turn_urls", &self.turn_urls, ["turn:", "turns:"]),
        ] {
            if urls.len() > MAX_ICE_URLS {
                return Err(format!("{field}: at most {MAX_ICE_URLS} URLs"));
            }
            for url in urls {
                ice::check_url(field, url, &schemes)?;
            }
        }
        match (&self.turn_secret, self.turn_urls.is_empty()) {
            (None, false) => {
                return Err(
                    "turn_urls need turn_secret, the TURN server's static-auth-secret \
                     (--turn-secret-file FILE or PPSPP_SIGNAL_TURN_SECRET): without it no \
                     client could use them"
                        .into(),
                );
            }
            (Some(_), true) => {
                return Err(
                    "turn_secret is set but turn_urls is empty: name the TURN server \
                     (--turn-url turn:HOST:3478)"
                        .into(),
                );
            }
            (Some(secret), false) if secret.is_empty() => {
                return Err("turn_secret must not be empty".into());
            }
            (Some(secret), false) if secret.len() < MIN_TURN_SECRET_LEN => {
                // Every welcome hands out a username and its HMAC: an offline oracle that
                // gives a short secret away, and with it credentials of any lifetime.
                return Err(format!(
                    "turn_secret is {} bytes; at least {MIN_TURN_SECRET_LEN} are needed, since \
                     anyone can guess a short one from one welcome's TURN credential (make \
                     one with: openssl rand -hex 32)",
                    secret.len()
                ));
            }
            _ => {}
        }
        let ttl = self.turn_credential_ttl;
        if ttl < Duration::from_secs(1) || ttl > MAX_TURN_CREDENTIAL_TTL {
            return Err(format!(
                "turn_credential_ttl must be between 1 s and {} s (7 days), not {} s",
                MAX_TURN_CREDENTIAL_TTL.as_secs(),
                ttl.as_secs_f64()
            ));
        }
        if !(0.0..=1.0).contains(&self.random_sample_share) {
            return Err(format!(
                "random_sample_share must be between 0 and 1, not {}",
                self.random_sample_share
            ));
        }
        if self.locality_v4_prefix > 32 || self.locality_v6_prefix > 128 {
            return Err(format!(
                "locality prefixes must be at most 32 (IPv4) and 128 (IPv6), not {} and {}",
                self.locality_v4_prefix, self.locality_v6_prefix
            ));
        }
        if let Some(h) = &self.client_ip_header
            && axum::http::HeaderName::from_bytes(h.as_bytes()).is_err()
        {
            return Err(format!("client_ip_header {h:?} is not a header name"));
        }
        if self.p2p_min_peers > self.max_peers_per_room {
            return Err(format!(
                "p2p_min_peers ({}) is more than a room holds (max_peers_per_room {})",
                self.p2p_min_peers, self.max_peers_per_room
            ));
        }
        let every = self.report_every;
        if !every.is_zero() && !(MIN_REPORT_EVERY..=MAX_REPORT_EVERY).contains(&every) {
            return Err(format!(
                "report_every must be 0 (no reports) or between {} s and {} s, not {} s",
                MIN_REPORT_EVERY.as_secs(),
                MAX_REPORT_EVERY.as_secs(),
                every.as_secs_f64()
            ));
        }
        Ok(())
    }

    /// How client addresses are judged for closeness.
    pub(crate) fn judge(&self) -> crate::locality::Judge<'_> {
        crate::locality::Judge {
            v4_prefix: self.locality_v4_prefix,
            v6_prefix: self.locality_v6_prefix,
            as_table: self.as_table.as_deref(),
        }
    }

    /// The `welcome`'s `reportEvery`: whole seconds, or `None` when reports are off.
    pub(crate) fn report_every_secs(&self) -> Option<u64> {
        (!self.report_every.is_zero()).then_some(self.report_every.as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_queues_do_not() {
        assert_eq!(Config::default().validate(), Ok(()));
        let small_share = Config {
            outbound_queue_bytes_per_sender: 16 * 1024,
            ..Config::default()
        };
        assert!(small_share.validate().is_err());
        let small_total = Config {
            outbound_queue_bytes: 64 * 1024,
            ..Config::default()
        };
        assert!(small_total.validate().is_err());
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let c = Config {
                room_notice_rate: bad,
                ..Config::default()
            };
            assert!(c.validate().is_err());
        }
        let no_ip = Config {
            max_connections_per_ip: 0,
            ..Config::default()
        };
        assert!(no_ip.validate().is_err());
    }

    #[test]
    fn ice_settings_are_checked() {
        let err = |c: Config| c.validate().unwrap_err();
        let turn = Config {
            turn_urls: vec!["turn:198.51.100.1:3478".into()],
            turn_secret: Some(TurnSecret::new("0123456789abcdef")),
            ..Config::default()
        };
        assert_eq!(turn.validate(), Ok(()));
        let e = err(Config {
            turn_secret: None,
            ..turn.clone()
        });
        assert!(e.contains("turn_urls need turn_secret"), "{e}");
        let e = err(Config {
            turn_urls: vec![],
            ..turn.clone()
        });
        assert!(e.contains("turn_urls is empty"), "{e}");
        let e = err(Config {
            turn_secret: Some(TurnSecret::new("")),
            ..turn.clone()
        });
        assert!(e.contains("must not be empty"), "{e}");
        for short in ["x", "abcd", "0123456789abcde"] {
            let e = err(Config {
                turn_secret: Some(TurnSecret::new(short)),
                ..turn.clone()
            });
            assert!(
                e.contains("at least 16") && e.contains("openssl rand"),
                "{e}"
            );
        }
        for bad in [
            Duration::ZERO,
            Duration::from_millis(999),
            Duration::from_secs(8 * 86_400),
        ] {
            let e = err(Config {
                turn_credential_ttl: bad,
                ..turn.clone()
            });
            assert!(e.contains("turn_credential_ttl"), "{e}");
        }
        let e = err(Config {
            stun_urls: vec!["turn:198.51.100.1".into()],
            ..Config::default()
        });
        assert!(e.contains("stun_urls") && e.contains("stun:"), "{e}");
        let e = err(Config {
            turn_urls: vec!["stun:198.51.100.1".into()],
            ..turn.clone()
        });
        assert!(e.contains("turn_urls"), "{e}");
        let e = err(Config {
            stun_urls: vec!["stun:a".into(); MAX_ICE_URLS + 1],
            ..Config::default()
        });
        assert!(e.contains("at most"), "{e}");
    }
}
