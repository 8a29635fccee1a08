//! The coexistence scenario (docs/EXPERIMENTS.md, `coexist`): beside 4 uploads on a
//! 1 Mbit/s uplink with a 32-packet buffer, a 64 kbit/s audio flow is disturbed by
//! TCP-like uploads, and kept near its expected inter-arrival with no loss by LEDBAT
//! uploads and by a strict-priority queue.

use ppspp_sim::coexist::{Coexist, run};
use ppspp_sim::scenario::Content;

fn scenario(ledbat: bool, strict_priority: bool) -> Coexist {
    Coexist {
        media_bps: 64_000,
        ledbat,
        upload_cap_bps: None,
        strict_priority,
        downloads: 0,
        buffer_packets: 32,
        media_start_s: 10.0,
        media_stop_s: 40.0,
        // The last packets are still on their way at the stop.
        run_s: 42.0,
    }
}

#[test]
fn ledbat_uploads_leave_a_call_s_audio_undisturbed_where_tcp_like_ones_do_not() {
    let tcp = scenario(false, false);
    let content = Content::new(tcp.content_len(), 1024, 1);
    let expected = tcp.expected_gap_ms();
    let tcp = run(&tcp, &content, 1);
    assert!(
        tcp.gaps_ms[4] > 1.5 * expected || tcp.loss > 0.0,
        "TCP-like uploads left the audio alone: {tcp:?}"
    );
    let ledbat = run(&scenario(true, false), &content, 1);
    assert!(ledbat.gaps_ms[4] <= 1.5 * expected, "{ledbat:?}");
    assert_eq!(ledbat.loss, 0.0, "{ledbat:?}");
    // It yields the call its share, not the link: the uploads still take most of the rest.
    assert!(ledbat.upload_kbps > 600.0, "{ledbat:?}");
    let diffserv = run(&scenario(false, true), &content, 1);
    assert!(diffserv.gaps_ms[4] <= 1.5 * expected, "{diffserv:?}");
    assert_eq!(diffserv.loss, 0.0, "{diffserv:?}");
    assert!(diffserv.upload_kbps > 600.0, "{diffserv:?}");
}
