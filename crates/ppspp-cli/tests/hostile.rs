//! `ppspp seed` and `ppspp fetch` against hostile peers and hostile inputs (spoofed
//! handshakes, peers of no use, impossible lengths, planted symlinks, a full disk, a seeded
//! file that changes, many dead peers), as real processes on loopback, every wait bounded.

mod common;

use common::{
    content, fetch_fails, files_in, finish, ppspp, root_of, run, seed, stderr, temp_dir, udp_of,
};
use ppspp::codec::{
    ChunkAddressing, CodecConfig, ContentIntegrity, DatagramBuilder, Handshake, HandshakeOptions,
    Message, decode_datagram,
};
use std::net::{SocketAddr, UdpSocket};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The URI's root hash as bytes.
fn root_bytes(uri: &str) -> Vec<u8> {
    let hex = root_of(uri);
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn handshake(channel: u32, source_channel: u32, swarm: Option<&[u8]>) -> Vec<u8> {
    let mut b = DatagramBuilder::new(channel, &CodecConfig::default());
    b.push(&Message::Handshake(Handshake {
        source_channel,
        options: HandshakeOptions {
            version: Some(1),
            min_version: Some(1),
            swarm_id: swarm,
            content_integrity: Some(ContentIntegrity::MerkleTree),
            merkle_hash_function: Some(0),
            chunk_addressing: Some(ChunkAddressing::Chunk32),
            ..HandshakeOptions::default()
        },
    }))
    .unwrap();
    b.finish()
}

/// Row 5: handshakes from 2,000 source ports, never followed up, fill no peer slot: an
/// honest fetch right after them succeeds.
#[test]
fn spoofed_handshakes_do_not_lock_out_a_fetch() {
    let dir = temp_dir("spoof");
    let data = content(200 * 1024, 11);
    let file = dir.join("v.bin");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    let to: SocketAddr = udp_of(&uri).parse().unwrap();
    let root = root_bytes(&uri);
    for i in 0..2000u32 {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.send_to(&handshake(0, 0x1000 + i, Some(&root)), to)
            .unwrap();
    }
    let out = dir.join("out.bin");
    let o = run(
        &["fetch", &uri, "-o", out.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), data);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Row 7: a peer that answers the handshake and keeps the channel alive but never offers
/// a chunk. `fetch` gives up after --give-up-after without progress, and says why.
#[test]
fn a_peer_that_offers_nothing_does_not_hang_fetch() {
    let dir = temp_dir("empty-peer");
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let addr = peer.local_addr().unwrap();
    let root = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";
    let uri = format!("ppspp://{root}?len=26121&udp={addr}");
    let out = dir.join("out.jpg");
    let child = ppspp()
        .args([
            "fetch",
            &uri,
            "-o",
            out.to_str().unwrap(),
            "--give-up-after",
            "3",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The silent peer: answers handshakes, then sends keep-alives, never a HAVE.
    let stop = Instant::now() + Duration::from_secs(40);
    let mut fetcher: Option<(SocketAddr, u32)> = None;
    let mut buf = [0u8; 2048];
    let mut child = Some(child);
    let mut last_keepalive = Instant::now();
    let output = loop {
        if let Some(c) = child.as_mut()
            && c.try_wait().unwrap().is_some()
        {
            break finish(child.take().unwrap(), Duration::from_secs(1), "fetch");
        }
        assert!(Instant::now() < stop, "fetch still running after 40 s");
        if let Ok((n, from)) = peer.recv_from(&mut buf)
            && let Ok(dg) = decode_datagram(&buf[..n], &CodecConfig::default())
            && dg.channel == 0
            && let Some(Ok(Message::Handshake(h))) = dg.messages().next()
        {
            fetcher = Some((from, h.source_channel));
            peer.send_to(&handshake(h.source_channel, 0x4242, None), from)
                .unwrap();
        }
        if let Some((to, channel)) = fetcher
            && last_keepalive.elapsed() >= Duration::from_secs(1)
        {
            peer.send_to(&channel.to_be_bytes(), to).unwrap();
            last_keepalive = Instant::now();
        }
    };
    assert!(fetcher.is_some(), "the fetcher never reached the peer");
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(err.contains("no chunk could be verified for 3 s"), "{err}");
    // It names the peer it was still connected to and what that peer had done.
    assert!(
        err.contains(&format!(
            "from the 1 connected peer(s) ({addr}: 0 bytes from it"
        )),
        "{err}"
    );
    assert!(
        files_in(&dir).is_empty(),
        "left behind: {:?}",
        files_in(&dir)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Row 9: a length the machine cannot hold is refused before anything is allocated or
/// created, with a clear message.
#[test]
fn impossible_lengths_are_refused_up_front() {
    let dir = temp_dir("huge");
    let root = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";
    for (len, says) in [
        ("1099511627776", "are free in"),
        ("17592186044416", "are free in"),
        ("9223372036854775808", "larger than any file can be"),
        ("18446744073709551615", "larger than any file can be"),
    ] {
        let uri = format!("ppspp://{root}?len={len}&cs=1&udp=127.0.0.1:9");
        let out = dir.join("big.bin");
        let started = Instant::now();
        let o = run(
            &["fetch", &uri, "-o", out.to_str().unwrap()],
            Duration::from_secs(20),
        );
        assert!(!o.status.success(), "len={len}");
        let err = stderr(&o);
        assert!(
            err.starts_with("ppspp: error: cannot write") && err.contains(says),
            "len={len}: {err}"
        );
        assert!(!err.contains("panicked") && !err.contains("memory allocation"));
        assert!(started.elapsed() < Duration::from_secs(10), "len={len}");
        assert!(files_in(&dir).is_empty(), "len={len}: {:?}", files_in(&dir));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A chunk size the engine refuses (a chunk and its hashes must fit a datagram) fails at
/// once and leaves no reserved `.part` behind: 60 MB of one filled a small tmpfs.
#[test]
fn a_fetch_that_cannot_start_leaves_no_part_file() {
    let dir = temp_dir("cannot-start");
    let root = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";
    let uri = format!("ppspp://{root}?len=60000000&cs=65536&udp=127.0.0.1:9");
    let err = fetch_fails(&uri, &dir.join("v.bin"), &[], Duration::from_secs(20));
    assert!(err.contains("cannot start"), "{err}");
    assert_eq!(files_in(&dir), Vec::<String>::new(), "left behind");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fetch --live -o PATH` with a symlink planted at PATH: the file it points to is not
/// truncated, even when nothing is ever recorded, and no `.part` stays.
#[test]
fn a_live_recording_never_writes_through_a_planted_symlink() {
    let dir = temp_dir("live-symlink");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    let link = dir.join("recording.webm");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let key =
        ppspp::live::LiveSigningKey::from_secret(ppspp::live::LiveAlgorithm::Ed25519, &[7u8; 32])
            .unwrap();
    // A WebM init segment (EBML header magic), and a peer that never answers.
    let uri = format!(
        "ppspp://live/{}?udp=127.0.0.1:9&init=1a45dfa3",
        ppspp::hex::encode(key.public_key().swarm_id())
    );
    let o = run(
        &[
            "fetch",
            "--live",
            &uri,
            "-o",
            link.to_str().unwrap(),
            "--give-up-after",
            "2",
        ],
        Duration::from_secs(30),
    );
    assert!(!o.status.success());
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"keep me",
        "{}",
        stderr(&o)
    );
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(files_in(&dir), ["recording.webm", "victim.txt"]);
    // A directory as the output is refused before anything is recorded.
    let started = Instant::now();
    let err = fetch_fails(
        &uri,
        &dir,
        &["--live", "--give-up-after", "20"],
        Duration::from_secs(30),
    );
    assert!(err.contains("is a directory"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Row 10: `-o` naming a directory fails before the download, not after it.
#[test]
fn an_output_directory_is_refused_before_the_download() {
    let dir = temp_dir("outdir");
    let file = dir.join("v.bin");
    std::fs::write(&file, content(300 * 1024, 12)).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    let target = dir.join("here");
    std::fs::create_dir(&target).unwrap();
    let o = run(
        &["fetch", &uri, "-o", target.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("is a directory"), "{err}");
    assert!(!err.contains("fetched"), "{err}");
    assert_eq!(files_in(&dir), ["here", "v.bin"]);
    assert!(files_in(&target).is_empty());
    let missing = dir.join("no/such/dir/out.bin");
    let o = run(
        &["fetch", &uri, "-o", missing.to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Row 11: a symlink planted where the temporary file used to go (`OUT.part`) is never
/// written through; the download still lands in OUT.
#[cfg(unix)]
#[test]
fn a_planted_symlink_is_not_written_through() {
    let dir = temp_dir("symlink");
    let data = content(100 * 1024, 13);
    let file = dir.join("v.bin");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    let victim = dir.join("precious.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    let out = dir.join("out.bin");
    std::os::unix::fs::symlink(&victim, dir.join("out.bin.part")).unwrap();
    let o = run(
        &["fetch", &uri, "-o", out.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    assert_eq!(std::fs::read(&out).unwrap(), data);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Row 12: a disk too small for the content is reported as that, at once, instead of
/// blaming the seeder after 30 s. The fetch runs in a mount namespace of its own with a
/// 256 KiB tmpfs as its output directory.
#[test]
fn a_full_disk_is_reported_as_such() {
    let dir = temp_dir("diskfull");
    let data = content(1024 * 1024, 14);
    let file = dir.join("v.bin");
    std::fs::write(&file, &data).unwrap();
    let (_seeder, uri) = seed(&file, &[]);
    let small = dir.join("small");
    std::fs::create_dir(&small).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=256k ppspp-test {small} && exec {bin} fetch '{uri}' -o {small}/out.bin",
        small = small.display(),
        bin = env!("CARGO_BIN_EXE_ppspp"),
    );
    let started = Instant::now();
    let child = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare (util-linux) runs the fetch in its own mount namespace");
    let o = finish(child, Duration::from_secs(30), "fetch onto a small disk");
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("cannot write") && err.contains("are free in"),
        "{err}"
    );
    assert!(!err.contains("stopped delivering"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(15));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A seeded file that shrinks or is rewritten while seeded is no longer the swarm's
/// content: the seeder stops with a message saying so instead of announcing chunks it
/// cannot deliver (every fetcher stalled) or serving new bytes under the old hashes (every
/// fetcher banned it).
#[test]
fn a_seeded_file_that_changes_stops_the_seeder_with_a_reason() {
    type Change = fn(&std::path::Path);
    let cases: [(&str, Change); 2] = [
        ("truncated", |p: &std::path::Path| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .unwrap()
                .set_len(100 * 1024)
                .unwrap()
        }),
        ("rewritten", |p: &std::path::Path| {
            std::fs::write(p, content(400 * 1024, 99)).unwrap()
        }),
    ];
    for (case, change) in cases {
        let dir = temp_dir(&format!("changed-{case}"));
        let file = dir.join("v.bin");
        std::fs::write(&file, content(400 * 1024, 21)).unwrap();
        let out = std::fs::File::create(dir.join("seed.out")).unwrap();
        let err = std::fs::File::create(dir.join("seed.err")).unwrap();
        let seeder = ppspp()
            .args(["seed", file.to_str().unwrap(), "--udp", "127.0.0.1:0"])
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let uri = loop {
            let text = std::fs::read_to_string(dir.join("seed.out")).unwrap();
            if let Some(line) = text.lines().next().filter(|l| l.starts_with("ppspp://")) {
                break line.to_owned();
            }
            assert!(Instant::now() < deadline, "{case}: no URI");
            std::thread::sleep(Duration::from_millis(50));
        };
        change(&file);
        // Past the seeder's next look at the file.
        std::thread::sleep(Duration::from_millis(300));
        let fetched = run(
            &[
                "fetch",
                &uri,
                "-o",
                dir.join("copy.bin").to_str().unwrap(),
                "--give-up-after",
                "5",
            ],
            Duration::from_secs(30),
        );
        let said = stderr(&fetched);
        assert!(!fetched.status.success(), "{case}: fetched a changed file");
        assert!(
            !said.contains("rejected chunk"),
            "{case}: a bad chunk was served: {said}"
        );
        let o = finish(seeder, Duration::from_secs(20), "the seeder");
        let err = std::fs::read_to_string(dir.join("seed.err")).unwrap();
        assert!(!o.status.success(), "{case}: {err}");
        assert!(
            err.contains("stopped seeding") && err.contains("changed while seeded"),
            "{case}: {err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A URI naming many peers that never answer: the error names a few and counts the rest
/// (ten thousand once made a 260 KB line).
#[test]
fn many_dead_peers_make_a_short_error() {
    let dir = temp_dir("dead-peers");
    let root = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";
    let peers: String = (0..200)
        .map(|i| format!("&udp=127.0.0.1:{}", 20_000 + i))
        .collect();
    let uri = format!("ppspp://{root}?len=26121{peers}");
    let err = fetch_fails(
        &uri,
        &dir.join("v.bin"),
        &["--give-up-after", "2"],
        Duration::from_secs(30),
    );
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("and 192 more"), "{last}");
    assert!(last.len() < 1_000, "{} bytes: {last}", last.len());
    let _ = std::fs::remove_dir_all(&dir);
}
