//! Locality-aware samples (docs/EXPERIMENTS.md, `locality`): hosts spread over the ASes of
//! the small Internet meet through samples; drawn by locality, with a random place, they
//! send less across AS boundaries than with samples drawn at random, and every host still
//! completes with nothing corrupt. (How much less is the experiment's figure.)

use ppspp_sim::multipath::{Meeting, MultipathParams, MultipathResult, Routing, TIER1, TIER2, run};
use ppspp_sim::sampling::Sampling;

fn swarm(sampling: Sampling) -> MultipathResult {
    let p = MultipathParams {
        host_ases: (TIER1..TIER1 + TIER2).collect(),
        hosts: 40,
        content_len: 1 << 20,
        chunk_size: 8192,
        routing: Routing::SinglePath,
        max_outgoing: None,
        max_unchoked: 4,
        access_bps: 100_000_000,
        queue_bytes: 100_000,
        seed: 1,
        limit_s: 600.0,
        meeting: Meeting::Samples { size: 3, sampling },
    };
    let r = run(&p);
    assert!(
        r.completion_s.iter().all(|c| c.is_some()),
        "{sampling:?}: {:?}",
        r.completion_s
    );
    assert_eq!(r.corrupt_chunks, 0);
    assert_eq!(r.cut_off, 0, "{sampling:?}: the samples left hosts cut off");
    r
}

#[test]
fn local_samples_keep_more_traffic_inside_ases_than_random_ones() {
    let random = swarm(Sampling::Random);
    let local = swarm(Sampling::Local { random_places: 1 });
    assert!(
        local.cross_as_channels < random.cross_as_channels,
        "{} vs {}",
        local.cross_as_channels,
        random.cross_as_channels
    );
    assert!(
        local.core_bytes_per_content_byte < 0.8 * random.core_bytes_per_content_byte,
        "{:.3} vs {:.3}",
        local.core_bytes_per_content_byte,
        random.core_bytes_per_content_byte
    );
}
