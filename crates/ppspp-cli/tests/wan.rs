//! The emulated internet (`scripts/wan.sh`): a seeder on the "public" segment and fetchers
//! in homes behind NAT routers, one keeping ports (endpoint-independent mapping) and one
//! symmetric (random ports per destination). Plain UDP needs no STUN there, since the
//! fetcher opens the channel; this proves the namespaces, routes and NATs that the NAT
//! traversal tests build on. Where namespaces cannot be made (not root), the test says it
//! was skipped and why; `PPSPP_REQUIRE_NETNS=1` makes that a failure.

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
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--quiet", "-p", "ppspp-linkem"])
        .status()
        .expect("run cargo build");
    assert!(status.success(), "building ppspp-linkem failed");
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    profile_dir.join("ppspp-linkem")
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

    /// `ppspp ARGS` inside node `node` (pub, home1, home2, home3).
    fn ppspp(&self, node: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &format!("{}-{node}", self.name)])
            .arg(env!("CARGO_BIN_EXE_ppspp"))
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
