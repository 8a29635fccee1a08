//! `ppspp root` as a user runs it: the real binary, real files, exit codes and messages.

use std::path::PathBuf;
use std::process::{Command, Output};

fn m74() -> PathBuf {
    let dir = std::env::var_os("PPSPP_VECTORS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors"));
    let file = dir.join("m74.jpg");
    assert!(file.is_file(), "missing vector {}", file.display());
    file
}

fn ppspp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ppspp"))
        .args(args)
        .output()
        .expect("run ppspp")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn m74_sha1_root_is_the_recorded_swarm_id() {
    let file = m74();
    let out = ppspp(&["root", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let mut tokens = text.split_whitespace();
    assert_eq!(
        tokens.next(),
        Some("c89800bfc82ed01ed6e3bfd5408c51274491f7d4")
    );
    assert_eq!(tokens.next(), Some("26"));
}

#[test]
fn m74_sha256_root() {
    let file = m74();
    let out = ppspp(&["root", file.to_str().unwrap(), "--hash", "sha256"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .starts_with("12d0e382fc4a5a8bfca5c693355872fa69d30304ea01fb1c973dc8bad95ce177 26 ")
    );
}

#[test]
fn chunk_size_changes_the_chunk_count() {
    let file = m74();
    let out = ppspp(&["root", file.to_str().unwrap(), "--chunk-size", "4096"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // 26121 bytes in 4 KiB chunks is 7 chunks, and a different root.
    let text = stdout(&out);
    let tokens: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(tokens[1], "7");
    assert_ne!(tokens[0], "c89800bfc82ed01ed6e3bfd5408c51274491f7d4");
    assert_eq!(tokens[0].len(), 40);
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = ppspp(&["root", "/nonexistent/video.webm"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("cannot open /nonexistent/video.webm"), "{err}");
}

#[test]
fn directory_is_a_clear_error() {
    let out = ppspp(&["root", env!("CARGO_MANIFEST_DIR")]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("directory"), "{}", stderr(&out));
}

#[test]
fn bad_flags_are_rejected() {
    let file = m74();
    let f = file.to_str().unwrap();
    for args in [
        vec!["root", f, "--hash", "md5"],
        vec!["root", f, "--chunk-size", "0"],
        vec!["root", f, "--chunk-size", "lots"],
        vec!["root", f, "--chunk-size", "99999999"],
        vec!["root", f, "--bogus"],
        vec!["root"],
        vec!["frobnicate"],
    ] {
        let out = ppspp(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(!stderr(&out).is_empty(), "{args:?} said nothing");
    }
}

/// Runs `ppspp ARGS` and waits at most 10 s for it: a command that blocks fails the test
/// instead of hanging it.
fn ppspp_bounded(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_ppspp"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run ppspp");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok(out) => out.expect("wait for ppspp"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("ppspp {args:?} still running after 10 s");
        }
    }
}

#[test]
fn devices_and_fifos_are_refused_at_once() {
    let dir = std::env::temp_dir().join(format!("ppspp-root-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let fifo = fifo.to_str().unwrap();
    // A FIFO with no writer made `root` wait forever; /dev/zero made `seed` read forever.
    for args in [
        vec!["root", fifo],
        vec!["root", "/dev/zero"],
        vec!["seed", fifo, "--udp", "127.0.0.1:0"],
        vec!["seed", "/dev/zero", "--udp", "127.0.0.1:0"],
    ] {
        let out = ppspp_bounded(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(err.contains("is not a regular file"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_reader_that_stops_early_is_no_error() {
    // `ppspp root FILE | head -1` with `head` gone before the first line: the pipe's read
    // end is closed before the command starts, so every write meets a broken pipe.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_ppspp"))
        .args(["root", m74().to_str().unwrap()])
        .stdout(writer)
        .output()
        .expect("run ppspp");
    let err = stderr(&out);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn empty_file_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("ppspp-root-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    let out = ppspp(&["root", empty.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cannot hash"), "{}", stderr(&out));
}

#[test]
fn tree_file_verifies_every_chunk_of_the_file() {
    use ppspp::merkle::HashAlgorithm;
    use ppspp::merkle::tree_file::TreeFileHeader;
    let file = m74();
    let dir = std::env::temp_dir().join(format!("ppspp-tree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out_path = dir.join("m74.tree");
    let out = ppspp(&[
        "root",
        file.to_str().unwrap(),
        "--hash",
        "sha256",
        "--chunk-size",
        "1024",
        "--tree",
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("wrote the hash tree to"),
        "{}",
        stderr(&out)
    );
    let root =
        ppspp::merkle::Hash::from_hex(stdout(&out).split_whitespace().next().unwrap()).unwrap();
    let tree = std::fs::read(&out_path).unwrap();
    let content = std::fs::read(&file).unwrap();
    let alg = HashAlgorithm::Sha256;
    let header = TreeFileHeader::decode(
        &tree[..TreeFileHeader::len_for(alg)],
        alg,
        &root,
        1024,
        content.len() as u64,
    )
    .unwrap();
    assert_eq!(header.file_len(), tree.len() as u64);
    assert_eq!(header.content_len(), content.len() as u64);
    let mut v = header.verifying_tree().unwrap();
    for g in 0..header.group_count() {
        let r = header.record_range(g).unwrap();
        header
            .add_record(&mut v, g, &tree[r.start as usize..r.end as usize])
            .unwrap();
    }
    for c in 0..header.chunk_count() {
        let r = header.content_range(c..c + 1);
        v.verify_chunk(c, &content[r.start as usize..r.end as usize], &[])
            .unwrap();
    }
    assert!(!dir.join("m74.tree.part").exists());

    // Where it cannot be written: an error naming the file, and no leftovers.
    let bad = dir.join("no-such-dir").join("x.tree");
    let out = ppspp(&[
        "root",
        file.to_str().unwrap(),
        "--tree",
        bad.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cannot write"), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_swarm_uri_names_the_http_origin_and_signaling() {
    let file = m74();
    let dir = std::env::temp_dir().join(format!("ppspp-root-uri-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tree = dir.join("m74.tree");
    let out = ppspp(&[
        "root",
        file.to_str().unwrap(),
        "--hash",
        "sha256",
        "--tree",
        tree.to_str().unwrap(),
        "--http",
        "https://cdn.example/v/m74.jpg?token=a",
        "--signal",
        "wss://sig.example/ws",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let uri = text.lines().nth(1).expect("a URI line");
    assert_eq!(
        uri,
        "ppspp://12d0e382fc4a5a8bfca5c693355872fa69d30304ea01fb1c973dc8bad95ce177?len=26121\
         &hash=sha256&signal=wss://sig.example/ws&name=m74.jpg\
         &http=https://cdn.example/v/m74.jpg%3Ftoken%3Da&tree=https://cdn.example/v/m74.tree"
    );
    // Without --tree, --http is refused: the URI would name a tree file nobody wrote.
    let out = ppspp(&[
        "root",
        file.to_str().unwrap(),
        "--http",
        "https://cdn.example/v",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--tree"), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).unwrap();
}
