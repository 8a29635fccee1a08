//! Memory stays bounded: 1,000 idle clients joined to rooms cost the server less than
//! `PER_CLIENT_BOUND` each, and all of it is released when they go.
//!
//! The server runs as the real binary in a child process, so its resident memory
//! (/proc/PID/statm) is measured apart from the 1,000 test clients. Needs about 2,100 open
//! files (1,000 sockets on each side plus slack): the test raises its soft RLIMIT_NOFILE to
//! the hard limit and fails with a clear message if that is too low (`ulimit -Hn`).

mod common;

use std::time::Duration;

use common::{Binary, Client, raise_fd_limit, swarm, wait_health_at};
use futures_util::future::join_all;

const CLIENTS: usize = 1000;
const ROOMS: usize = 10;
/// The bound asserted per idle, joined client.
const PER_CLIENT_BOUND: u64 = 32 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_idle_clients_stay_bounded() {
    let limit = raise_fd_limit();
    assert!(
        limit >= (2 * CLIENTS + 100) as libc::rlim_t,
        "open-file limit {limit} is too low for {CLIENTS} clients; raise `ulimit -Hn`"
    );
    tokio::time::timeout(Duration::from_secs(60), run())
        .await
        .expect("memory test took over 60 s");
}

async fn connect_batch(url: &str, first: usize, n: usize) -> Vec<Client> {
    join_all((first..first + n).map(|i| async move {
        let mut c = Client::connect(url).await;
        c.join(&swarm((i % ROOMS) as u32)).await;
        c
    }))
    .await
}

async fn run() {
    // All clients come from 127.0.0.1, in concurrent batches of 50.
    let mut server = Binary::start(&[
        "--max-connections",
        "2000",
        "--max-connections-per-ip",
        "2000",
        "--max-http-connections-per-ip",
        "256",
    ]);
    let url = server.url();
    // Warm up: runtime threads, allocator arenas, maps.
    for c in connect_batch(&url, 0, 50).await {
        c.close().await;
    }
    wait_health_at(server.addr, "warm-up gone", |h| h["connections"] == 0).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = server.rss_bytes();

    let mut clients = Vec::with_capacity(CLIENTS);
    for first in (0..CLIENTS).step_by(50) {
        clients.extend(connect_batch(&url, first, 50).await);
    }
    let h = wait_health_at(server.addr, "all joined", |h| {
        h["connections"] == CLIENTS && h["peers"] == CLIENTS
    })
    .await;
    assert_eq!(h["rooms"], ROOMS);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = server.rss_bytes();
    let per_client = after.saturating_sub(before) / CLIENTS as u64;
    eprintln!(
        "server RSS {} KiB -> {} KiB with {CLIENTS} idle clients: {} bytes per client",
        before / 1024,
        after / 1024,
        per_client
    );
    assert!(
        per_client < PER_CLIENT_BOUND,
        "{per_client} bytes per idle client (bound {PER_CLIENT_BOUND})"
    );

    // Everyone goes; the server forgets them all.
    while !clients.is_empty() {
        let batch: Vec<Client> = clients.drain(..clients.len().min(100)).collect();
        join_all(batch.into_iter().map(Client::close)).await;
    }
    let h = wait_health_at(server.addr, "all gone", |h| {
        h["connections"] == 0 && h["peers"] == 0 && h["rooms"] == 0
    })
    .await;
    assert_eq!(h["status"], "ok");
    let status = server.terminate();
    assert!(status.success(), "exit status {status}");
}
