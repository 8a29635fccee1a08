//! The process signals itself: SIGTERM, then SIGINT, each reported as what it is.
#![cfg(unix)]

use std::time::Duration;

use ppspp_shutdown::{ShutdownSignal, shutdown_signal};

async fn wait_for(signal: libc::c_int) -> ShutdownSignal {
    let waiting = tokio::spawn(shutdown_signal());
    // Let the task install its handlers before the signal is sent.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // SAFETY: kill(2) with our own pid and a signal number; no memory is involved.
    let sent = unsafe { libc::kill(libc::getpid(), signal) };
    assert_eq!(sent, 0, "kill failed");
    tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("resolved within 10 s")
        .expect("task")
}

#[tokio::test(flavor = "current_thread")]
async fn sigterm_and_sigint_are_told_apart() {
    assert_eq!(wait_for(libc::SIGTERM).await, ShutdownSignal::Terminate);
    assert_eq!(wait_for(libc::SIGINT).await, ShutdownSignal::Interrupt);
    assert_eq!(ShutdownSignal::Terminate.to_string(), "SIGTERM");
}
