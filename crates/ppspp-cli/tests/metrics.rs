//! `ppspp seed --metrics`: what a Prometheus scrape of a seeder shows while fetchers come,
//! some of them refused for want of room.

mod common;

use common::{content, finish, ppspp, root_of, seed, stderr, temp_dir};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A port free now on loopback (the seeder binds it right after).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `GET path` on `127.0.0.1:port`: (status code, body).
fn get(port: u16, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to --metrics");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the answer");
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_owned())
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn a_scrape_shows_bytes_sent_peers_and_refusals_per_swarm() {
    const FETCHERS: usize = 4;
    let dir = temp_dir("metrics");
    let data = content(256 * 1024 + 3, 21);
    let file = dir.join("video.webm");
    std::fs::write(&file, &data).unwrap();
    let port = free_port();
    let (_seeder, uri) = seed(
        &file,
        &[
            "--max-peers",
            "1",
            "--metrics",
            &format!("127.0.0.1:{port}"),
        ],
    );
    let labels = format!("{{swarm=\"{}\",name=\"video.webm\"}}", root_of(&uri));
    let bytes_sent = format!("ppspp_seed_bytes_sent_total{labels}");
    // Listed before any peer came.
    let (status, text) = get(port, "/metrics");
    assert_eq!(status, 200, "{text}");
    assert_eq!(sample(&text, &bytes_sent), Some(0.0), "{text}");
    assert_eq!(get(port, "/").0, 404);

    let fetchers: Vec<_> = (0..FETCHERS)
        .map(|i| {
            let out = dir.join(format!("out{i}.webm"));
            ppspp()
                .args(["fetch", &uri, "-o", out.to_str().unwrap()])
                .args(["--give-up-after", "60"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, f) in fetchers.into_iter().enumerate() {
        let o = finish(f, Duration::from_secs(90), "fetch");
        assert!(o.status.success(), "fetcher {i}: {}", stderr(&o));
    }
    // The figures are copied in once a second: wait (bounded) for the last of them.
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let (_, text) = get(port, "/metrics");
        let sent = sample(&text, &bytes_sent).unwrap_or(0.0);
        if sent >= (FETCHERS * data.len()) as f64 || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let at = |name: &str| sample(&text, &format!("{name}{labels}"));
    assert!(
        at("ppspp_seed_bytes_sent_total").unwrap() >= (FETCHERS * data.len()) as f64,
        "every fetcher's bytes came from the seeder:\n{text}"
    );
    assert!(
        at("ppspp_seed_handshakes_refused_total").unwrap() >= 1.0,
        "one slot for {FETCHERS} fetchers at once:\n{text}"
    );
    assert!(at("ppspp_seed_datagrams_received_total").unwrap() > 0.0);
    assert!(at("ppspp_seed_chunks_resent_total").is_some());
    assert!(at("ppspp_seed_peers").unwrap() <= 1.0, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_metrics_address_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = temp_dir("metrics-in-use");
    let file = dir.join("a.bin");
    std::fs::write(&file, content(4096, 3)).unwrap();
    let o = finish(
        ppspp()
            .args(["seed", file.to_str().unwrap(), "--udp", "127.0.0.1:0"])
            .args(["--metrics", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(30),
        "seed",
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("--metrics") && err.contains(&addr), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
