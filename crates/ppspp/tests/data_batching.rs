//! DATA sharing datagrams: a peer told its transport takes batches
//! (`Engine::set_data_batching`) puts several chunks, each with its hashes, in one datagram
//! while its path loses nothing, and the receiver verifies each as if it came alone.

use crate::common;

use common::engines::pair;
use common::virtual_net::VirtualNet as Net;
use ppspp::codec::{CodecConfig, Message, decode_datagram};
use ppspp::engine::EngineConfig;
use ppspp::time::Time;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

const CS: usize = 1024;

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 11 + i / 997) as u8).collect()
}

/// What the seeder's datagrams held: (length, DATA messages) of each with DATA.
type Seen = Rc<RefCell<Vec<(usize, usize)>>>;

fn watch(net: &mut Net) -> Seen {
    let seen: Seen = Rc::default();
    let log = seen.clone();
    let codec = CodecConfig {
        chunk_size: CS as u32,
        ..CodecConfig::default()
    };
    net.observer = Some(Box::new(move |from, _to, bytes| {
        if from != 0 {
            return;
        }
        let Ok(d) = decode_datagram(bytes, &codec) else {
            return;
        };
        let data = d
            .messages()
            .filter(|m| matches!(m, Ok(Message::Data { .. })))
            .count();
        if data > 0 {
            log.borrow_mut().push((bytes.len(), data));
        }
    }));
    seen
}

/// Runs the pair until the leecher holds everything; returns what the seeder sent.
fn fetch(data: &[u8], batch: Option<usize>, loss_per_mille: u64) -> Vec<(usize, usize)> {
    let mut nodes = pair(data, CS, EngineConfig::default());
    nodes[0].set_data_batching(&1, batch);
    let mut net = Net::new(Duration::from_millis(5), loss_per_mille, 7);
    let seen = watch(&mut net);
    let end = net.run(&mut nodes, Time::from_millis(120_000), |n| {
        n[1].is_complete()
    });
    assert!(
        nodes[1].is_complete(),
        "incomplete at {end:?}: {:?}",
        nodes[1].stats()
    );
    assert_eq!(nodes[1].store().bytes(), data);
    assert_eq!(nodes[1].stats().chunks_rejected, 0);
    seen.take()
}

#[test]
fn a_batching_peer_sends_several_chunks_per_datagram_within_its_limit() {
    let data = content(600 * CS + 300);
    let batched = fetch(&data, Some(8 * 1024), 0);
    let chunks: usize = batched.iter().map(|&(_, n)| n).sum();
    assert!(chunks >= 601, "every chunk went: {chunks}");
    let most = batched.iter().map(|&(_, n)| n).max().unwrap();
    assert!(most >= 4, "batches of up to {most} chunks");
    assert!(
        batched.len() * 2 < chunks,
        "{} datagrams for {chunks} chunks",
        batched.len()
    );
    assert!(
        batched.iter().all(|&(len, _)| len <= 8 * 1024),
        "{batched:?}"
    );
    // Without batching, one chunk per datagram.
    let single = fetch(&data, None, 0);
    assert!(single.iter().all(|&(_, n)| n == 1));
    assert!(single.len() >= 601);
}

#[test]
fn batches_stop_while_the_path_loses_datagrams_and_the_content_still_arrives() {
    let data = content(400 * CS);
    // Verified and complete through loss, with the lost batches' chunks sent again.
    let lossy = fetch(&data, Some(8 * 1024), 30);
    let chunks: usize = lossy.iter().map(|&(_, n)| n).sum();
    let clean = fetch(&data, Some(8 * 1024), 0);
    let clean_chunks: usize = clean.iter().map(|&(_, n)| n).sum();
    // On the clean path nearly every chunk shares its datagram; on the lossy one most
    // go alone, each loss holding batches back for a while.
    let alone = |seen: &[(usize, usize)]| seen.iter().filter(|&&(_, n)| n == 1).count();
    assert!(
        alone(&clean) * 4 < clean_chunks,
        "clean: {} alone of {clean_chunks}",
        alone(&clean)
    );
    assert!(
        alone(&lossy) * 2 > chunks,
        "lossy: {} alone of {chunks}",
        alone(&lossy)
    );
}
