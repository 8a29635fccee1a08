//! The built `ppspp-sim` binary: a 50-leecher swarm completes, uncorrupted, and the
//! seeder uploads less than three copies.

use std::process::Command;

#[test]
fn swarm_of_fifty_completes_clean() {
    let out = std::env::temp_dir().join(format!("ppspp-sim-test-{}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_ppspp-sim"))
        .args(["swarm", "--leechers", "50", "--seed", "1", "--out"])
        .arg(&out)
        .output()
        .expect("run ppspp-sim");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stdout = String::from_utf8(run.stdout).unwrap();
    let last = stdout.lines().last().expect("some output");
    let v: serde_json::Value = serde_json::from_str(last).expect("last line is JSON");
    assert_eq!(v["leechers"], 50);
    assert_eq!(v["complete"], 50, "{last}");
    assert_eq!(v["corrupt_chunks"], 0);
    let ratio = v["seeder_upload_ratio"].as_f64().unwrap();
    assert!((1.0..3.0).contains(&ratio), "seeder upload ratio {ratio}");
    assert!(out.join("swarm.csv").exists());
    assert!(out.join("swarm_completion.png").exists());
    let _ = std::fs::remove_dir_all(&out);
}
