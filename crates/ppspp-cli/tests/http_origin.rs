//! `ppspp fetch` of a URI with an HTTP origin (`http=`, `tree=`): a small web server in the
//! test answers Range requests (or misbehaves), `ppspp root --tree --http` makes the tree
//! file and the URI, and the real binary fetches.

mod common;

use common::{content, fetch_expect, fetch_fails, files_in, run, seed, stderr, temp_dir, udp_of};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the server answers.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Ranges,
    /// Ignores Range: the whole file with 200.
    WholeFile,
}

/// A web server on a free loopback port serving `files` (path → bytes) until the test
/// process ends; returns its base URL and the count of content bytes it sent.
fn serve(files: Arc<Mutex<HashMap<String, Vec<u8>>>>, mode: Mode) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sent = Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let files = files.clone();
            let sent = counter.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                // Keep-alive: requests one after another on the connection.
                loop {
                    let mut request = String::new();
                    if reader.read_line(&mut request).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let mut range = None;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("range: bytes=") {
                            let (a, b) = v.split_once('-').unwrap();
                            range =
                                Some((a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()));
                        }
                    }
                    let file = files.lock().unwrap().get(&path).cloned();
                    let (status, body) = match (file, range, mode) {
                        (None, _, _) => ("404 Not Found", b"not found".to_vec()),
                        (Some(f), Some((a, b)), Mode::Ranges) if a < f.len() => {
                            ("206 Partial Content", f[a..(b + 1).min(f.len())].to_vec())
                        }
                        (Some(f), _, _) => ("200 OK", f),
                    };
                    if path.ends_with(".bin") {
                        sent.fetch_add(body.len() as u64, Ordering::Relaxed);
                    }
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\r\n",
                        body.len()
                    );
                    if stream.write_all(head.as_bytes()).is_err()
                        || stream.write_all(&body).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (url, sent)
}

/// `ppspp root FILE --tree … --http URL/NAME` with extra args: the URI it prints.
fn root_uri(file: &std::path::Path, tree: &std::path::Path, http: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "root",
        file.to_str().unwrap(),
        "--hash",
        "sha256",
        "--chunk-size",
        "4096",
        "--tree",
        tree.to_str().unwrap(),
        "--http",
        http,
    ];
    args.extend_from_slice(extra);
    let o = run(&args, Duration::from_secs(30));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.lines().nth(1).expect("a URI line").to_string()
}

/// The content and tree file on a server (the content replaced by `served` if given).
fn publish(
    name: &str,
    data: &[u8],
    served: Option<Vec<u8>>,
    mode: Mode,
) -> (std::path::PathBuf, String, Arc<AtomicU64>) {
    let dir = temp_dir(name);
    let file = dir.join("v.bin");
    std::fs::write(&file, data).unwrap();
    let files = Arc::new(Mutex::new(HashMap::new()));
    let (url, sent) = serve(files.clone(), mode);
    let tree = dir.join("v.tree");
    let uri = root_uri(&file, &tree, &format!("{url}/v.bin"), &[]);
    let mut f = files.lock().unwrap();
    f.insert(
        "/v.bin".to_string(),
        served.unwrap_or_else(|| data.to_vec()),
    );
    f.insert("/v.tree".to_string(), std::fs::read(&tree).unwrap());
    drop(f);
    (dir, uri, sent)
}

#[test]
fn http_only_fetch_verifies_and_writes_the_file_fetching_each_byte_once() {
    let data = content(1_000_000 + 77, 21);
    let (dir, uri, sent) = publish("http-only", &data, None, Mode::Ranges);
    assert!(
        uri.contains("&http=http://127.0.0.1:") && uri.contains("/v.tree"),
        "{uri}"
    );
    let out = dir.join("copy.bin");
    fetch_expect(&uri, &out, &data);
    assert_eq!(
        sent.load(Ordering::Relaxed),
        data.len() as u64,
        "each byte once"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupt_origin_chunk_is_refused_and_comes_from_a_seeder() {
    let data = content(300_000, 22);
    let mut bad = data.clone();
    bad[5 * 4096 + 9] ^= 0x10;
    let (dir, uri, _) = publish("corrupt-origin", &data, Some(bad.clone()), Mode::Ranges);
    // Alone, the fetch cannot complete: it says why at once (not after --give-up-after's
    // 30 s) and leaves nothing.
    let out = dir.join("copy.bin");
    let started = std::time::Instant::now();
    let err = fetch_fails(&uri, &out, &[], Duration::from_secs(60));
    assert!(
        err.contains("chunk 5 from the HTTP origin failed verification")
            && err.contains("no peer can provide it"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "failed after {:?}",
        started.elapsed()
    );
    assert_eq!(files_in(&dir), ["v.bin", "v.tree"], "nothing left behind");
    // With a seeder of the true file, it completes: chunk 5 from the seeder.
    let (_seeder, seeded) = seed(
        &dir.join("v.bin"),
        &["--hash", "sha256", "--chunk-size", "4096"],
    );
    let with_peer = format!("{uri}&udp={}", udp_of(&seeded));
    fetch_expect(&with_peer, &out, &data);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_without_range_support_is_a_clear_error() {
    let data = content(100_000, 23);
    let (dir, uri, _) = publish("no-range", &data, None, Mode::WholeFile);
    let out = dir.join("copy.bin");
    let err = fetch_fails(&uri, &out, &[], Duration::from_secs(30));
    assert!(err.contains("does not support Range requests"), "{err}");
    assert_eq!(files_in(&dir), ["v.bin", "v.tree"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_relative_origin_url_is_refused_before_anything_is_fetched() {
    let dir = temp_dir("relative-origin");
    let root = "12d0e382fc4a5a8bfca5c693355872fa69d30304ea01fb1c973dc8bad95ce177";
    let uri = format!("ppspp://{root}?len=26121&hash=sha256&http=v.bin&tree=v.tree");
    let out = dir.join("copy.bin");
    let err = fetch_fails(&uri, &out, &[], Duration::from_secs(30));
    assert!(
        err.contains("must be an absolute http:// or https:// URL"),
        "{err}"
    );
    assert!(files_in(&dir).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An HTTP-only fetch whose server cannot be reached ends with that reason in its last
/// line, not "no peer left ()".
#[test]
fn an_unreachable_origin_is_named_in_the_last_line() {
    let dir = temp_dir("unreachable-origin");
    let root = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";
    let uri = format!(
        "ppspp://{root}?len=26121&http=http://127.0.0.1:9/v.bin&tree=http://127.0.0.1:9/v.tree"
    );
    let out = dir.join("copy.bin");
    let err = fetch_fails(
        &uri,
        &out,
        &["--give-up-after", "3"],
        Duration::from_secs(30),
    );
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("from the HTTP origin") && last.contains("could not be reached"),
        "{last}"
    );
    assert!(!last.contains("no peer left"), "{last}");
    assert!(files_in(&dir).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
