//! The ICE servers a `welcome` and an `ice-servers` reply carry: the configured STUN URLs
//! as they are, and the TURN URLs with credentials made for the client (its peer id, a fresh
//! expiry).
//!
//! TURN credentials follow the "TURN REST API" scheme (draft-uberti-behave-turn-rest-00)
//! that coturn checks with `use-auth-secret` and `static-auth-secret=<secret>`: the
//! username is `<unix expiry>:<peer id>` and the password is
//! base64(HMAC-SHA1(secret, username)). The TURN server recomputes the HMAC from the
//! username and its copy of the secret, and refuses a username whose expiry has passed, so
//! no page ever holds the secret and a leaked credential stops working by itself.

use std::fmt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use ppspp_signal_protocol::IceServer;
use sha1::Sha1;

use crate::Config;

/// Longest lifetime of a TURN credential the server issues (7 days): a credential is a
/// bearer token for the TURN server's bandwidth until it expires.
pub const MAX_TURN_CREDENTIAL_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// Most STUN URLs, and most TURN URLs, a server hands out (browsers try every one).
pub const MAX_ICE_URLS: usize = 16;

/// Longest ICE server URL accepted.
pub const MAX_ICE_URL_LEN: usize = 512;

/// The secret shared with the TURN server (coturn's `static-auth-secret`). Its `Debug`
/// never shows it, so logging a [`Config`] does not leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct TurnSecret(Vec<u8>);

impl TurnSecret {
    /// The secret's bytes as they are.
    pub fn new(secret: impl Into<Vec<u8>>) -> TurnSecret {
        TurnSecret(secret.into())
    }

    /// Reads the secret from a file. Whitespace around it (such as the final newline) is
    /// not part of the secret, as in coturn's configuration line. An empty file is refused.
    pub fn from_file(path: &Path) -> Result<TurnSecret, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let secret = bytes.trim_ascii();
        if secret.is_empty() {
            return Err(format!("{} holds no secret (it is empty)", path.display()));
        }
        Ok(TurnSecret(secret.to_vec()))
    }

    /// Whether the secret has no bytes (refused by [`Config::validate`]).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Its length in bytes (under [`crate::config::MIN_TURN_SECRET_LEN`] is refused).
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl fmt::Debug for TurnSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TurnSecret(<redacted>)")
    }
}

/// The TURN REST username of a credential valid until `expiry` (Unix seconds) for
/// `peer_id`: `"<expiry>:<peer_id>"`.
pub fn turn_username(expiry: u64, peer_id: &str) -> String {
    format!("{expiry}:{peer_id}")
}

/// The TURN REST password of `username`: base64(HMAC-SHA1(secret, username)), what coturn
/// computes under `use-auth-secret`.
pub fn turn_credential(secret: &TurnSecret, username: &str) -> String {
    // HMAC takes keys of any length.
    let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(&secret.0)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(username.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// The ICE servers for `peer_id`, with TURN credentials issued now: the `iceServers` of its
/// `welcome` and of each `ice-servers` reply. Empty when no STUN or TURN URL is configured.
pub(crate) fn for_peer(config: &Config, peer_id: &str) -> Vec<IceServer> {
    for_peer_at(config, peer_id, SystemTime::now())
}

/// [`for_peer`] at time `now`.
pub(crate) fn for_peer_at(config: &Config, peer_id: &str, now: SystemTime) -> Vec<IceServer> {
    let mut servers = Vec::new();
    if !config.stun_urls.is_empty() {
        servers.push(IceServer::new(config.stun_urls.clone()));
    }
    if let (false, Some(secret)) = (config.turn_urls.is_empty(), &config.turn_secret) {
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let expiry = now.saturating_add(config.turn_credential_ttl.as_secs());
        let username = turn_username(expiry, peer_id);
        let credential = turn_credential(secret, &username);
        servers.push(IceServer {
            username: Some(username),
            credential: Some(credential),
            ..IceServer::new(config.turn_urls.clone())
        });
    }
    servers
}

/// The `welcome`'s `iceServers` field: left out when there are none, as old servers do
/// (an `ice-servers` reply sends the empty list instead).
pub(crate) fn welcome_field(servers: Vec<IceServer>) -> Option<Vec<IceServer>> {
    (!servers.is_empty()).then_some(servers)
}

/// Checks one configured URL: one of `schemes` (e.g. `stun:`), something after it, no
/// whitespace or control characters (browsers refuse such a URL, and every peer connection
/// with it), and not too long.
pub(crate) fn check_url(field: &str, url: &str, schemes: &[&str]) -> Result<(), String> {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = schemes.iter().find_map(|s| lower.strip_prefix(s)) else {
        return Err(format!(
            "{field}: {url:?} must start with {}",
            schemes.join(" or ")
        ));
    };
    if rest.is_empty() || rest.starts_with('?') {
        return Err(format!("{field}: {url:?} names no host"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{field}: {url:?} contains whitespace"));
    }
    if url.len() > MAX_ICE_URL_LEN {
        return Err(format!(
            "{field}: a URL is longer than {MAX_ICE_URL_LEN} bytes"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2202's HMAC-SHA1 test cases 1, 2 and 6 (a key longer than the block).
    #[test]
    fn hmac_sha1_matches_rfc_2202() {
        let b64 = |hex: &str| {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            base64::engine::general_purpose::STANDARD.encode(bytes)
        };
        assert_eq!(
            turn_credential(&TurnSecret::new(vec![0x0b; 20]), "Hi There"),
            b64("b617318655057264e28bc0b6fb378c8ef146be00")
        );
        assert_eq!(
            turn_credential(&TurnSecret::new("Jefe"), "what do ya want for nothing?"),
            b64("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        );
        assert_eq!(
            turn_credential(
                &TurnSecret::new(vec![0xaa; 80]),
                "Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            b64("aa4ae5e15272d00e95705637ce8a3b55ed402112")
        );
    }

    /// The credential in `signaling/protocol/fixtures/server-to-client/welcome-ice-servers.json`
    /// (and in docs/SIGNALING.md) is the one this server makes with the secret
    /// `example-secret`.
    #[test]
    fn the_fixture_credential_is_ours() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("protocol/fixtures/server-to-client/welcome-ice-servers.json");
        let text = std::fs::read_to_string(path).unwrap();
        let msg = ppspp_signal_protocol::ServerMessage::from_json(text.trim_end()).unwrap();
        let ppspp_signal_protocol::ServerMessage::Welcome {
            peer_id,
            ice_servers: Some(servers),
            ..
        } = msg
        else {
            panic!("no iceServers in the fixture");
        };
        let turn = servers
            .iter()
            .find(|s| s.username.is_some())
            .expect("a TURN entry");
        let username = turn.username.as_deref().unwrap();
        assert_eq!(username, turn_username(1_700_086_400, &peer_id));
        assert_eq!(
            turn.credential.as_deref(),
            Some(turn_credential(&TurnSecret::new("example-secret"), username).as_str())
        );
    }

    /// `fixtures/server-to-client/ice-servers.json` is what this server prints for the
    /// welcome fixture's configuration and peer, and `ice-servers-none.json` what it prints
    /// without one.
    #[test]
    fn the_ice_servers_fixtures_are_ours() {
        let fixture = |name: &str| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("protocol/fixtures/server-to-client")
                .join(name);
            std::fs::read_to_string(path).unwrap().trim_end().to_owned()
        };
        let config = Config {
            stun_urls: vec!["stun:turn.example.org:3478".into()],
            turn_urls: vec![
                "turn:turn.example.org:3478?transport=udp".into(),
                "turns:turn.example.org:5349?transport=tcp".into(),
            ],
            turn_secret: Some(TurnSecret::new("example-secret")),
            turn_credential_ttl: Duration::from_secs(86_400),
            ..Config::default()
        };
        let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let reply = |config: &Config| ppspp_signal_protocol::ServerMessage::IceServers {
            ice_servers: for_peer_at(config, "9a0b1c2d3e4f5061728394a5b6c7d8e9", at),
        };
        assert_eq!(reply(&config).to_json(), fixture("ice-servers.json"));
        assert_eq!(
            reply(&Config::default()).to_json(),
            fixture("ice-servers-none.json")
        );
    }

    #[test]
    fn welcome_servers_follow_the_config() {
        let peer = "9a0b1c2d3e4f5061728394a5b6c7d8e9";
        let at = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(for_peer_at(&Config::default(), peer, at), vec![]);
        assert_eq!(welcome_field(vec![]), None);

        let stun_only = Config {
            stun_urls: vec!["stun:198.51.100.1:3478".into()],
            ..Config::default()
        };
        assert_eq!(
            welcome_field(for_peer_at(&stun_only, peer, at)),
            Some(vec![IceServer::new(vec!["stun:198.51.100.1:3478".into()])])
        );

        let both = Config {
            turn_urls: vec!["turn:198.51.100.1:3478".into(), "turns:t.test:5349".into()],
            turn_secret: Some(TurnSecret::new("example-secret")),
            turn_credential_ttl: Duration::from_secs(86_400),
            ..stun_only
        };
        let servers = for_peer_at(&both, peer, at);
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].username, None);
        assert_eq!(
            servers[1].urls(),
            ["turn:198.51.100.1:3478", "turns:t.test:5349"]
        );
        assert_eq!(
            servers[1].username.as_deref(),
            Some("1700086400:9a0b1c2d3e4f5061728394a5b6c7d8e9")
        );
        // The fixture's credential, since the fixture is this very case.
        assert_eq!(
            servers[1].credential.as_deref(),
            Some("wlLDEXBoLdKL8sqRxn1XDnwaFHo=")
        );
        // Another peer, another credential.
        let other = for_peer_at(&both, "00", at);
        assert_ne!(other[1].credential, servers[1].credential);
    }

    #[test]
    fn the_secret_does_not_show_in_debug() {
        let config = Config {
            turn_secret: Some(TurnSecret::new("hunter2-very-secret")),
            ..Config::default()
        };
        let shown = format!("{config:?} {:?}", config.turn_secret);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn secret_files_are_trimmed_and_empty_ones_refused() {
        let dir = std::env::temp_dir().join(format!("ppspp-signal-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("secret");
        std::fs::write(&file, "  s3cret\n").unwrap();
        assert_eq!(TurnSecret::from_file(&file), Ok(TurnSecret::new("s3cret")));
        std::fs::write(&file, "\n").unwrap();
        let err = TurnSecret::from_file(&file).unwrap_err();
        assert!(err.contains("empty"), "{err}");
        let err = TurnSecret::from_file(&dir.join("missing")).unwrap_err();
        assert!(
            err.contains("cannot read") && err.contains("missing"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn urls_are_checked() {
        let stun = ["stun:", "stuns:"];
        assert_eq!(
            check_url("stun_urls", "stun:198.51.100.1:3478", &stun),
            Ok(())
        );
        assert_eq!(check_url("stun_urls", "STUNS:host", &stun), Ok(()));
        for bad in [
            "turn:host",
            "stun:",
            "stun:?transport=udp",
            "stun:a b",
            "http://x",
        ] {
            assert!(check_url("stun_urls", bad, &stun).is_err(), "{bad}");
        }
        let long = format!("stun:{}", "a".repeat(MAX_ICE_URL_LEN));
        assert!(check_url("stun_urls", &long, &stun).is_err());
    }
}
