//! `ppspp dash prepare` on real ffmpeg output (tests/fixtures/dash, made by its make.sh): the
//! layouts ffmpeg's dash muxer writes, each Representation's parts in order, and the
//! manifest and tree files prepare writes.

mod common;

use common::presentation::{TempDir, assert_whole_file_in_ranges, concatenated};
use ppspp::merkle::tree_file::TreeFileHeader;
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp_cli::presentation::manifest::{self, Manifest};
use ppspp_cli::presentation::{dash, prepare};
use std::path::{Path, PathBuf};

const LAYOUTS: [&str; 4] = ["timeline", "duration", "list", "single"];

fn fixture(layout: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dash")
        .join(layout)
}

#[test]
fn every_layout_gives_two_video_representations_and_one_audio() {
    for layout in LAYOUTS {
        let rs = dash::renditions(&fixture(layout).join("manifest.mpd")).unwrap();
        let ids: Vec<_> = rs
            .iter()
            .map(|r| (r.id.as_str(), r.kind.as_str()))
            .collect();
        assert_eq!(
            ids,
            [("0", "video"), ("1", "video"), ("2", "audio")],
            "{layout}"
        );
        assert_eq!(rs[0].resolution.as_deref(), Some("96x54"), "{layout}");
        assert_eq!(rs[1].resolution.as_deref(), Some("48x28"), "{layout}");
        assert!(rs[0].bandwidth.is_some(), "{layout}");
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
fn templates_and_lists_name_the_init_segment_then_each_segment_whole() {
    for layout in ["timeline", "list"] {
        let rs = dash::renditions(&fixture(layout).join("manifest.mpd")).unwrap();
        let uris: Vec<_> = rs[0].parts.iter().map(|p| p.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "init-stream0.m4s",
                "chunk-stream0-00001.m4s",
                "chunk-stream0-00002.m4s"
            ],
            "{layout}"
        );
        for p in &rs[0].parts {
            assert_eq!(p.offset, None);
            assert_eq!(p.length, std::fs::metadata(&p.path).unwrap().len());
        }
        // Its audio has a short third segment.
        assert_eq!(rs[2].parts.len(), 4, "{layout}");
    }
    // Without a timeline, the count follows the MPD's duration (ffmpeg's third audio
    // file is not in it, and players never ask for it).
    let rs = dash::renditions(&fixture("duration").join("manifest.mpd")).unwrap();
    assert_eq!(rs[2].parts.len(), 3);
}

#[test]
fn byte_ranges_of_one_file_make_that_whole_file() {
    for r in dash::renditions(&fixture("single").join("manifest.mpd")).unwrap() {
        assert_whole_file_in_ranges(&r);
    }
}

#[test]
fn prepare_writes_a_manifest_and_trees_that_verify_every_representation() {
    for layout in LAYOUTS {
        let dir = TempDir::copy_of(&fixture(layout), "dash");
        let mpd = dir.path.join("manifest.mpd");
        let rs = dash::renditions(&mpd).unwrap();
        let m = prepare::prepare(
            &mpd,
            &rs,
            prepare::Packaging::Dash,
            HashAlgorithm::Sha256,
            1024,
        )
        .unwrap();
        let path = manifest::path_for(&mpd);
        assert_eq!(path, dir.path.join("manifest.ppspp.json"));
        m.write(&path).unwrap();
        let back = Manifest::read(&path).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.source, "manifest.mpd");
        for (r, src) in back.renditions.iter().zip(&rs) {
            assert_eq!(r.tree, format!("manifest-{}.ppspp-tree", r.id), "{layout}");
            let content = concatenated(src);
            let tree = MerkleTree::from_content(HashAlgorithm::Sha256, 1024, &content).unwrap();
            assert_eq!(r.root, tree.root().to_hex(), "{layout} {}", r.id);
            let file = std::fs::read(dir.path.join(&r.tree)).unwrap();
            TreeFileHeader::decode(
                &file,
                HashAlgorithm::Sha256,
                &tree.root(),
                1024,
                content.len() as u64,
            )
            .unwrap()
            .verifying_tree()
            .unwrap();
        }
    }
}

#[test]
fn what_prepare_cannot_take_is_refused_with_the_reason() {
    let dir = TempDir::copy_of(&fixture("timeline"), "dash-refused");
    let mpd = std::fs::read_to_string(dir.path.join("manifest.mpd")).unwrap();
    let err = |name: &str, text: &str| {
        std::fs::write(dir.path.join(name), text).unwrap();
        dash::renditions(&dir.path.join(name))
            .unwrap_err()
            .to_string()
    };
    let live = mpd.replace("type=\"static\"", "type=\"dynamic\"");
    assert!(err("live.mpd", &live).contains("live MPD"));
    let gone = mpd.replace("chunk-stream$RepresentationID$", "gone$RepresentationID$");
    assert!(err("gone.mpd", &gone).contains("gone0-00001.m4s: cannot open"));
    let remote = mpd.replace(
        "<Period id=\"0\" start=\"PT0.0S\">",
        "<Period id=\"0\" start=\"PT0.0S\"><BaseURL>https://cdn.example/</BaseURL>",
    );
    assert!(err("remote.mpd", &remote).contains("local files only"));
    let unknown = mpd.replace("$Number%05d$", "$Frame$");
    assert!(err("unknown.mpd", &unknown).contains("unknown identifier $Frame$"));
    let two = mpd.replace("</Period>", "</Period><Period id=\"1\"></Period>");
    assert!(err("two.mpd", &two).contains("2 Periods"));
    assert!(err("not.mpd", "#EXTM3U\n").contains("is not an MPD"));
}
