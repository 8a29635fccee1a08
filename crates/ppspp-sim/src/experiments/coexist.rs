//! `coexist`: P2P traffic beside a call on a wireless-like access link (the wireless
//! coexistence paper, ../shared/papers/p2p-wireless-coexistence.txt, Fig. 3; the scenario
//! is `ppspp_sim::coexist`). A 64 kbit/s audio flow or a 600 kbit/s video flow from 20 s
//! to 80 s of a 100 s run, beside 4 uploads (runs named `up`) or 4 uploads and 4
//! downloads (`both`), with base-station buffers of 8, 32 and 128 packets, under five
//! cases: TCP-like P2P (the paper's baseline), ppspp with LEDBAT, either one with its
//! upload capped at 30 % of the uplink, and TCP-like behind a strict-priority queue for
//! the real-time packets (the paper's DiffServ case).

use ppspp_sim::coexist::{Coexist, DOWNLINK_BPS, OWD, P2p, UPLINK_BPS, UPLOADS, run as run_one};
use ppspp_sim::plot::{Series, csv, lines};
use ppspp_sim::scenario::Content;
use serde_json::{Value, json};
use std::path::Path;

use super::{Res, round};

const BUFFERS: [usize; 3] = [8, 32, 128];
/// The P2P directions: uploads only, or as many downloads too.
const DIRECTIONS: [(&str, usize); 2] = [("up", 0), ("both", UPLOADS)];
/// The real-time flows: name and bit/s.
const MEDIA: [(&str, u64); 2] = [("audio", 64_000), ("video", 600_000)];
const LEDBAT: P2p = P2p::Ledbat { coupled: true };
/// The cases: name, P2P, upload capped at 30 %, strict priority.
const CASES: [(&str, P2p, bool, bool); 6] = [
    ("tcp", P2p::TcpLike, false, false),
    ("ledbat", LEDBAT, false, false),
    (
        "ledbat_uncoupled",
        P2p::Ledbat { coupled: false },
        false,
        false,
    ),
    ("tcp_cap30", P2p::TcpLike, true, false),
    ("ledbat_cap30", LEDBAT, true, false),
    ("tcp_diffserv", P2p::TcpLike, false, true),
];

/// Runs `coexist` into `out`.
pub fn run(out: &Path, seed: u64) -> Res {
    let base = Coexist {
        media_bps: 0,
        p2p: P2p::TcpLike,
        upload_cap_bps: None,
        strict_priority: false,
        downloads: 0,
        buffer_packets: 0,
        media_start_s: 20.0,
        media_stop_s: 80.0,
        run_s: 100.0,
    };
    let most = Coexist {
        downloads: UPLOADS,
        ..base.clone()
    };
    let content = Content::new(most.content_len(), 1024, seed);
    let mut rows = Vec::new();
    let mut summary = json!({
        "uplink_mbps": UPLINK_BPS as f64 / 1e6,
        "downlink_mbps": DOWNLINK_BPS as f64 / 1e6,
        "one_way_ms": OWD.as_millis() as u64,
        "uploads": UPLOADS,
        "up": {},
        "both": {},
    });
    for (direction, downloads) in DIRECTIONS {
        for (media, media_bps) in MEDIA {
            let mut series = Vec::new();
            let mut per_case = serde_json::Map::new();
            let mut expected_ms = 0.0;
            for (case, p2p, capped, strict_priority) in CASES {
                let mut points = Vec::new();
                let mut runs = Vec::new();
                for buffer_packets in BUFFERS {
                    let c = Coexist {
                        media_bps,
                        p2p,
                        upload_cap_bps: capped.then_some(UPLINK_BPS * 3 / 10),
                        strict_priority,
                        downloads,
                        buffer_packets,
                        ..base.clone()
                    };
                    expected_ms = c.expected_gap_ms();
                    let o = run_one(&c, &content, seed);
                    let mut row = vec![
                        direction.to_string(),
                        media.to_string(),
                        case.to_string(),
                        buffer_packets.to_string(),
                    ];
                    row.extend(o.gaps_ms.iter().map(|g| format!("{g:.2}")));
                    row.push(format!("{:.4}", o.loss));
                    row.push(format!("{:.1}", o.upload_kbps));
                    row.push(format!("{:.1}", o.download_kbps));
                    rows.push(row);
                    points.push((buffer_packets as f64, o.gaps_ms[4] / expected_ms));
                    runs.push(json!({
                        "buffer_packets": buffer_packets,
                        "gap_ms_p5_p25_p50_p75_p95": o.gaps_ms.map(|g| round(g, 1)),
                        "p95_over_expected": round(o.gaps_ms[4] / expected_ms, 2),
                        "loss": round(o.loss, 4),
                        "upload_kbps": round(o.upload_kbps, 1),
                        "download_kbps": round(o.download_kbps, 1),
                    }));
                }
                series.push(Series::new(case, points));
                per_case.insert(case.to_string(), Value::Array(runs));
            }
            summary[direction][media] =
                json!({"expected_gap_ms": round(expected_ms, 2), "cases": per_case});
            lines(
                &out.join(format!("coexist_{direction}_{media}.png")),
                &format!(
                    "{media} ({} kbit/s) beside P2P ({}) on a 1 Mbit/s uplink",
                    media_bps / 1000,
                    if downloads == 0 {
                        "uploads"
                    } else {
                        "uploads and downloads"
                    }
                ),
                "base-station buffer (packets)",
                "95th-percentile inter-arrival ÷ expected",
                &series,
            )?;
        }
    }
    csv(
        &out.join("coexist.csv"),
        "p2p,media,case,buffer_packets,gap_p5_ms,gap_p25_ms,gap_p50_ms,gap_p75_ms,gap_p95_ms,loss,upload_kbps,download_kbps",
        &rows,
    )?;
    // The goal: LEDBAT alone keeps the audio's 95th percentile within 1.5 times the
    // expected inter-arrival, with no audio lost; per direction, the buffers where it does.
    for (direction, _) in DIRECTIONS {
        let runs = summary[direction]["audio"]["cases"]["ledbat"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let met: Vec<Value> = runs
            .iter()
            .filter(|r| {
                r["p95_over_expected"].as_f64().is_some_and(|x| x <= 1.5)
                    && r["loss"].as_f64() == Some(0.0)
            })
            .map(|r| r["buffer_packets"].clone())
            .collect();
        summary[direction]["ledbat_audio_goal_met_at_buffers"] = json!(met);
    }
    Ok(summary)
}
