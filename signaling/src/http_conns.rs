//! The HTTP connections not (yet) upgraded, oldest first, so that a full server can make
//! room. Per-address limits keep one address from taking every slot, but a few addresses
//! with half-sent request heads still could, for the header timeout, in waves. A request
//! head a real client sends arrives within a round trip, so when every slot is taken, the
//! connection open longest, if it has been open for `EVICT_AFTER`, is closed for the new
//! one: a slow sender of heads then only ever displaces another.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

/// How long an HTTP connection must have been open to be closed for a newcomer when
/// every slot is taken.
pub(crate) const EVICT_AFTER: Duration = Duration::from_secs(1);

/// The open HTTP connections by age.
#[derive(Default)]
pub(crate) struct HttpConns {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    /// By id, which grows with age: (opened at, closes it when sent or dropped).
    open: BTreeMap<u64, (Instant, oneshot::Sender<()>)>,
}

/// One registered connection: its id, and what resolves when it is evicted.
pub(crate) struct Registered {
    pub(crate) id: u64,
    pub(crate) evicted: oneshot::Receiver<()>,
}

impl HttpConns {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Each update is one statement, so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn register(&self) -> Registered {
        let (tx, evicted) = oneshot::channel();
        let mut inner = self.lock();
        let id = inner.next;
        inner.next += 1;
        inner.open.insert(id, (Instant::now(), tx));
        Registered { id, evicted }
    }

    pub(crate) fn unregister(&self, id: u64) {
        self.lock().open.remove(&id);
    }

    /// Closes the oldest connection if it has been open for `EVICT_AFTER`; whether one was.
    pub(crate) fn evict_oldest(&self) -> bool {
        let mut inner = self.lock();
        let Some(entry) = inner.open.first_entry() else {
            return false;
        };
        if entry.get().0.elapsed() < EVICT_AFTER {
            return false;
        }
        let (_, close) = entry.remove();
        let _ = close.send(());
        true
    }
}
