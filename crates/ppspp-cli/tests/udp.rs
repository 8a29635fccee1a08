//! `ppspp seed` and `ppspp fetch` over UDP on loopback, as a user runs them: real
//! processes, real sockets, every wait bounded.

mod common;

use common::{
    Running, content, fetch_fails, files_in, finish, ppspp, root_of, run, seed, spawn, stderr,
    temp_dir, udp_of,
};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Reads `proc`'s `--stats-json` lines until one satisfies `done`, within `limit` (a wait
/// on what the process reports, not a sleep); returns every line read.
fn stats_until(
    proc: &Running,
    limit: Duration,
    what: &str,
    mut done: impl FnMut(&serde_json::Value) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + limit;
    let mut lines = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match proc.lines.recv_timeout(left) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("{what}: not within {limit:?}; stats lines so far: {lines:#?}")
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("{what}: the process ended first; its stats lines: {lines:#?}")
            }
        };
        let stats = serde_json::from_str::<serde_json::Value>(&line).ok();
        lines.push(line);
        if stats.as_ref().is_some_and(&mut done) {
            return lines;
        }
    }
}

/// A stats line saying every chunk is verified.
fn complete(stats: &serde_json::Value) -> bool {
    stats["chunks"].as_u64().is_some_and(|n| n > 0) && stats["have"] == stats["chunks"]
}

/// Channels in a stats line that have delivered data.
fn peers_with_data(stats: &serde_json::Value) -> usize {
    stats["channels"].as_array().map_or(0, |cs| {
        cs.iter()
            .filter(|c| c["bytes_down"].as_u64() > Some(0))
            .count()
    })
}

#[test]
fn three_fetchers_get_identical_files() {
    let dir = temp_dir("three");
    let data = content(600 * 1024 + 123, 1);
    let file = dir.join("video.webm");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    let outputs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("out{i}.webm"))).collect();
    let fetchers: Vec<_> = outputs
        .iter()
        .map(|o| {
            ppspp()
                .args(["fetch", &uri, "-o", o.to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (f, out) in fetchers.into_iter().zip(&outputs) {
        let o = finish(f, Duration::from_secs(60), "fetch");
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("chunks verified, 0 rejected"),
            "{}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(out).unwrap(), data);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_late_fetcher_uses_an_earlier_one_and_finishes_without_the_seeder() {
    let dir = temp_dir("late");
    let data = content(400 * 1024, 2);
    let file = dir.join("movie.mp4");
    std::fs::write(&file, &data).unwrap();
    let (seeder, uri) = seed(&file, &["--upload-limit", "200000"]);
    // The first fetcher completes, then stays to serve others.
    let first_out = dir.join("first.mp4");
    let first = spawn(&[
        "fetch",
        &uri,
        "-o",
        first_out.to_str().unwrap(),
        "--keep-seeding",
        "--stats-json",
    ]);
    // Complete, and renamed into place (its stats line may come just before the rename).
    stats_until(
        &first,
        Duration::from_secs(60),
        "the first fetch completes",
        |s| complete(s) && first_out.exists(),
    );
    assert_eq!(std::fs::read(&first_out).unwrap(), data);
    // The late fetcher learns of the first one through PEX and fetches from both; the
    // seeder's upload limit makes the other peer worth using.
    let late_out = dir.join("late.mp4");
    // Its download limit keeps it busy past the seeder's death (400 KB at 150 KB/s).
    let late = spawn(&[
        "fetch",
        &uri,
        "-o",
        late_out.to_str().unwrap(),
        "--stats-json",
        "--download-limit",
        "150000",
    ]);
    // The seeder dies mid-transfer: once the late fetcher has some chunks and a channel
    // to the first fetcher as well (learnt through PEX).
    let lines = stats_until(
        &late,
        Duration::from_secs(30),
        "the late fetcher has chunks and both peers",
        |s| s["have"].as_u64() > Some(0) && s["channels"].as_array().map_or(0, Vec::len) == 2,
    );
    let last: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert!(
        !complete(&last),
        "still fetching when it had both peers: {last}"
    );
    drop(seeder); // killed mid-transfer
    assert!(!late_out.exists(), "still fetching when the seeder died");
    let lines = [lines, late.lines_until_quiet(Duration::from_secs(20))].concat();
    assert_eq!(
        std::fs::read(&late_out).unwrap(),
        data,
        "late fetch completed"
    );
    let most_peers_with_data = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| peers_with_data(&v))
        .max()
        .unwrap_or(0);
    assert_eq!(
        most_peers_with_data, 2,
        "fetched from both the seeder and the first fetcher"
    );
    // After the seeder's death the rest came from the first fetcher.
    let seeder_addr = udp_of(&uri);
    let from_first = |stats: &serde_json::Value| {
        stats["channels"].as_array().map_or(0, |cs| {
            cs.iter()
                .filter(|c| c["peer"].as_str() != Some(seeder_addr.as_str()))
                .filter_map(|c| c["bytes_down"].as_u64())
                .sum::<u64>()
        })
    };
    let end: serde_json::Value = lines
        .iter()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap();
    assert!(
        from_first(&end) > from_first(&last),
        "the first fetcher delivered after the seeder died: {} then {} bytes",
        from_first(&last),
        from_first(&end)
    );
    drop(first);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wrong_root_is_a_clear_error_and_leaves_no_file() {
    let dir = temp_dir("wrongroot");
    let file = dir.join("a.bin");
    std::fs::write(&file, content(50 * 1024, 3)).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    // Flip the first hex digit of the root.
    let root_at = "ppspp://".len();
    let first = &uri[root_at..root_at + 1];
    let flipped = if first == "0" { "1" } else { "0" };
    let wrong = format!("{}{}{}", &uri[..root_at], flipped, &uri[root_at + 1..]);
    let out = dir.join("b.bin");
    let o = run(
        &[
            "fetch",
            &wrong,
            "-o",
            out.to_str().unwrap(),
            "--give-up-after",
            "3",
        ],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no peer"), "{}", stderr(&o));
    assert_eq!(files_in(&dir), ["a.bin"], "nothing left behind");
    // Not a URI at all, and a bare root: clear errors too.
    let o = run(
        &["fetch", "http://x", "-o", out.to_str().unwrap()],
        Duration::from_secs(10),
    );
    assert!(
        stderr(&o).contains("not a usable swarm URI"),
        "{}",
        stderr(&o)
    );
    // A bare root needs a peer to ask.
    let o = run(
        &[
            "fetch",
            &uri[root_at..root_at + 40],
            "-o",
            out.to_str().unwrap(),
        ],
        Duration::from_secs(10),
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("with a bare root hash, name a peer with --udp"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bare_root_hash_is_enough() {
    let dir = temp_dir("bareroot");
    // Neither the default chunk size nor a whole number of chunks, and SHA-256.
    let data = content(300 * 1024 + 555, 6);
    let file = dir.join("clip.webm");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &["--chunk-size", "4096", "--hash", "sha256"]);
    let (root, udp) = (root_of(&uri), udp_of(&uri));
    assert_eq!(root.len(), 64, "{uri}");
    let out = dir.join("got.webm");
    let o = run(
        &["fetch", &root, "--udp", &udp, "-o", out.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "content: {} bytes in chunks of 4096 bytes",
            data.len()
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&out).unwrap(), data);

    // Told the chunk size, it asks with that one only.
    let out2 = dir.join("got2.webm");
    let o = run(
        &[
            "fetch",
            &root.to_uppercase(),
            "--udp",
            &udp,
            "--chunk-size",
            "4096",
            "-o",
            out2.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out2).unwrap(), data);

    // A wrong chunk size, and a root nobody seeds: clear errors, no file left behind.
    let bad = dir.join("bad.webm");
    let wrong_root: String = root
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                if c == '0' { '1' } else { '0' }
            } else {
                c
            }
        })
        .collect();
    for (what, args) in [
        ("chunk size", vec!["--chunk-size", "1024"]),
        ("root", vec![]),
    ] {
        let target = if what == "root" { &wrong_root } else { &root };
        let mut argv = vec!["fetch", target.as_str(), "--udp", &udp, "-o"];
        argv.push(bad.to_str().unwrap());
        argv.extend(args);
        let o = run(&argv, Duration::from_secs(60));
        assert!(!o.status.success(), "wrong {what}");
        assert!(
            stderr(&o).contains("no peer could describe the content")
                && stderr(&o).contains("not in this swarm, or its chunk size is none of"),
            "wrong {what}: {}",
            stderr(&o)
        );
        assert!(!bad.exists());
        assert!(
            !files_in(&dir).iter().any(|f| f.ends_with(".part")),
            "no temporary file left"
        );
    }

    // --chunk-size belongs to bare roots; not a hash at all is refused before any work.
    let bad = bad.to_str().unwrap();
    for (args, says) in [
        (
            vec!["fetch", &uri, "--chunk-size", "4096", "-o", bad],
            "--chunk-size is only for a bare root",
        ),
        (
            vec!["fetch", "abc123", "--udp", &udp, "-o", bad],
            "matches no Merkle hash function",
        ),
        (
            vec!["fetch", "not-hex", "--udp", &udp, "-o", bad],
            "nor a root hash in hex",
        ),
    ] {
        let o = run(&args, Duration::from_secs(10));
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupted_seeder_file_is_rejected_and_said_so() {
    let dir = temp_dir("corrupt");
    let data = content(100 * 1024, 4);
    let file = dir.join("c.bin");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    // Change bytes after the seeder hashed the file.
    let mut bad = data.clone();
    for b in &mut bad[10 * 1024..10 * 1024 + 16] {
        *b ^= 0xff;
    }
    std::fs::write(&file, &bad).unwrap();
    let out = dir.join("d.bin");
    let o = run(
        &["fetch", &uri, "-o", out.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert!(
        !o.status.success(),
        "a fetch from a lying seeder cannot succeed"
    );
    let err = stderr(&o);
    assert!(err.contains("rejected chunk 10 from 127.0.0.1:"), "{err}");
    assert!(err.contains("no peer left"), "{err}");
    assert_eq!(files_in(&dir), ["c.bin"], "nothing left behind");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn seed_needs_a_transport() {
    let dir = temp_dir("noflags");
    let file = dir.join("e.bin");
    std::fs::write(&file, b"hello").unwrap();
    let o = run(&["seed", file.to_str().unwrap()], Duration::from_secs(10));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--udp"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// One seeder process serves 100 fetcher processes at once (issue: at least 100
/// concurrent native fetchers on a 2-core machine). More than `max_unchoked` (32) ask at
/// once, so most wait choked for a while: every one must still finish.
/// A seeder with room for two peers and six fetchers at once: the four it has no room for
/// are refused, come back and complete (they used to take the silent seeder for a cheat and
/// ban it).
#[test]
fn fetchers_a_full_seeder_refuses_come_back_and_complete() {
    const FETCHERS: usize = 6;
    let dir = temp_dir("full-seeder");
    let data = content(128 * 1024 + 5, 9);
    let file = dir.join("video.webm");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &["--max-peers", "2"]);
    let outputs: Vec<PathBuf> = (0..FETCHERS)
        .map(|i| dir.join(format!("out{i}.webm")))
        .collect();
    let fetchers: Vec<_> = outputs
        .iter()
        .map(|o| {
            ppspp()
                .args(["fetch", &uri, "-o", o.to_str().unwrap()])
                .args(["--give-up-after", "60"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, (f, out)) in fetchers.into_iter().zip(&outputs).enumerate() {
        let o = finish(f, Duration::from_secs(90), "fetch");
        assert!(o.status.success(), "fetcher {i}: {}", stderr(&o));
        assert_eq!(std::fs::read(out).unwrap(), data, "fetcher {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_seeder_serves_a_hundred_concurrent_fetchers() {
    const FETCHERS: usize = 100;
    let dir = temp_dir("hundred");
    let data = content(256 * 1024 + 17, 7);
    let file = dir.join("video.webm");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    let outputs: Vec<PathBuf> = (0..FETCHERS)
        .map(|i| dir.join(format!("out{i}.webm")))
        .collect();
    let fetchers: Vec<_> = outputs
        .iter()
        .map(|o| {
            ppspp()
                .args([
                    "fetch",
                    &uri,
                    "-o",
                    o.to_str().unwrap(),
                    "--give-up-after",
                    "120",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut failed = Vec::new();
    for (i, (f, out)) in fetchers.into_iter().zip(&outputs).enumerate() {
        let o = finish(f, Duration::from_secs(150), "fetch");
        if !o.status.success() || std::fs::read(out).ok().as_deref() != Some(&data[..]) {
            failed.push(format!("fetcher {i}: {}", stderr(&o)));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {FETCHERS} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A URI whose `len=` is wrong ends the fetch at once with a bad-URI error that says the
/// real length, and leaves no file; the seeder is not blamed.
#[test]
fn a_wrong_length_is_a_bad_uri_not_a_bad_peer() {
    let dir = temp_dir("wronglen");
    let data = content(200 * 1024 + 300, 7);
    let file = dir.join("a.bin");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    let real = format!("len={}", data.len());
    assert!(uri.contains(&real), "{uri}");
    let out = dir.join("b.bin");
    for wrong in [data.len() - 100, data.len() + 5000] {
        let bad = uri.replace(&real, &format!("len={wrong}"));
        let started = Instant::now();
        let err = fetch_fails(&bad, &out, &[], Duration::from_secs(30));
        assert!(
            err.contains("bad URI")
                && err.contains(&format!("len={wrong}) is wrong"))
                && err.contains(&format!("the content is {} bytes", data.len())),
            "len={wrong}: {err}"
        );
        assert!(!err.contains("rejected chunk"), "len={wrong}: {err}");
        assert!(started.elapsed() < Duration::from_secs(10), "len={wrong}");
        assert_eq!(
            files_in(&dir),
            ["a.bin"],
            "len={wrong}: nothing left behind"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
