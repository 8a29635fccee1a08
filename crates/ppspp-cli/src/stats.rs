//! `--stats-json`: one JSON object per line per second, for scripts and plots.

use ppspp::engine::{Engine, PeerAddr, SendState, Stats};
use ppspp::store::ChunkStore;
use ppspp::time::Time;
use serde_json::json;
use std::io::Write;

pub struct StatsPrinter {
    last: Option<(Time, Stats)>,
    /// Which swarm the lines are about, where one process serves several (a presentation's
    /// renditions): its `"swarm"` field.
    swarm: Option<String>,
}

impl Default for StatsPrinter {
    fn default() -> Self {
        Self::new()
    }
}

impl StatsPrinter {
    pub fn new() -> StatsPrinter {
        StatsPrinter {
            last: None,
            swarm: None,
        }
    }

    /// Lines that name `swarm` (a rendition's id).
    pub fn for_swarm(swarm: &str) -> StatsPrinter {
        StatsPrinter {
            last: None,
            swarm: Some(swarm.to_string()),
        }
    }

    pub fn print<A: PeerAddr + std::fmt::Display, S: ChunkStore>(
        &mut self,
        engine: &Engine<A, S>,
        now: Time,
    ) {
        let s = engine.stats();
        let (down, up) = match &self.last {
            Some((t, prev)) => {
                let secs = now.saturating_since(*t).as_secs_f64().max(1e-6);
                (
                    (s.bytes_downloaded - prev.bytes_downloaded) as f64 / secs,
                    (s.bytes_uploaded - prev.bytes_uploaded) as f64 / secs,
                )
            }
            None => (0.0, 0.0),
        };
        let channels: Vec<_> = engine
            .channel_stats()
            .into_iter()
            .map(|c| {
                json!({
                    "peer": c.peer.to_string(),
                    "state": match c.send_state {
                        SendState::PingPong => "ping-pong",
                        SendState::Window(ppspp::congestion::Phase::SlowStart) => "slow-start",
                        SendState::Window(ppspp::congestion::Phase::Avoidance) => "avoidance",
                        SendState::KeepAlive => "keep-alive",
                    },
                    "cwnd": (c.cwnd * 100.0).round() / 100.0,
                    "rtt_ms": c.srtt.as_secs_f64() * 1000.0,
                    "queuing_delay_ms": c.queuing_delay.map(|d| d.as_secs_f64() * 1000.0),
                    "priority": c.priority,
                    "bytes_up": c.bytes_uploaded,
                    "bytes_down": c.bytes_downloaded,
                    "requests": c.requests_outstanding,
                    "choked": c.choked_by_peer,
                    "choking": c.choking,
                })
            })
            .collect();
        let mut line = json!({
            "t_s": now.as_micros() as f64 / 1e6,
            "have": s.chunks_have,
            "chunks": s.chunk_count,
            "peers": s.peers,
            "download_bps": down.round(),
            "upload_bps": up.round(),
            "bytes_downloaded": s.bytes_downloaded,
            "bytes_uploaded": s.bytes_uploaded,
            "chunks_verified": s.chunks_verified,
            "chunks_rejected": s.chunks_rejected,
            "retransmissions": s.retransmissions,
            "channels": channels,
        });
        if let Some(swarm) = &self.swarm {
            line["swarm"] = json!(swarm);
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
        self.last = Some((now, s));
    }
}
