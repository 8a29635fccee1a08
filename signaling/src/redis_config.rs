//! Where the rooms live when several instances serve one site: the Redis they share.

use std::fmt;
use std::time::Duration;

/// Shortest and longest `peer_ttl`: refreshes every third of it must stay rare enough not
/// to load Redis, and the peers of a dead instance must not linger for long.
pub const MIN_PEER_TTL: Duration = Duration::from_secs(1);
pub const MAX_PEER_TTL: Duration = Duration::from_secs(300);

/// Rooms in Redis instead of this process's memory (`--redis`), so that any number of
/// instances serve one site. Its `Debug` hides a password in the URL.
#[derive(Clone, PartialEq)]
pub struct RedisConfig {
    /// `redis://[[user]:password@]host[:port][/db]`, or `rediss://` for TLS, or
    /// `redis+unix:///path`.
    pub url: String,
    /// Prefix of every key and channel, so that several sites can share one Redis.
    pub key_prefix: String,
    /// A peer whose instance stops refreshing it (the instance died, or lost Redis) is
    /// removed from its room, and announced as gone, within about this long plus a third.
    pub peer_ttl: Duration,
}

impl RedisConfig {
    /// A configuration with the default prefix (`ppspp-signal`) and peer ttl (15 s).
    pub fn new(url: impl Into<String>) -> RedisConfig {
        RedisConfig {
            url: url.into(),
            key_prefix: "ppspp-signal".into(),
            peer_ttl: Duration::from_secs(15),
        }
    }

    /// The URL without its password, for logs.
    pub fn redacted_url(&self) -> String {
        match (self.url.find("://"), self.url.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                let userinfo = &self.url[scheme + 3..at];
                let user = userinfo.split(':').next().unwrap_or("");
                format!("{}{user}:***{}", &self.url[..scheme + 3], &self.url[at..])
            }
            _ => self.url.clone(),
        }
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if let Err(e) = redis::Client::open(self.url.as_str()) {
            return Err(format!("redis url {}: {e}", self.redacted_url()));
        }
        let p = &self.key_prefix;
        if p.is_empty() || p.len() > 64 || !p.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(
                "redis key prefix must be 1 to 64 printable characters without spaces".into(),
            );
        }
        if self.peer_ttl < MIN_PEER_TTL || self.peer_ttl > MAX_PEER_TTL {
            return Err(format!(
                "redis peer ttl must be between {} s and {} s, not {} s",
                MIN_PEER_TTL.as_secs(),
                MAX_PEER_TTL.as_secs(),
                self.peer_ttl.as_secs_f64()
            ));
        }
        Ok(())
    }
}

impl fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &self.redacted_url())
            .field("key_prefix", &self.key_prefix)
            .field("peer_ttl", &self.peer_ttl)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_stay_out_of_logs() {
        let c = RedisConfig::new("redis://app:s3cret@10.0.0.5:6379/2");
        assert_eq!(c.redacted_url(), "redis://app:***@10.0.0.5:6379/2");
        assert!(!format!("{c:?}").contains("s3cret"));
        assert_eq!(
            RedisConfig::new("redis://:pw@h").redacted_url(),
            "redis://:***@h"
        );
        assert_eq!(
            RedisConfig::new("redis://127.0.0.1:6379").redacted_url(),
            "redis://127.0.0.1:6379"
        );
    }

    #[test]
    fn bad_settings_are_refused() {
        assert_eq!(RedisConfig::new("redis://127.0.0.1").validate(), Ok(()));
        assert!(RedisConfig::new("http://x").validate().is_err());
        let mut c = RedisConfig::new("redis://127.0.0.1");
        c.key_prefix = "a b".into();
        assert!(c.validate().is_err());
        c.key_prefix = "site".into();
        c.peer_ttl = Duration::from_millis(500);
        assert!(c.validate().unwrap_err().contains("peer ttl"));
    }
}
