//! The coexistence scenario (docs/EXPERIMENTS.md, `coexist`): beside 4 uploads on a
//! 1 Mbit/s uplink with a 32-packet buffer, a 64 kbit/s audio flow is disturbed by
//! TCP-like uploads, and kept near its expected inter-arrival with no loss by LEDBAT
//! uploads and by a strict-priority queue; with an 8-packet buffer, by coupled LEDBAT.

use ppspp_sim::coexist::{Coexist, P2p, run};
use ppspp_sim::scenario::Content;

const LEDBAT: P2p = P2p::Ledbat { coupled: true };

fn scenario(p2p: P2p, strict_priority: bool) -> Coexist {
    Coexist {
        media_bps: 64_000,
        p2p,
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
    let tcp = scenario(P2p::TcpLike, false);
    let content = Content::new(tcp.content_len(), 1024, 1);
    let expected = tcp.expected_gap_ms();
    let tcp = run(&tcp, &content, 1);
    assert!(
        tcp.gaps_ms[4] > 1.5 * expected || tcp.loss > 0.0,
        "TCP-like uploads left the audio alone: {tcp:?}"
    );
    let ledbat = run(&scenario(LEDBAT, false), &content, 1);
    assert!(ledbat.gaps_ms[4] <= 1.5 * expected, "{ledbat:?}");
    assert_eq!(ledbat.loss, 0.0, "{ledbat:?}");
    // It yields the call its share, not the link: the uploads still take most of the rest.
    assert!(ledbat.upload_kbps > 600.0, "{ledbat:?}");
    let diffserv = run(&scenario(P2p::TcpLike, true), &content, 1);
    assert!(diffserv.gaps_ms[4] <= 1.5 * expected, "{diffserv:?}");
    assert_eq!(diffserv.loss, 0.0, "{diffserv:?}");
    assert!(diffserv.upload_kbps > 600.0, "{diffserv:?}");
}

/// Which few audio packets an 8-packet buffer drops depends on timing, so the call is
/// placed at three times: uncoupled, the 4 channels lose 2, 3 and 5 of its 833 packets.
#[test]
fn coupled_ledbat_uploads_keep_the_audio_whole_behind_an_8_packet_buffer() {
    for coupled in [true, false] {
        let mut lost = 0.0;
        for start in [14.0, 18.0, 22.0] {
            let c = Coexist {
                buffer_packets: 8,
                media_start_s: start,
                media_stop_s: start + 60.0,
                run_s: start + 62.0,
                ..scenario(P2p::Ledbat { coupled }, false)
            };
            let content = Content::new(c.content_len(), 1024, 1);
            let o = run(&c, &content, 1);
            if coupled {
                assert!(o.gaps_ms[4] <= 1.5 * c.expected_gap_ms(), "{o:?}");
                assert!(o.upload_kbps > 600.0, "{o:?}");
            }
            lost += o.loss * 833.0;
        }
        if coupled {
            assert!(lost < 1.5, "coupled: {lost} packets lost");
        } else {
            assert!(
                lost > 2.5,
                "uncoupled lost {lost}: the case no longer tells them apart"
            );
        }
    }
}
