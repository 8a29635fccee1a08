//! ICE servers in the welcome: STUN URLs as configured, TURN URLs with a TURN REST
//! credential per join (`<unix expiry>:<peer id>`, base64(HMAC-SHA1(secret, username))),
//! nothing when unconfigured, and clear startup errors for a bad configuration. The same
//! list, with fresh credentials, in reply to `ice` while joined (`[]` when unconfigured).

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use common::{Binary, Client, Ending, Server, swarm};
use futures_util::SinkExt;
use ppspp_signal::{Config, TurnSecret};
use serde_json::{Value, json};
use sha1::{Digest, Sha1};
use tokio_tungstenite::tungstenite::Message;

const SECRET: &str = "test-static-auth-secret";
const STUN: &str = "stun:198.51.100.1:3478";
const TURN_UDP: &str = "turn:198.51.100.1:3478?transport=udp";
const TURN_TLS: &str = "turns:turn.example.org:5349?transport=tcp";

/// HMAC-SHA1 (RFC 2104) written out here from SHA-1, so the test does not check the
/// server's HMAC with the same code that made it.
fn hmac_sha1(key: &[u8], message: &[u8]) -> [u8; 20] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..20].copy_from_slice(&Sha1::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha1::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha1::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// Sends a join and returns the whole welcome.
async fn welcome(c: &mut Client, swarm: &str) -> Value {
    c.send(json!({"type": "join", "v": 1, "swarm": swarm}))
        .await;
    let m = c.recv().await;
    assert_eq!(m["type"], "welcome", "{m}");
    m
}

/// Checks the `iceServers` of a welcome or an `ice-servers` reply against the
/// configuration: the STUN entry without credentials, then the TURN entry whose username is
/// `<expiry>:<peer id>` for `peer_id`, with the expiry `ttl` after the message was asked for
/// (between `before` and `after`), and whose credential verifies.
fn check_ice_servers_for(
    m: &Value,
    peer_id: &str,
    secret: &str,
    ttl: u64,
    before: u64,
    after: u64,
) -> String {
    let servers = m["iceServers"].as_array().expect("iceServers");
    assert_eq!(servers.len(), 2, "{m}");
    assert_eq!(servers[0], json!({"urls": [STUN]}), "{m}");
    let turn = &servers[1];
    assert_eq!(turn["urls"], json!([TURN_UDP, TURN_TLS]), "{m}");
    let username = turn["username"].as_str().expect("username");
    let (expiry, peer) = username.split_once(':').expect("<expiry>:<peer id>");
    assert_eq!(peer, peer_id, "{m}");
    let expiry: u64 = expiry.parse().expect("expiry in Unix seconds");
    assert!(
        (before + ttl..=after + ttl).contains(&expiry),
        "expiry {expiry} is not now ({before}..{after}) + {ttl}"
    );
    let credential = turn["credential"].as_str().expect("credential");
    let mac = base64::engine::general_purpose::STANDARD
        .decode(credential)
        .expect("credential in standard base64");
    assert_eq!(
        mac,
        hmac_sha1(secret.as_bytes(), username.as_bytes()),
        "the credential is not HMAC-SHA1(secret, username)"
    );
    assert_eq!(turn.as_object().expect("object").len(), 3, "{turn}");
    username.to_owned()
}

/// [`check_ice_servers_for`] of a welcome, for the peer id it assigns.
fn check_ice_servers(m: &Value, secret: &str, ttl: u64, before: u64, after: u64) -> String {
    let peer_id = m["peer_id"].as_str().expect("peer_id");
    check_ice_servers_for(m, peer_id, secret, ttl, before, after)
}

/// Sends `ice` and returns the `ice-servers` reply, checking it has nothing else.
async fn ask_ice(c: &mut Client) -> Value {
    c.send(json!({"type": "ice"})).await;
    let m = c.recv().await;
    assert_eq!(m["type"], "ice-servers", "{m}");
    assert!(m["iceServers"].is_array(), "{m}");
    assert_eq!(m.as_object().expect("object").len(), 2, "{m}");
    m
}

/// The expiry (Unix seconds) of the TURN username of an `iceServers` list.
fn turn_expiry(m: &Value) -> u64 {
    let username = m["iceServers"][1]["username"].as_str().expect("username");
    let (expiry, _) = username.split_once(':').expect("<expiry>:<peer id>");
    expiry.parse().expect("expiry")
}

fn configured(ttl: Duration) -> Config {
    Config {
        stun_urls: vec![STUN.into()],
        turn_urls: vec![TURN_UDP.into(), TURN_TLS.into()],
        turn_secret: Some(TurnSecret::new(SECRET)),
        turn_credential_ttl: ttl,
        ..Config::default()
    }
}

/// Every join gets credentials of its own, valid for the configured time from the join.
#[tokio::test]
async fn configured_server_issues_turn_credentials_per_join() {
    let ttl = 3600;
    let server = Server::start(configured(Duration::from_secs(ttl))).await;
    let mut a = server.client().await;
    let mut b = server.client().await;

    let before = unix_now();
    let wa = welcome(&mut a, &swarm(1)).await;
    let wb = welcome(&mut b, &swarm(1)).await;
    let after = unix_now();
    let ua = check_ice_servers(&wa, SECRET, ttl, before, after);
    let ub = check_ice_servers(&wb, SECRET, ttl, before, after);
    assert_ne!(ua, ub, "two peers, one username");
    assert_ne!(
        wa["iceServers"][1]["credential"],
        wb["iceServers"][1]["credential"]
    );

    // A rejoin (new peer id) gets fresh credentials too.
    a.send(json!({"type": "leave"})).await;
    let before = unix_now();
    let again = welcome(&mut a, &swarm(2)).await;
    let ua2 = check_ice_servers(&again, SECRET, ttl, before, unix_now());
    assert_ne!(ua, ua2);
    server.stop().await.expect("stop");
}

/// A joined client renews its ICE servers with `ice`: the welcome's list, with a credential
/// for its current peer id issued at the request (a later expiry than the welcome's), and
/// again after a rejoin for the new peer id. Nothing else changes: the room still works.
#[tokio::test]
async fn joined_client_gets_fresh_ice_servers() {
    let ttl = 600;
    let server = Server::start(configured(Duration::from_secs(ttl))).await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    let before = unix_now();
    let wa = welcome(&mut a, &swarm(7)).await;
    let a_id = wa["peer_id"].as_str().expect("peer_id").to_owned();
    check_ice_servers(&wa, SECRET, ttl, before, unix_now());

    // Into the next second, so the renewed credential must have a later expiry.
    while unix_now() <= turn_expiry(&wa) - ttl {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = unix_now();
    let fresh = ask_ice(&mut a).await;
    let username = check_ice_servers_for(&fresh, &a_id, SECRET, ttl, before, unix_now());
    assert!(turn_expiry(&fresh) > turn_expiry(&wa), "{fresh} after {wa}");
    assert_ne!(
        fresh["iceServers"][1]["credential"],
        wa["iceServers"][1]["credential"]
    );
    assert_eq!(fresh["iceServers"][0], wa["iceServers"][0], "the same STUN");
    assert_eq!(fresh["iceServers"][1]["urls"], wa["iceServers"][1]["urls"]);

    // Still in the room, with the same peer id: signals reach it.
    let wb = welcome(&mut b, &swarm(7)).await;
    assert_eq!(wb["peers"], json!([a_id]));
    let b_id = wb["peer_id"].as_str().expect("peer_id").to_owned();
    b.send(json!({"type": "signal", "to": a_id, "data": 1}))
        .await;
    let m = a.recv().await;
    assert_eq!(m, json!({"type": "signal", "from": b_id, "data": 1}));

    // After a rejoin, for the new peer id.
    a.send(json!({"type": "leave"})).await;
    let again = welcome(&mut a, &swarm(8)).await;
    let new_id = again["peer_id"].as_str().expect("peer_id").to_owned();
    assert_ne!(new_id, a_id);
    let before = unix_now();
    let renewed = ask_ice(&mut a).await;
    let u2 = check_ice_servers_for(&renewed, &new_id, SECRET, ttl, before, unix_now());
    assert_ne!(u2, username);
    server.stop().await.expect("stop");
}

/// `ice` before `join` and after `leave` is the non-fatal `not-joined`; the connection goes
/// on and may join and ask then.
#[tokio::test]
async fn ice_needs_a_room() {
    let server = Server::start(configured(Duration::from_secs(60))).await;
    let mut a = server.client().await;
    a.send(json!({"type": "ice"})).await;
    let e = a.expect_error("not-joined").await;
    assert_eq!(e["fatal"], false, "{e}");
    let w = welcome(&mut a, &swarm(9)).await;
    let id = w["peer_id"].as_str().expect("peer_id").to_owned();
    let before = unix_now();
    let m = ask_ice(&mut a).await;
    check_ice_servers_for(&m, &id, SECRET, 60, before, unix_now());
    a.send(json!({"type": "leave"})).await;
    a.send(json!({"type": "ice"})).await;
    let e = a.expect_error("not-joined").await;
    assert_eq!(e["fatal"], false, "{e}");
    welcome(&mut a, &swarm(9)).await;
    server.stop().await.expect("stop");
}

/// A server without ICE servers answers `ice` with an empty list (never a missing field).
#[tokio::test]
async fn unconfigured_server_answers_ice_with_an_empty_list() {
    let server = Server::start(Config::default()).await;
    let mut a = server.client().await;
    welcome(&mut a, &swarm(10)).await;
    let m = ask_ice(&mut a).await;
    assert_eq!(m, json!({"type": "ice-servers", "iceServers": []}));
    server.stop().await.expect("stop");
}

/// `ice` costs a token of the rate limit like any message: a flood of them is cut off.
#[tokio::test]
async fn ice_counts_against_the_rate_limit() {
    let server = Server::start(Config {
        rate_per_sec: 1.0,
        rate_burst: 5.0,
        ..configured(Duration::from_secs(60))
    })
    .await;
    let mut a = server.client().await;
    welcome(&mut a, &swarm(11)).await;
    // All at once, without reading.
    for _ in 0..10 {
        if a.ws.feed(Message::text(r#"{"type":"ice"}"#)).await.is_err() {
            break;
        }
    }
    let _ = a.ws.flush().await;
    let mut replies = 0;
    loop {
        let m = a.recv().await;
        match m["type"].as_str() {
            Some("ice-servers") => replies += 1,
            Some("error") => {
                assert_eq!(m["code"], "rate-limited", "{m}");
                break;
            }
            _ => panic!("unexpected {m}"),
        }
    }
    // The join took one token of five (a little refill is allowed).
    assert!(
        (4..=5).contains(&replies),
        "{replies} replies before the limit"
    );
    assert_eq!(a.ending().await, Ending::Closed(1008));
    server.stop().await.expect("stop");
}

/// A welcome with the default configuration has no `iceServers` at all, as before.
#[tokio::test]
async fn unconfigured_server_sends_no_ice_servers() {
    let server = Server::start(Config::default()).await;
    let mut a = server.client().await;
    let m = welcome(&mut a, &swarm(3)).await;
    assert!(m.get("iceServers").is_none(), "{m}");
    let keys: Vec<&str> = m
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    // The protocol's fields and the default report interval, nothing more.
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["peer_id", "peers", "reportEvery", "swarm", "type", "v"],
        "{m}"
    );
    server.stop().await.expect("stop");
}

/// STUN alone: one entry, no credentials, and no secret needed.
#[tokio::test]
async fn stun_only() {
    let server = Server::start(Config {
        stun_urls: vec![STUN.into(), "stuns:stun.example.org".into()],
        ..Config::default()
    })
    .await;
    let mut a = server.client().await;
    let m = welcome(&mut a, &swarm(4)).await;
    assert_eq!(
        m["iceServers"],
        json!([{"urls": [STUN, "stuns:stun.example.org"]}])
    );
    server.stop().await.expect("stop");
}

/// A file in a fresh temporary directory, removed on drop.
struct TempFile {
    dir: PathBuf,
    path: PathBuf,
}

impl TempFile {
    fn new(name: &str, contents: &str) -> TempFile {
        // Tests of this binary run at once and may use the same name: a counter keeps their
        // directories apart (one's drop removed the other's file).
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "ppspp-signal-ice-{}-{n}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, contents).expect("write temp file");
        TempFile { dir, path }
    }

    fn arg(&self) -> &str {
        self.path.to_str().expect("UTF-8 path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The binary: flags, the secret from a file (its newline not part of it), and the secret
/// never in the log, even at debug level.
#[tokio::test]
async fn binary_reads_the_secret_file_and_never_logs_it() {
    let secret = TempFile::new("secret", &format!("{SECRET}\n"));
    let ttl = 120;
    let mut bin = Binary::spawn(
        &[
            "--stun-url",
            STUN,
            "--turn-url",
            &format!("{TURN_UDP},{TURN_TLS}"),
            "--turn-secret-file",
            secret.arg(),
            "--turn-ttl",
            &ttl.to_string(),
        ],
        "debug",
        true,
    );
    let mut a = Client::connect(&bin.url()).await;
    let before = unix_now();
    let m = welcome(&mut a, &swarm(5)).await;
    check_ice_servers(&m, SECRET, ttl, before, unix_now());
    a.close().await;
    let (status, log) = bin.terminate_and_read_log();
    assert!(status.success(), "exit status {status}");
    let log = log.join("\n");
    assert!(log.contains("welcomes carry iceServers"), "{log}");
    assert!(!log.contains(SECRET), "the secret is in the log:\n{log}");
}

/// The binary with the secret in `PPSPP_SIGNAL_TURN_SECRET` and the URLs in the
/// environment too.
#[tokio::test]
async fn binary_takes_everything_from_the_environment() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ppspp-signal"))
        .args(["--bind", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .env("PPSPP_SIGNAL_STUN_URLS", STUN)
        .env("PPSPP_SIGNAL_TURN_URLS", format!("{TURN_UDP},{TURN_TLS}"))
        .env("PPSPP_SIGNAL_TURN_SECRET", SECRET)
        .env("PPSPP_SIGNAL_TURN_TTL", "60")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let banner = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("banner");
        line
    });
    let banner = tokio::time::timeout(Duration::from_secs(10), banner)
        .await
        .expect("banner in time")
        .expect("join");
    let url = banner
        .trim_end()
        .strip_prefix("ppspp-signal listening on ")
        .expect("banner")
        .to_owned();
    let mut a = Client::connect(&url).await;
    let before = unix_now();
    let m = welcome(&mut a, &swarm(6)).await;
    check_ice_servers(&m, SECRET, 60, before, unix_now());
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs the binary with `args` and `env` (it must refuse to start) and returns its stderr.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ppspp-signal"));
    cmd.args(["--bind", "127.0.0.1:0"]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let Output { status, stderr, .. } = cmd.output().expect("run");
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    assert_eq!(status.code(), Some(2), "{args:?} started: {stderr}");
    assert!(
        !stderr.contains(SECRET),
        "the secret is in the message: {stderr}"
    );
    stderr
}

/// Bad ICE settings stop the binary at startup with exit code 2 and say what is wrong.
#[test]
fn binary_refuses_bad_ice_settings() {
    let e = refused(&["--turn-url", TURN_UDP], &[]);
    assert!(
        e.contains("turn_urls need turn_secret") && e.contains("--turn-secret-file"),
        "{e}"
    );

    let missing = std::env::temp_dir().join("ppspp-signal-no-such-dir/secret");
    let missing = missing.to_str().expect("UTF-8");
    let e = refused(
        &["--turn-url", TURN_UDP, "--turn-secret-file", missing],
        &[],
    );
    assert!(
        e.contains("--turn-secret-file") && e.contains("cannot read") && e.contains(missing),
        "{e}"
    );

    let empty = TempFile::new("empty", "\n");
    let e = refused(
        &["--turn-url", TURN_UDP, "--turn-secret-file", empty.arg()],
        &[],
    );
    assert!(e.contains("empty"), "{e}");

    // A short secret falls to an offline guess from one welcome's credential.
    for short in ["k", "abcd\n", "fifteen-bytes!!"] {
        let weak = TempFile::new("weak", short);
        let e = refused(
            &["--turn-url", TURN_UDP, "--turn-secret-file", weak.arg()],
            &[],
        );
        assert!(
            e.contains("at least 16") && e.contains("openssl rand -hex 32"),
            "{short:?}: {e}"
        );
    }

    let secret = TempFile::new("secret", SECRET);
    let turn = ["--turn-url", TURN_UDP, "--turn-secret-file", secret.arg()];
    let e = refused(&[&turn[..], &["--turn-ttl", "0"]].concat(), &[]);
    assert!(e.contains("turn_credential_ttl must be between 1 s"), "{e}");
    let e = refused(&[&turn[..], &["--turn-ttl", "1000000"]].concat(), &[]);
    assert!(e.contains("turn_credential_ttl"), "{e}");

    let e = refused(&turn, &[("PPSPP_SIGNAL_TURN_SECRET", SECRET)]);
    assert!(e.contains("not both"), "{e}");

    let e = refused(&["--turn-secret-file", secret.arg()], &[]);
    assert!(e.contains("turn_urls is empty"), "{e}");

    let e = refused(&["--stun-url", "stun.example.org:3478"], &[]);
    assert!(
        e.contains("stun_urls") && e.contains("must start with"),
        "{e}"
    );
}
