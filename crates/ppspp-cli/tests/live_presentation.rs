//! `ppspp hls live` and `ppspp dash live` following a packager's live output. The packager
//! is played by the test: the HLS fixture's fMP4 segments (`tests/fixtures/hls/fmp4-segments`)
//! are written one at a time, each media playlist's (or the MPD's) window sliding over
//! them, then the lists end. The manifest the source keeps is then checked as a page
//! checks it: each rendition's record under the stream key, its initialisation segment by
//! hash, and every segment, as the web server serves it, against its signed part and
//! munros, through a viewer engine.

mod common;

use common::presentation::TempDir;
use common::{Running, run, spawn, stderr};
use ppspp::engine::{Engine, EngineConfig, LivePartError};
use ppspp::live::LivePublicKey;
use ppspp::store::SparseStore;
use ppspp::time::Time;
use ppspp_cli::presentation::live_manifest::{LiveManifest, LiveRenditionEntry};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hls/fmp4-segments")
}

/// Each rendition's playlist, its initialisation segment and its segments, in order.
const RENDITIONS: [(&str, &str, &[&str]); 3] = [
    ("r0.m3u8", "init_0.mp4", &["r0_000.m4s", "r0_001.m4s"]),
    ("r1.m3u8", "init_1.mp4", &["r1_000.m4s", "r1_001.m4s"]),
    (
        "r2.m3u8",
        "init_2.mp4",
        &["r2_000.m4s", "r2_001.m4s", "r2_002.m4s"],
    ),
];

/// Writes `playlist` as a live packager does after its `upto`th segment: a window of the
/// last two, and the end tag once the stream is over.
fn write_playlist(dir: &Path, r: &(&str, &str, &[&str]), upto: usize, ended: bool) {
    let (playlist, init, segments) = r;
    let upto = upto.min(segments.len());
    let first = upto.saturating_sub(2);
    for s in &segments[..upto] {
        if !dir.join(s).exists() {
            std::fs::copy(fixture().join(s), dir.join(s)).unwrap();
        }
    }
    let mut text = format!(
        "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:{first}\n#EXT-X-MAP:URI=\"{init}\"\n"
    );
    for s in &segments[first..upto] {
        text.push_str(&format!("#EXTINF:1.0,\n{s}\n"));
    }
    if ended {
        text.push_str("#EXT-X-ENDLIST\n");
    }
    let tmp = dir.join(format!("{playlist}.tmp"));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(tmp, dir.join(playlist)).unwrap();
}

fn read_manifest(path: &Path) -> Option<LiveManifest> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// A folder as a packager leaves it after its `upto`th segment: the master playlist, the
/// initialisation segments and each rendition's playlist.
fn packager(name: &str, upto: usize) -> TempDir {
    let dir = TempDir::new(name);
    for f in ["master.m3u8", "init_0.mp4", "init_1.mp4", "init_2.mp4"] {
        std::fs::copy(fixture().join(f), dir.path.join(f)).unwrap();
    }
    for r in &RENDITIONS {
        write_playlist(&dir.path, r, upto, false);
    }
    dir
}

/// `ppspp hls live` on `dir`'s master playlist with the key file `key`: served on UDP, or
/// signing only (`serve` false: pages take first copies from the web server).
fn start_source(dir: &Path, key: &Path, serve: bool, extra: &[&str]) -> Running {
    let master = dir.join("master.m3u8");
    let mut args = vec!["hls", "live", master.to_str().unwrap()];
    if serve {
        args.extend_from_slice(&["--udp", "127.0.0.1:0"]);
    }
    args.extend_from_slice(&["--key", key.to_str().unwrap()]);
    args.extend_from_slice(extra);
    spawn(&args)
}

/// The manifest in `dir` (`master.ppspp.json`) once `done` holds of it (within 30 s).
fn manifest_when(dir: &Path, done: impl Fn(&LiveManifest) -> bool) -> LiveManifest {
    manifest_named_when(&dir.join("master.ppspp.json"), done)
}

/// The manifest at `path` once `done` holds of it (within 30 s).
fn manifest_named_when(path: &Path, done: impl Fn(&LiveManifest) -> bool) -> LiveManifest {
    let limit = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(m) = read_manifest(path).filter(|m| done(m)) {
            return m;
        }
        assert!(
            Instant::now() < limit,
            "the manifest did not get there in time"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Takes every part of `entry` from the files in `dir` through a viewer engine of its
/// swarm, as a page takes segments from the web server: each checks against its record and
/// munros, and a changed byte does not.
fn take_every_part(entry: &LiveRenditionEntry, dir: &Path, stream_key: &LivePublicKey) {
    let (record, _) = entry.to_record().unwrap();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let now = Time::ZERO;
    let config = EngineConfig {
        wall_clock_offset: wall,
        ..EngineConfig::default()
    };
    let cs = record.info.params.chunk_size as usize;
    let mut viewer: Engine<u32, SparseStore> =
        Engine::new_live(config, record.info.clone(), SparseStore::live(cs), now).unwrap();
    let alg = record.info.params.hash;
    let mut next = 0;
    for p in &entry.parts {
        let (part, sig, munros) = p.to_part(alg).unwrap();
        assert_eq!(part.first_chunk, next, "{}", part.uri);
        next = part.end_chunk();
        assert!(!part.verify(stream_key, &sig));
        let bytes = std::fs::read(dir.join(&part.uri)).unwrap();
        let mut tampered = bytes.clone();
        tampered[bytes.len() / 2] ^= 0x40;
        let r = viewer.handle_live_part(now, &part, &sig, &munros, &tampered);
        assert!(matches!(r, Err(LivePartError::Mismatch(_))), "{r:?}");
        assert_eq!(
            viewer.handle_live_part(now, &part, &sig, &munros, &bytes),
            Ok(part.chunks),
            "{}",
            part.uri
        );
    }
}

#[test]
fn a_live_presentation_is_followed_and_every_segment_checks_against_its_manifest() {
    let dir = packager("hls-live", 1);
    let key_file = dir.path.join("stream.key");
    let source = start_source(
        &dir.path,
        &key_file,
        false,
        &["--algorithm", "ed25519", "--linger", "30"],
    );
    let stream_key = source.next_line(Duration::from_secs(30));
    let stream_key =
        LivePublicKey::from_swarm_id(&ppspp::hex::decode(&stream_key).unwrap()).unwrap();
    for step in 2..=3 {
        std::thread::sleep(Duration::from_millis(300));
        for r in &RENDITIONS {
            write_playlist(&dir.path, r, step, step == 3);
        }
    }
    let manifest = manifest_when(&dir.path, |m| {
        m.ended
            && m.renditions
                .iter()
                .zip(&RENDITIONS)
                .all(|(e, r)| e.parts.len() == r.2.len())
    });
    assert_eq!(manifest.kind, "live");
    assert_eq!(manifest.source, "master.m3u8");
    assert_eq!(manifest.key, ppspp::hex::encode(stream_key.swarm_id()));
    let ids: Vec<&str> = manifest.renditions.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["r0.m3u8", "r1.m3u8", "r2.m3u8"]);

    let mut swarms = Vec::new();
    for (entry, (_, init_file, segments)) in manifest.renditions.iter().zip(&RENDITIONS) {
        let (record, signature) = entry.to_record().unwrap();
        assert!(record.verify(&stream_key, &signature), "{}", entry.id);
        // The rendition's own key signs its parts, not the stream's.
        assert_ne!(record.info.key, stream_key);
        swarms.push(record.info.key.clone());
        let init = record.init.as_ref().expect("an initialisation segment");
        assert_eq!(init.uri, *init_file);
        assert!(init.matches(
            &record.info,
            &std::fs::read(fixture().join(init_file)).unwrap()
        ));

        let uris: Vec<&str> = entry.parts.iter().map(|p| p.uri.as_str()).collect();
        assert_eq!(uris, *segments);
        take_every_part(entry, &dir.path, &stream_key);
    }
    // Each rendition is its own swarm.
    let distinct: std::collections::HashSet<Vec<u8>> =
        swarms.iter().map(|k| k.swarm_id().to_vec()).collect();
    assert_eq!(distinct.len(), 3);
    drop(source);

    // Restarted with the same key file: the same stream key, the same renditions' swarms.
    let again = start_source(&dir.path, &key_file, true, &[]);
    assert_eq!(
        again.next_line(Duration::from_secs(30)),
        ppspp::hex::encode(stream_key.swarm_id())
    );
}

#[test]
fn a_packager_started_again_goes_on_in_the_same_swarms_under_its_new_names() {
    let dir = packager("hls-live-restart", 2);
    let source = start_source(&dir.path, &dir.path.join("k"), true, &[]);
    source.next_line(Duration::from_secs(30));
    let before = manifest_when(&dir.path, |m| {
        m.renditions.iter().all(|r| r.parts.len() == 2)
    });
    // The packager starts again: its first segment, under the first name again, holding
    // what was the second.
    let r0 = &before.renditions[0];
    let end = r0.parts[1].first_chunk + r0.parts[1].chunks;
    std::fs::copy(fixture().join("r0_001.m4s"), dir.path.join("r0_000.m4s")).unwrap();
    write_playlist(&dir.path, &RENDITIONS[0], 1, false);
    let after = manifest_when(&dir.path, |m| {
        m.renditions[0].parts.len() == 1 && m.renditions[0].parts[0].first_chunk == end
    });
    let part = &after.renditions[0].parts[0];
    assert_eq!(part.uri, "r0_000.m4s");
    assert_eq!(
        part.length,
        std::fs::metadata(fixture().join("r0_001.m4s"))
            .unwrap()
            .len()
    );
    assert_eq!(after.renditions[0].swarm, r0.swarm);
}

#[test]
fn a_source_with_no_packager_output_says_so() {
    let dir = TempDir::new("hls-live-none");
    let master = dir.path.join("master.m3u8");
    let out = run(
        &[
            "hls",
            "live",
            master.to_str().unwrap(),
            "--udp",
            "127.0.0.1:0",
            "--key",
            dir.path.join("k").to_str().unwrap(),
            "--wait",
            "1",
        ],
        Duration::from_secs(20),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("waited 1 s for the packager"), "{err}");
}

/// Writes `manifest.mpd` in `dir` as ffmpeg's `dash` muxer does after its `upto`th segment:
/// two Representations (the fixture's first two renditions' files under DASH names), a
/// SegmentTimeline over a window of the last two, `type="static"` once the stream is over.
fn write_mpd(dir: &Path, upto: usize, ended: bool) {
    let mut sets = String::new();
    for (id, (_, init, segments)) in RENDITIONS[..2].iter().enumerate() {
        std::fs::copy(fixture().join(init), dir.join(format!("init-{id}.m4s"))).unwrap();
        for (n, s) in segments[..upto.min(segments.len())].iter().enumerate() {
            let name = dir.join(format!("chunk-{id}-{:05}.m4s", n + 1));
            if !name.exists() {
                std::fs::copy(fixture().join(s), name).unwrap();
            }
        }
        let listed = upto.min(segments.len());
        let first = listed.saturating_sub(2);
        sets.push_str(&format!(
            r#"<AdaptationSet contentType="video" mimeType="video/mp4"><Representation id="{id}" bandwidth="{bw}" width="320" height="180" codecs="avc1.42c00c"><SegmentTemplate timescale="1000" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="{start}"><SegmentTimeline><S t="{t}" d="1000" r="{r}"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet>"#,
            bw = 500_000 * (id + 1),
            start = first + 1,
            t = first * 1000,
            r = listed - first - 1,
        ));
    }
    let kind = if ended { "static" } else { "dynamic" };
    let text = format!(
        r#"<?xml version="1.0" encoding="utf-8"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="{kind}" availabilityStartTime="2026-01-01T00:00:00Z" minBufferTime="PT2S"><Period id="0" start="PT0S">{sets}</Period></MPD>"#
    );
    let tmp = dir.join("manifest.mpd.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(tmp, dir.join("manifest.mpd")).unwrap();
}

#[test]
fn a_live_dash_presentation_is_followed_as_hls_is() {
    let dir = TempDir::new("dash-live");
    write_mpd(&dir.path, 1, false);
    let mpd = dir.path.join("manifest.mpd");
    let key_file = dir.path.join("stream.key");
    let source = spawn(&[
        "dash",
        "live",
        mpd.to_str().unwrap(),
        "--key",
        key_file.to_str().unwrap(),
        "--algorithm",
        "ed25519",
        "--linger",
        "0",
    ]);
    let stream_key = source.next_line(Duration::from_secs(30));
    let stream_key =
        LivePublicKey::from_swarm_id(&ppspp::hex::decode(&stream_key).unwrap()).unwrap();
    for step in 2..=3 {
        std::thread::sleep(Duration::from_millis(300));
        write_mpd(&dir.path, step, step == 3);
    }
    let manifest = manifest_named_when(&dir.path.join("manifest.ppspp.json"), |m| {
        m.ended
            && m.renditions
                .iter()
                .zip(&RENDITIONS)
                .all(|(e, r)| e.parts.len() == r.2.len())
    });
    assert_eq!(manifest.source, "manifest.mpd");
    let ids: Vec<&str> = manifest.renditions.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["0", "1"]);
    for (id, entry) in manifest.renditions.iter().enumerate() {
        let (record, signature) = entry.to_record().unwrap();
        assert!(record.verify(&stream_key, &signature), "{}", entry.id);
        let init = record.init.as_ref().expect("an initialisation segment");
        assert_eq!(init.uri, format!("init-{id}.m4s"));
        assert!(init.matches(
            &record.info,
            &std::fs::read(dir.path.join(&init.uri)).unwrap()
        ));
        let uris: Vec<String> = entry.parts.iter().map(|p| p.uri.clone()).collect();
        let want: Vec<String> = (1..=RENDITIONS[id].2.len())
            .map(|n| format!("chunk-{id}-{n:05}.m4s"))
            .collect();
        assert_eq!(uris, want);
        assert_eq!(entry.bandwidth, Some(500_000 * (id as u64 + 1)));
        take_every_part(entry, &dir.path, &stream_key);
    }
    // The stream ended: the source finishes by itself.
    let mut source = source;
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = source.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the source did not finish after the MPD turned static"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success());
}
