//! `ppspp hls prepare` and `ppspp seed MASTER.ppspp.json` as a user runs them: every
//! rendition of ffmpeg's output served at once, each fetched by `ppspp fetch` byte for byte
//! the concatenation of its playlist's parts.

mod common;

use common::{run, spawn, stderr, temp_dir};
use std::time::Duration;

fn copy_fixture(layout: &str, to: &std::path::Path) {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hls")
        .join(layout);
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn a_prepared_presentation_is_seeded_and_every_rendition_fetched_whole() {
    for (layout, expected) in [
        (
            "fmp4-segments",
            vec![
                vec!["init_0.mp4", "r0_000.m4s", "r0_001.m4s"],
                vec!["init_1.mp4", "r1_000.m4s", "r1_001.m4s"],
                vec!["init_2.mp4", "r2_000.m4s", "r2_001.m4s", "r2_002.m4s"],
            ],
        ),
        (
            "ts-single",
            vec![vec!["r0.ts"], vec!["r1.ts"], vec!["r2.ts"]],
        ),
    ] {
        let dir = temp_dir(&format!("hls-seed-{layout}"));
        copy_fixture(layout, &dir);
        let master = dir.join("master.m3u8");
        let o = run(
            &["hls", "prepare", master.to_str().unwrap()],
            Duration::from_secs(60),
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let printed = String::from_utf8_lossy(&o.stdout);
        assert_eq!(printed.lines().count(), 3, "{printed}");
        assert!(stderr(&o).contains("master.ppspp.json"), "{}", stderr(&o));
        let manifest = dir.join("master.ppspp.json");
        let seeder = spawn(&["seed", manifest.to_str().unwrap(), "--udp", "127.0.0.1:0"]);
        for (i, files) in expected.iter().enumerate() {
            let line = seeder.next_line(Duration::from_secs(30));
            let (id, uri) = line.split_once(' ').expect("rendition and URI");
            assert_eq!(id, format!("r{i}.m3u8"));
            let mut want = Vec::new();
            for f in files {
                want.extend(std::fs::read(dir.join(f)).unwrap());
            }
            let out = dir.join(format!("fetched-{i}"));
            let o = run(
                &["fetch", uri, "-o", out.to_str().unwrap()],
                Duration::from_secs(60),
            );
            assert!(o.status.success(), "{layout} {id}: {}", stderr(&o));
            assert_eq!(std::fs::read(&out).unwrap(), want, "{layout} {id}");
        }
        drop(seeder);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn seeding_a_manifest_whose_files_changed_is_refused() {
    let dir = temp_dir("hls-seed-changed");
    copy_fixture("ts-segments", &dir);
    let master = dir.join("master.m3u8");
    let o = run(
        &["hls", "prepare", master.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let seg = dir.join("r1_001.ts");
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&seg, bytes).unwrap();
    let manifest = dir.join("master.ppspp.json");
    let o = run(
        &["seed", manifest.to_str().unwrap(), "--udp", "127.0.0.1:0"],
        Duration::from_secs(60),
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("rendition r1.m3u8") && err.contains("prepare again"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
