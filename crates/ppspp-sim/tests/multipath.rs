//! Path-level peers (docs/EXPERIMENTS.md, `multipath`): 20 hosts in 5 Tier-2 ASes of the
//! small Internet. Single-path routing leaves the Tier-1 mesh idle; path-level peers put
//! traffic on it, and every host still completes with nothing corrupt. (How much faster
//! is the experiment's figure, not a test's.)

use ppspp_sim::multipath::{Meeting, MultipathParams, MultipathResult, Routing, TIER1, run};

fn swarm(routing: Routing, max_outgoing: Option<usize>) -> (MultipathParams, MultipathResult) {
    let p = MultipathParams {
        host_ases: (TIER1..TIER1 + 5).collect(),
        hosts: 20,
        content_len: 2 << 20,
        chunk_size: 8192,
        routing,
        max_outgoing,
        max_unchoked: 4,
        access_bps: 100_000_000,
        queue_bytes: 100_000,
        seed: 1,
        limit_s: 600.0,
        meeting: Meeting::Mesh,
    };
    let r = run(&p);
    assert!(
        r.completion_s.iter().all(|c| c.is_some()),
        "{routing:?}: {:?}",
        r.completion_s
    );
    assert_eq!(r.corrupt_chunks, 0);
    (p, r)
}

/// Bytes over the links between Tier-1 ASes, both ways.
fn tier1_mesh_bytes(r: &MultipathResult) -> u64 {
    r.core_link_bytes
        .iter()
        .filter(|((a, b), _)| *a < TIER1 && *b < TIER1)
        .map(|(_, bytes)| bytes)
        .sum()
}

#[test]
fn path_level_peers_use_core_links_that_single_path_leaves_idle() {
    let (_, single) = swarm(Routing::SinglePath, None);
    let (p, multi) = swarm(Routing::Multipath, None);
    assert_eq!(tier1_mesh_bytes(&single), 0, "{:?}", single.core_link_bytes);
    // Several content copies' worth, not a few handshakes.
    assert!(
        tier1_mesh_bytes(&multi) > p.content_len as u64,
        "{:?}",
        multi.core_link_bytes
    );
    assert!(
        multi.channels > 3 * single.channels,
        "{} vs {}",
        multi.channels,
        single.channels
    );
}
