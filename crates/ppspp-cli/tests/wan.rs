//! The emulated internet (`scripts/wan.sh`): a public segment and homes behind NAT routers,
//! two keeping ports (endpoint-independent mapping) and two symmetric (random ports per
//! destination). Plain UDP needs no STUN there, since the fetcher opens the channel. Over
//! WebRTC, with the signaling server's STUN and TURN (coturn), a seeder and a fetcher meet
//! whatever their NATs: directly where a path exists (two port-keeping homes; a symmetric
//! home and the public segment), through the relay where none does (two symmetric homes; a
//! symmetric and a port-keeping one), each test asserting which pair was selected; and a
//! fetcher with `--relay-only` gets the file through TURN alone. Where namespaces cannot be
//! made (not root), the test says it was skipped and why; `PPSPP_REQUIRE_NETNS=1` makes that
//! a failure.

mod common;

use common::{Running, content, finish, spawn_command, temp_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn wan_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/wan.sh")
}

/// The link emulator, built beside this test's own binary (target/<profile>/).
fn linkem() -> PathBuf {
    workspace_bin(&["build", "-p", "ppspp-linkem"], "ppspp-linkem")
}

/// The signaling server's binary as the workspace's test build makes it (its integration
/// tests run it): with `make test`'s flags (the Makefile's test-rust) this is already done.
/// `cargo build -p ppspp-signal` would build its dependencies again, their features
/// unified without the dev-dependencies, which took this test most of a minute.
fn signal_bin() -> PathBuf {
    let test_build = [
        "test",
        "--no-run",
        "--workspace",
        "--locked",
        "--features",
        "ppspp-cli/webrtc-rs,ppspp-wasm/bench",
    ];
    workspace_bin(&test_build, "ppspp-signal")
}

/// One emulated internet, removed when the test ends however it ends.
struct Wan {
    name: String,
}

impl Wan {
    /// `None` (after saying why) where namespaces cannot be made. `link`: the script's
    /// LINK options (delay, loss, …), applied to every home's path.
    fn up(tag: &str, link: &[&str]) -> Option<Wan> {
        let name = format!("pw{tag}{}", std::process::id());
        let out = Command::new(wan_script())
            .args(["up", &name])
            .args(link)
            .env("PPSPP_LINKEM", linkem())
            .output()
            .expect("run scripts/wan.sh");
        match out.status.code() {
            Some(0) => Some(Wan { name }),
            Some(3) if std::env::var_os("PPSPP_REQUIRE_NETNS").is_none() => {
                eprintln!(
                    "SKIPPED: {} (the emulated-internet tests need network namespaces)",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            _ => panic!(
                "scripts/wan.sh up failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    /// `ppspp ARGS` inside node `node` (pub, home1 … home4).
    fn ppspp(&self, node: &str, args: &[&str]) -> Command {
        self.cmd(node, Path::new(env!("CARGO_BIN_EXE_ppspp")), args)
    }

    /// `program ARGS` inside node `node`.
    fn cmd(&self, node: &str, program: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &format!("{}-{node}", self.name)])
            .arg(program)
            .args(args);
        cmd
    }
}

impl Drop for Wan {
    fn drop(&mut self) {
        let _ = Command::new(wan_script())
            .args(["down", &self.name])
            .status();
    }
}

/// `ppspp seed` of `data` on the public segment, over UDP; returns it and its URI.
fn seed_in_public(wan: &Wan, dir: &Path, data: &[u8]) -> (Running, String) {
    let src = dir.join("src.bin");
    std::fs::write(&src, data).unwrap();
    let seeder = spawn_command(wan.ppspp(
        "pub",
        &["seed", src.to_str().unwrap(), "--udp", "198.51.100.10:0"],
    ));
    let uri = seeder.next_line(Duration::from_secs(30));
    assert!(uri.contains("udp=198.51.100.10:"), "{uri}");
    (seeder, uri)
}

fn fetch_in(wan: &Wan, home: &str, uri: &str, out: &Path) {
    let child = wan
        .ppspp(home, &["fetch", uri, "-o", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ppspp fetch");
    let o = finish(child, Duration::from_secs(60), &format!("fetch in {home}"));
    assert!(
        o.status.success(),
        "fetch in {home} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn fetchers_behind_both_kinds_of_nat_get_the_file_from_the_public_seeder() {
    let Some(wan) = Wan::up("a", &[]) else {
        return;
    };
    let dir = temp_dir("wan");
    let data = content(2_000_000, 13);
    let (_seeder, uri) = seed_in_public(&wan, &dir, &data);
    // Home 1 keeps ports; home 3's router is symmetric.
    for home in ["home1", "home3"] {
        let out = dir.join(format!("{home}.bin"));
        fetch_in(&wan, home, &uri, &out);
        assert!(
            std::fs::read(&out).unwrap() == data,
            "{home} got other bytes"
        );
    }
    // Homes are private: another home's address leads nowhere.
    let probe = wan
        .ppspp(
            "home2",
            &["fetch", &uri.replace("198.51.100.10", "192.168.1.2"), "-o"],
        )
        .arg(dir.join("none.bin"))
        .arg("--give-up-after")
        .arg("3")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ppspp fetch");
    let o = finish(probe, Duration::from_secs(60), "fetch across homes");
    assert!(
        !o.status.success(),
        "a private address of another home answered"
    );
}

#[test]
fn a_shaped_home_path_adds_its_delay_and_a_fetch_survives_its_loss() {
    let Some(wan) = Wan::up(
        "b",
        &[
            "--delay", "20", "--jitter", "2", "--loss", "1", "--seed", "3",
        ],
    ) else {
        return;
    };
    let dir = temp_dir("wan-shaped");
    let data = content(1_000_000, 14);
    let (_seeder, uri) = seed_in_public(&wan, &dir, &data);
    let out = dir.join("home2.bin");
    let child = wan
        .ppspp(
            "home2",
            &["fetch", &uri, "-o", out.to_str().unwrap(), "--stats-json"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ppspp fetch");
    let o = finish(
        child,
        Duration::from_secs(120),
        "fetch over the shaped path",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(&out).unwrap() == data, "other bytes");
    // Every round trip crosses the router twice: at least 40 ms.
    let rtts: Vec<f64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .flat_map(|v| {
            v["channels"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|c| c["rtt_ms"].as_f64())
        })
        .filter(|r| *r > 0.0)
        .collect();
    assert!(!rtts.is_empty(), "no channel figures in the stats");
    assert!(
        rtts.iter().all(|r| *r >= 38.0),
        "a round trip below the emulated 40 ms: {rtts:?}"
    );
}

/// A binary of this workspace, built beside this test's own (target/<profile>/) by `cargo
/// ARGS`.
fn workspace_bin(args: &[&str], name: &str) -> PathBuf {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    // What cargo set for this test (CARGO_PKG_NAME, CARGO_MANIFEST_DIR, …) would reach build
    // scripts' `rerun-if-env-changed` checks, and the build would redo ring, str0m and the
    // rest here and again in the next plain `cargo test`.
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let set_by_cargo = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|p| k.starts_with(p))
            || ["CARGO_PRIMARY_PACKAGE", "CARGO_TARGET_TMPDIR", "OUT_DIR"].contains(&&*k);
        if set_by_cargo {
            cargo.env_remove(&key);
        }
    }
    let status = cargo.args(args).arg("--quiet").status().expect("run cargo");
    assert!(status.success(), "cargo {args:?} failed");
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .join(name)
}

const TURN_SECRET: &str = "ppspp-wan-test-secret";

/// STUN and TURN (coturn, TURN REST credentials from `TURN_SECRET`) and the signaling
/// server handing them out, in the public segment; returns them and the signaling URL.
fn public_services(wan: &Wan, dir: &Path) -> (Running, Running, String) {
    let coturn = spawn_command(wan.cmd(
        "pub",
        Path::new("turnserver"),
        &[
            "-n",
            "--no-cli",
            "--no-tls",
            "--no-dtls",
            "--listening-ip=198.51.100.10",
            "--relay-ip=198.51.100.10",
            "--listening-port=3478",
            "--fingerprint",
            "--use-auth-secret",
            &format!("--static-auth-secret={TURN_SECRET}"),
            "--realm=ppspp.test",
            "--log-file=stdout",
            "--simple-log",
            &format!("--pidfile={}", dir.join("turn.pid").display()),
            &format!("--db={}", dir.join("turn.sqlite").display()),
        ],
    ));
    wait_for(&coturn, "Total General servers", "coturn");
    let mut signal_cmd = wan.cmd(
        "pub",
        &signal_bin(),
        &[
            "--bind",
            "198.51.100.10:0",
            "--stun-url",
            "stun:198.51.100.10:3478",
            "--turn-url",
            "turn:198.51.100.10:3478?transport=udp",
            "--turn-ttl",
            "600",
        ],
    );
    signal_cmd.env("PPSPP_SIGNAL_TURN_SECRET", TURN_SECRET);
    let signal = spawn_command(signal_cmd);
    let line = wait_for(&signal, "listening on ws://", "ppspp-signal");
    let url = line[line.find("ws://").expect("the signaling URL")..]
        .trim()
        .to_string();
    (coturn, signal, url)
}

/// `ppspp seed` of `data` in `node` over WebRTC, bound to `bind`, with the welcome's STUN
/// and TURN; returns it and its URI.
fn seed_webrtc(
    wan: &Wan,
    node: &str,
    bind: &str,
    dir: &Path,
    data: &[u8],
    signal: &str,
) -> (Running, String) {
    let src = dir.join("src.bin");
    std::fs::write(&src, data).unwrap();
    let seeder = spawn_command(wan.ppspp(
        node,
        &[
            "seed",
            src.to_str().unwrap(),
            "--signal",
            signal,
            "--bind",
            bind,
            "--chunk-size",
            "8192",
        ],
    ));
    let uri = seeder.next_line(Duration::from_secs(30));
    assert!(uri.starts_with("ppspp://"), "{uri}");
    (seeder, uri)
}

/// [`seed_webrtc`] in home 1, behind a port-keeping NAT.
fn seed_in_home1(wan: &Wan, dir: &Path, data: &[u8], signal: &str) -> (Running, String) {
    seed_webrtc(wan, "home1", "192.168.1.2:0", dir, data, signal)
}

fn fetch_webrtc(
    wan: &Wan,
    home: &str,
    bind: &str,
    uri: &str,
    out: &Path,
    extra: &[&str],
) -> String {
    let child = wan
        .ppspp(
            home,
            &["fetch", uri, "-o", out.to_str().unwrap(), "--bind", bind],
        )
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ppspp fetch");
    let o = finish(child, Duration::from_secs(90), &format!("fetch in {home}"));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "fetch in {home} failed: {stderr}");
    stderr
}

#[test]
fn native_peers_in_two_homes_meet_through_stun_learnt_addresses() {
    let Some(wan) = Wan::up("c", &[]) else {
        return;
    };
    let dir = temp_dir("wan-stun");
    let (_coturn, _signal, signal) = public_services(&wan, &dir);
    let data = content(1_000_000, 15);
    let (_seeder, uri) = seed_in_home1(&wan, &dir, &data, &signal);
    // Home 2 keeps ports too: the two learn their public addresses and punch through.
    let out = dir.join("home2.bin");
    let stderr = fetch_webrtc(&wan, "home2", "192.168.2.2:0", &uri, &out, &[]);
    assert!(std::fs::read(&out).unwrap() == data, "other bytes");
    assert!(
        stderr.contains("typ srflx") && stderr.contains("203.0.113.2"),
        "the fetcher learnt no server-reflexive address: {stderr}"
    );
    // The welcome named a TURN server too: the direct path is the one used.
    let (local, remote) = selected_pair(&stderr);
    assert!(
        local != "relay" && remote != "relay",
        "hole punching works between these homes, yet {local} -> {remote} was selected"
    );
}

#[test]
fn a_native_fetcher_behind_the_symmetric_nat_gets_the_file_through_turn_alone() {
    let Some(wan) = Wan::up("d", &[]) else {
        return;
    };
    let dir = temp_dir("wan-turn");
    let (coturn, _signal, signal) = public_services(&wan, &dir);
    let data = content(1_000_000, 16);
    let (_seeder, uri) = seed_in_home1(&wan, &dir, &data, &signal);
    let out = dir.join("home3.bin");
    let stderr = fetch_webrtc(
        &wan,
        "home3",
        "192.168.3.2:0",
        &uri,
        &out,
        &["--relay-only"],
    );
    assert!(std::fs::read(&out).unwrap() == data, "other bytes");
    assert!(
        stderr.contains("typ relay"),
        "no relayed candidate: {stderr}"
    );
    assert!(
        !stderr.contains("typ host") && !stderr.contains("typ srflx"),
        "relay only: {stderr}"
    );
    drop(coturn);
}

/// The pair the fetcher's connection to the seeder settled on, as its "connected over"
/// line says: (our candidate's type, the seeder's candidate's type).
fn selected_pair(stderr: &str) -> (String, String) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("webrtc: ") && l.contains(" connected over "))
        .unwrap_or_else(|| panic!("no connection reported: {stderr}"));
    // "webrtc: PEER connected over LOCAL_TYPE ADDR -> REMOTE_TYPE ADDR"
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "over").unwrap();
    (words[at + 1].to_string(), words[at + 4].to_string())
}

/// A seeder in `seed_node` and a fetcher in `fetch_node`, each with the welcome's STUN
/// and TURN (no `--relay-only`), every home's path 20 ms each way (what a round trip costs
/// shows in the order of ICE's exchanges): the fetch gets the file; returns the pair
/// selected (`None` where namespaces cannot be made).
fn fetch_across(
    tag: &str,
    (seed_node, seed_bind): (&str, &str),
    (fetch_node, fetch_bind): (&str, &str),
) -> Option<(String, String)> {
    let wan = Wan::up(tag, &["--delay", "20"])?;
    let dir = temp_dir(&format!("wan-{seed_node}-{fetch_node}"));
    let (coturn, _signal, signal) = public_services(&wan, &dir);
    let data = content(1_000_000, 17);
    let (_seeder, uri) = seed_webrtc(&wan, seed_node, seed_bind, &dir, &data, &signal);
    let out = dir.join("got.bin");
    let stderr = fetch_webrtc(&wan, fetch_node, fetch_bind, &uri, &out, &[]);
    assert!(
        std::fs::read(&out).unwrap() == data,
        "{fetch_node} got other bytes"
    );
    assert!(
        stderr.contains("typ relay") && stderr.contains("typ srflx"),
        "the fetcher learnt no relayed or no server-reflexive candidate: {stderr}"
    );
    drop(coturn);
    Some(selected_pair(&stderr))
}

/// Which kind of pair a connection must settle on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pair {
    Direct,
    Relayed,
}

/// [`fetch_across`], then the pair selected must be of kind `want` (`why` says why).
fn meets(tag: &str, seed: (&str, &str), fetch: (&str, &str), want: Pair, why: &str) {
    let Some((local, remote)) = fetch_across(tag, seed, fetch) else {
        return;
    };
    let got = if local == "relay" || remote == "relay" {
        Pair::Relayed
    } else {
        Pair::Direct
    };
    assert_eq!(got, want, "{why}, yet {local} -> {remote} was selected");
}

#[test]
fn native_peers_behind_two_symmetric_nats_meet_through_turn() {
    meets(
        "e",
        ("home3", "192.168.3.2:0"),
        ("home4", "192.168.4.2:0"),
        Pair::Relayed,
        "no direct path exists between two symmetric NATs",
    );
}

#[test]
fn a_fetcher_behind_a_symmetric_nat_meets_a_seeder_behind_a_port_keeping_one_through_turn() {
    meets(
        "f",
        ("home1", "192.168.1.2:0"),
        ("home3", "192.168.3.2:0"),
        Pair::Relayed,
        "the symmetric NAT drops the seeder's checks",
    );
}

#[test]
fn a_fetcher_behind_a_symmetric_nat_reaches_a_public_seeder_directly() {
    meets(
        "g",
        ("pub", "198.51.100.10:0"),
        ("home3", "192.168.3.2:0"),
        Pair::Direct,
        "a direct path works here",
    );
}

/// The first line of `p` holding `text`, within 15 s.
fn wait_for(p: &Running, text: &str, what: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match p.lines.recv_timeout(left) {
            Ok(line) if line.contains(text) => return line,
            Ok(_) => {}
            Err(_) => panic!("{what} did not print {text:?} in time"),
        }
    }
}
