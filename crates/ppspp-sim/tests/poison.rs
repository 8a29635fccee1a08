//! Poisoning peers are detected and dropped; honest data still completes and nothing
//! unverified reaches the store.

use ppspp::Bin;
use ppspp::engine::{CloseReason, Event};
use ppspp::store::chunk_span;
use ppspp::time::Time;
use ppspp_sim::adversary::Mutation;
use ppspp_sim::link::LinkConfig;
use ppspp_sim::net::Network;
use ppspp_sim::scenario::{Content, config};
use std::time::Duration;

fn run(m: Mutation) {
    let c = Content::new(400 * 1024, 1024, 9);
    let mut net = Network::new(21);
    let link = LinkConfig::new(8_000_000, 100_000);
    let d = Duration::from_millis(15);
    let adv = net.add_node(
        Network::peer(c.seeder(config(1)), Some(m)),
        link.clone(),
        link.clone(),
        d,
    );
    let honest = net.add_node(
        Network::peer(c.seeder(config(2)), None),
        link.clone(),
        link.clone(),
        d,
    );
    let l = net.add_node(
        Network::peer(c.leecher(config(3)), None),
        link.clone(),
        link,
        d,
    );
    // The adversary comes first, so its hashes and data are the first the leecher sees.
    net.with_engine(l, |e, now| e.connect(adv, now));
    // Long enough for a withholding peer to run out of chances (three request expiries,
    // 2 s each while no round trip is known), so that it is judged alone: with the honest
    // seeder there, the ban would depend on requests still waiting at it when the third
    // window ends.
    net.run_until(Time::from_millis(7_000));
    net.with_engine(l, |e, now| e.connect(honest, now));
    // A rejected chunk is wanted again, so the honest seeder completes the content.
    let complete = |n: &Network| n.engine(l).is_complete();
    assert!(
        net.run_while(
            Duration::from_millis(100),
            Time::from_millis(120_000),
            complete
        ),
        "{m:?}: honest data incomplete: {:?}",
        net.engine(l).stats()
    );
    // Another 30 s: nothing more arrives from anyone, nothing bad is stored.
    net.run_until(Time::from_micros(net.now.as_micros() + 30_000_000));
    let leecher = net.engine(l);
    let st = leecher.stats();
    assert_eq!(leecher.store().corrupt_writes, 0, "{m:?}: bad chunk stored");
    assert_eq!(leecher.store().writes, st.chunks_verified);
    for chunk in 0..st.chunk_count {
        if leecher.have().is_filled(Bin::chunk(chunk).unwrap()) {
            let span = chunk_span(c.len() as u64, 1024, chunk).unwrap();
            let (a, b) = (span.start as usize, span.end as usize);
            assert_eq!(leecher.store().bytes()[a..b], c.data[a..b], "chunk {chunk}");
        }
    }
    assert_eq!(st.bytes_downloaded, 1024 * st.chunks_have);
    assert!(leecher.is_complete());
    assert!(leecher.store().matches_original(), "{m:?}: content differs");
    assert!(
        leecher.peers().all(|p| *p != adv),
        "{m:?}: adversary still connected"
    );
    let events = &net.peer_ref(l).events;
    let dropped = events.iter().any(|(_, e)| {
        matches!(e, Event::PeerClosed { peer, reason: CloseReason::Misbehaving(_) } if *peer == adv)
    });
    assert!(
        dropped,
        "{m:?}: adversary not dropped as misbehaving: {events:?}"
    );
    if m != Mutation::WithholdData {
        assert!(
            events
                .iter()
                .any(|(_, e)| matches!(e, Event::ChunkRejected { from, .. } if *from == adv)),
            "{m:?}: no ChunkRejected"
        );
        assert!(leecher.stats().chunks_rejected > 0);
    }
    // Reconnecting is refused: every kind of adversary is banned.
    net.with_engine(l, |e, now| e.connect(adv, now));
    assert!(net.engine(l).peers().all(|p| *p != adv));
}

#[test]
fn corrupt_data_is_rejected_and_peer_dropped() {
    run(Mutation::CorruptData);
}

#[test]
fn corrupt_integrity_is_rejected_and_peer_dropped() {
    run(Mutation::CorruptIntegrity);
}

#[test]
fn have_all_but_never_serve_is_dropped() {
    run(Mutation::WithholdData);
}
