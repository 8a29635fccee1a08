//! Shared by the CLI's integration tests: running the real `ppspp` binary, bounded in time,
//! and making test content.
#![allow(dead_code)]

pub mod presentation;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process killed when the test ends, however it ends; its stdout arrives as lines.
pub struct Running {
    pub child: Child,
    pub lines: mpsc::Receiver<String>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    pub fn next_line(&self, within: Duration) -> String {
        self.lines
            .recv_timeout(within)
            .expect("the process printed nothing in time")
    }

    /// Lines printed so far and until `within` passes without a new one.
    pub fn lines_until_quiet(&self, within: Duration) -> Vec<String> {
        std::iter::from_fn(|| self.lines.recv_timeout(within).ok()).collect()
    }
}

pub fn ppspp() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ppspp"))
}

/// Starts `ppspp ARGS` in the background, reading its stdout line by line.
pub fn spawn(args: &[&str]) -> Running {
    let mut cmd = ppspp();
    cmd.args(args);
    spawn_command(cmd)
}

/// Starts a prepared `ppspp` command (arguments, environment) like [`spawn`].
pub fn spawn_command(mut cmd: Command) -> Running {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ppspp");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Running { child, lines }
}

/// Waits for `child` to exit within `limit`, killing it (and failing with its stderr)
/// otherwise.
pub fn finish(mut child: Child, limit: Duration, what: &str) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "{what} did not finish within {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Runs `ppspp ARGS` to completion within `limit`.
pub fn run(args: &[&str], limit: Duration) -> Output {
    let child = ppspp()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ppspp");
    finish(child, limit, &format!("ppspp {args:?}"))
}

/// `ppspp fetch URI -o OUT` succeeds within a minute and writes exactly `data`.
pub fn fetch_expect(uri: &str, out: &std::path::Path, data: &[u8]) {
    let o = run(
        &["fetch", uri, "-o", out.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(out).unwrap(), data);
}

/// `ppspp fetch URI -o OUT` fails within `limit`; returns what it said on stderr.
pub fn fetch_fails(uri: &str, out: &std::path::Path, extra: &[&str], limit: Duration) -> String {
    let mut args = vec!["fetch", uri, "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = run(&args, limit);
    assert!(!o.status.success(), "ppspp {args:?} succeeded");
    stderr(&o)
}

/// A fresh directory for one test (per process, so parallel test binaries do not collide).
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ppspp-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `len` pseudo-random bytes (xorshift), different for each `seed`.
pub fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The names in `dir`, sorted: what a test left behind, temporary files included.
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Starts `ppspp seed FILE --udp 127.0.0.1:0 EXTRA…` and returns it with the URI it prints.
pub fn seed(file: &std::path::Path, extra: &[&str]) -> (Running, String) {
    let mut args = vec!["seed", file.to_str().unwrap(), "--udp", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let seeder = spawn(&args);
    let uri = seeder.next_line(Duration::from_secs(30));
    assert!(uri.starts_with("ppspp://"), "first line is the URI: {uri}");
    assert!(uri.contains("udp=127.0.0.1:"), "{uri}");
    (seeder, uri)
}

/// The seeder's UDP address, from its URI.
pub fn udp_of(uri: &str) -> String {
    let at = uri.find("udp=").expect("udp= in the URI") + 4;
    uri[at..].split('&').next().unwrap().to_string()
}

/// The root hash in hex, from a URI.
pub fn root_of(uri: &str) -> String {
    uri["ppspp://".len()..]
        .split('?')
        .next()
        .unwrap()
        .to_string()
}
