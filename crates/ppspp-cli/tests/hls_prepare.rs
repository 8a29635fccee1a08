//! `ppspp hls prepare` on real ffmpeg output (tests/fixtures/hls, made by its make.sh): the
//! four layouts sites serve, each rendition's parts in playlist order, the manifest and tree
//! files it writes, and the seeder's store reading the parts back.

mod common;

use common::presentation::{TempDir, assert_whole_file_in_ranges, concatenated};
use ppspp::merkle::tree_file::TreeFileHeader;
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::ChunkStore;
use ppspp_cli::presentation::manifest::{self, Manifest};
use ppspp_cli::presentation::parts_store::PartsStore;
use ppspp_cli::presentation::{hls, prepare, source_renditions};
use std::path::{Path, PathBuf};

const LAYOUTS: [&str; 4] = ["fmp4-segments", "fmp4-single", "ts-segments", "ts-single"];

fn fixture(layout: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hls")
        .join(layout)
}

/// A copy of a fixture in a temporary folder (prepare writes beside the playlists).
fn copy_of(layout: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::copy_of(&fixture(layout), "hls");
    let master = dir.path.join("master.m3u8");
    (dir, master)
}

#[test]
fn every_layout_gives_two_video_renditions_and_one_audio() {
    for layout in LAYOUTS {
        let rs = hls::renditions(&fixture(layout).join("master.m3u8")).unwrap();
        let ids: Vec<_> = rs
            .iter()
            .map(|r| (r.id.as_str(), r.kind.as_str()))
            .collect();
        assert_eq!(
            ids,
            [
                ("r0.m3u8", "video"),
                ("r1.m3u8", "video"),
                ("r2.m3u8", "audio")
            ],
            "{layout}"
        );
        assert_eq!(rs[0].bandwidth, Some(83600), "{layout}");
        assert_eq!(rs[0].resolution.as_deref(), Some("96x54"), "{layout}");
        for r in &rs {
            assert!(
                (r.duration_secs - 2.0).abs() < 0.2,
                "{layout} {}: {}",
                r.id,
                r.duration_secs
            );
        }
    }
}

#[test]
fn a_file_per_segment_is_the_init_section_then_each_segment_whole() {
    let rs = hls::renditions(&fixture("fmp4-segments").join("master.m3u8")).unwrap();
    let uris: Vec<_> = rs[0].parts.iter().map(|p| p.uri.as_str()).collect();
    assert_eq!(uris, ["init_0.mp4", "r0_000.m4s", "r0_001.m4s"]);
    for p in &rs[0].parts {
        assert_eq!(p.offset, None);
        assert_eq!(p.length, std::fs::metadata(&p.path).unwrap().len());
    }
    // MPEG-TS has no initialisation section.
    let ts = hls::renditions(&fixture("ts-segments").join("master.m3u8")).unwrap();
    let uris: Vec<_> = ts[2].parts.iter().map(|p| p.uri.as_str()).collect();
    assert_eq!(uris, ["r2_000.ts", "r2_001.ts", "r2_002.ts"]);
}

#[test]
fn byte_ranges_of_one_file_make_that_whole_file() {
    for layout in ["fmp4-single", "ts-single"] {
        for r in hls::renditions(&fixture(layout).join("master.m3u8")).unwrap() {
            assert_whole_file_in_ranges(&r);
        }
    }
}

#[test]
fn prepare_writes_a_manifest_and_trees_that_verify_every_rendition() {
    for layout in LAYOUTS {
        let (_dir, master) = copy_of(layout);
        let rs = hls::renditions(&master).unwrap();
        let m = prepare::prepare(
            &master,
            &rs,
            prepare::Packaging::Hls,
            HashAlgorithm::Sha256,
            1024,
        )
        .unwrap();
        let path = manifest::path_for(&master);
        m.write(&path).unwrap();
        let back = Manifest::read(&path).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.source, "master.m3u8");
        let base = master.parent().unwrap();
        for (r, src) in back.renditions.iter().zip(&rs) {
            let content = concatenated(src);
            let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &content).unwrap();
            assert_eq!(r.root, tree.root().to_hex(), "{layout} {}", r.id);
            assert_eq!(r.length, content.len() as u64);
            // The tree file beside the playlist names this root and length.
            let file = std::fs::read(base.join(&r.tree)).unwrap();
            let header = TreeFileHeader::decode(
                &file,
                HashAlgorithm::Sha256,
                &tree.root(),
                1024,
                content.len() as u64,
            )
            .unwrap();
            header.verifying_tree().unwrap();
        }
    }
}

#[test]
fn the_seeders_store_reads_every_chunk_across_the_parts() {
    for layout in LAYOUTS {
        let (_dir, master) = copy_of(layout);
        let rs = hls::renditions(&master).unwrap();
        let m = prepare::prepare(
            &master,
            &rs,
            prepare::Packaging::Hls,
            HashAlgorithm::Sha256,
            1000,
        )
        .unwrap();
        let path = manifest::path_for(&master);
        m.write(&path).unwrap();
        let back = source_renditions(&path, &Manifest::read(&path).unwrap()).unwrap();
        for r in &back {
            let content = concatenated(r);
            // 1000-byte chunks: most cross a part's edge somewhere.
            let mut store = PartsStore::open(&r.parts, 1000).unwrap();
            let mut read = Vec::new();
            for chunk in 0..content.len().div_ceil(1000) as u64 {
                assert!(store.read_chunk(chunk, &mut read).unwrap());
            }
            assert_eq!(read, content, "{layout} {}", r.id);
        }
    }
}

#[test]
fn a_changed_segment_stops_the_store() {
    let (_dir, master) = copy_of("ts-segments");
    let rs = hls::renditions(&master).unwrap();
    let mut store = PartsStore::open(&rs[0].parts, 1024).unwrap();
    let mut out = Vec::new();
    assert!(store.read_chunk(0, &mut out).unwrap());
    std::fs::write(&rs[0].parts[1].path, b"another segment").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let err = store.read_chunk(0, &mut out).unwrap_err();
    assert!(err.to_string().contains("changed while seeded"), "{err}");
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn what_prepare_cannot_take_is_refused_with_the_reason() {
    let (dir, master) = copy_of("ts-segments");
    let d = &dir.path;
    let err = |p: &Path| hls::renditions(p).unwrap_err().to_string();
    write(
        d,
        "live.m3u8",
        "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nr0_000.ts\n",
    );
    assert!(err(&d.join("live.m3u8")).contains("live playlist"));
    write(
        d,
        "gone.m3u8",
        "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nmissing.ts\n#EXT-X-ENDLIST\n",
    );
    assert!(err(&d.join("gone.m3u8")).contains("missing.ts: cannot open"));
    write(
        d,
        "long.m3u8",
        "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n#EXT-X-BYTERANGE:999999@0\nr0_000.ts\n#EXT-X-ENDLIST\n",
    );
    assert!(err(&d.join("long.m3u8")).contains("runs past the file's end"));
    write(
        d,
        "up.m3u8",
        "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n../x.ts\n#EXT-X-ENDLIST\n",
    );
    assert!(err(&d.join("up.m3u8")).contains("leaves"));
    write(
        d,
        "remote.m3u8",
        "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\nhttps://cdn.example/x.ts\n#EXT-X-ENDLIST\n",
    );
    assert!(err(&d.join("remote.m3u8")).contains("local files only"));
    assert!(err(&d.join("r0_000.ts")).contains("not an HLS playlist"));
    assert!(err(&d.join("nothing.m3u8")).contains("cannot read"));
    // A master naming a missing media playlist.
    write(
        d,
        "m2.m3u8",
        "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nnope.m3u8\n",
    );
    assert!(err(&d.join("m2.m3u8")).contains("nope.m3u8"));
    drop(master);
}

#[test]
fn a_byte_range_without_an_offset_follows_the_previous_one() {
    let (dir, _master) = copy_of("ts-single");
    let d = &dir.path;
    write(
        d,
        "follow.m3u8",
        "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n#EXT-X-BYTERANGE:100@0\nr0.ts\n#EXTINF:1,\n#EXT-X-BYTERANGE:50\nr0.ts\n#EXT-X-ENDLIST\n",
    );
    let rs = hls::renditions(&d.join("follow.m3u8")).unwrap();
    let ranges: Vec<_> = rs[0].parts.iter().map(|p| (p.offset, p.length)).collect();
    assert_eq!(ranges, [(Some(0), 100), (Some(100), 50)]);
}
