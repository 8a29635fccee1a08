//! The graceful-shutdown trigger of the native programs: the `ppspp` peer (`seed`,
//! `fetch`) and the `ppspp-signal` server both stop cleanly when [`shutdown_signal`]
//! resolves.
//!
//! It is its own crate because both need it and neither should depend on the other for it:
//! the CLI would otherwise build the server's HTTP stack, and the server has no business
//! depending on the CLI.

use std::fmt;

/// Which signal asked the process to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownSignal {
    /// SIGINT: Ctrl-C in the terminal.
    Interrupt,
    /// SIGTERM: `kill`, systemd, a container runtime (Unix only).
    Terminate,
}

impl fmt::Display for ShutdownSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShutdownSignal::Interrupt => "SIGINT",
            ShutdownSignal::Terminate => "SIGTERM",
        })
    }
}

/// Resolves when the process receives SIGINT (Ctrl-C) or, on Unix, SIGTERM, and says which.
///
/// The handlers are installed when the future is first polled, on the current tokio
/// runtime (which needs its I/O driver enabled). A handler that cannot be installed never
/// fires: the process then runs until it is killed instead of stopping at once.
pub async fn shutdown_signal() -> ShutdownSignal {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => ShutdownSignal::Interrupt,
        _ = terminate => ShutdownSignal::Terminate,
    }
}
