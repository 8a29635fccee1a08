//! A client's outbound queue (relayed signals, `peer-left` notices), bounded in bytes.
//!
//! Bytes, not messages, because a message can be anything from 60 bytes to
//! `max_message_bytes`: a count bound lets the memory of one queue vary by that factor.
//! Each sender has its own share of a recipient's queue, so no sender can fill it for the
//! others, and signals may fill only three quarters of it: the rest is kept for `peer-left`
//! notices, so a queue full of signals does not keep the room's departures out.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::ws::Utf8Bytes;
use tokio::sync::Notify;

/// What one queued message costs besides its text: the queue slot, the shared buffer's
/// header and the allocator's rounding.
pub(crate) const ENTRY_OVERHEAD: usize = 64;

/// The byte limits of every mailbox, from the `Config`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Everything queued for one client.
    pub total: usize,
    /// What signals (all senders together) may take: three quarters of `total`.
    pub signals: usize,
    /// What one sender's signals may take.
    pub per_sender: usize,
}

impl Budget {
    pub(crate) fn new(total: usize, per_sender: usize) -> Budget {
        let signals = total - total / 4;
        Budget {
            total,
            signals,
            per_sender: per_sender.min(signals),
        }
    }
}

/// Why a signal was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// This sender's share of the recipient's queue is full.
    SenderShare,
    /// The signals' part of the recipient's queue is full.
    Full,
}

impl Refused {
    /// What the sender is told (with `peer-busy`).
    pub(crate) fn explain(self) -> &'static str {
        match self {
            Refused::SenderShare => "too much from you is queued for this peer; not delivered",
            Refused::Full => "too much is queued for this peer; not delivered",
        }
    }
}

struct Entry {
    from: Option<u128>,
    text: Utf8Bytes,
    cost: usize,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Entry>,
    bytes: usize,
    per_sender: HashMap<u128, usize>,
    /// The registry removed this client (its queue overflowed): no more deliveries.
    closed: bool,
}

/// One client's queue. The registry pushes; the client's connection task pops.
pub(crate) struct Mailbox {
    state: Mutex<State>,
    ready: Notify,
    budget: Budget,
    /// Bytes queued in every mailbox of the server (for `/health`).
    queued: Arc<AtomicUsize>,
}

fn cost(text: &Utf8Bytes) -> usize {
    text.len() + ENTRY_OVERHEAD
}

impl Mailbox {
    pub(crate) fn new(budget: Budget, queued: Arc<AtomicUsize>) -> Mailbox {
        Mailbox {
            state: Mutex::new(State::default()),
            ready: Notify::new(),
            budget,
            queued,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent between statements, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, st: &mut State, entry: Entry) {
        st.bytes += entry.cost;
        self.queued.fetch_add(entry.cost, Ordering::Relaxed);
        st.queue.push_back(entry);
        self.ready.notify_one();
    }

    /// Queues a signal from `from` unless that would take the sender beyond its share or
    /// the signals beyond theirs.
    pub(crate) fn push_signal(&self, from: u128, text: Utf8Bytes) -> Result<(), Refused> {
        let cost = cost(&text);
        let mut st = self.lock();
        if st.closed {
            return Err(Refused::Full);
        }
        let mine = st.per_sender.get(&from).copied().unwrap_or(0);
        if mine + cost > self.budget.per_sender {
            return Err(Refused::SenderShare);
        }
        if st.bytes + cost > self.budget.signals {
            return Err(Refused::Full);
        }
        st.per_sender.insert(from, mine + cost);
        self.push(
            &mut st,
            Entry {
                from: Some(from),
                text,
                cost,
            },
        );
        Ok(())
    }

    /// Queues a notice from the server. `false` when even the notices' reserve is full: the
    /// client is not reading.
    pub(crate) fn push_notice(&self, text: Utf8Bytes) -> bool {
        let cost = cost(&text);
        let mut st = self.lock();
        if st.closed || st.bytes + cost > self.budget.total {
            return false;
        }
        self.push(
            &mut st,
            Entry {
                from: None,
                text,
                cost,
            },
        );
        true
    }

    /// Marks the mailbox closed (the client was removed as a slow reader) and frees what it
    /// held; the connection task sees `None` next.
    pub(crate) fn close(&self) {
        let mut st = self.lock();
        st.closed = true;
        self.queued.fetch_sub(st.bytes, Ordering::Relaxed);
        st.bytes = 0;
        st.queue = VecDeque::new();
        st.per_sender = HashMap::new();
        drop(st);
        self.ready.notify_one();
    }

    /// The next message if any; `Err` once closed.
    pub(crate) fn pop(&self) -> Result<Option<Utf8Bytes>, ()> {
        let mut st = self.lock();
        if st.closed {
            return Err(());
        }
        let Some(e) = st.queue.pop_front() else {
            return Ok(None);
        };
        st.bytes -= e.cost;
        self.queued.fetch_sub(e.cost, Ordering::Relaxed);
        if let Some(from) = e.from
            && let Some(n) = st.per_sender.get_mut(&from)
        {
            *n -= e.cost;
            if *n == 0 {
                st.per_sender.remove(&from);
            }
        }
        if st.queue.is_empty() && st.queue.capacity() > 64 {
            // A burst's slots are not kept for the life of the connection.
            st.queue.shrink_to(16);
        }
        Ok(Some(e.text))
    }

    #[cfg(test)]
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The next queued message; `None` once the mailbox is closed. Cancel-safe.
    pub(crate) async fn next(&self) -> Option<Utf8Bytes> {
        loop {
            match self.pop() {
                Ok(Some(text)) => return Some(text),
                Err(()) => return None,
                // `notify_one` stores a permit when nobody waits, so a push between the
                // pop and this wait is not missed.
                Ok(None) => self.ready.notified().await,
            }
        }
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        self.queued.fetch_sub(st.bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> Utf8Bytes {
        "x".repeat(n).into()
    }

    #[test]
    fn shares_and_reserve() {
        let queued = Arc::new(AtomicUsize::new(0));
        // 1000 bytes: 750 for signals, at most 400 from one sender.
        let m = Mailbox::new(Budget::new(1000, 400), queued.clone());
        assert_eq!(m.push_signal(1, text(236)), Ok(())); // costs 300
        assert_eq!(m.push_signal(1, text(136)), Err(Refused::SenderShare));
        assert_eq!(m.push_signal(2, text(336)), Ok(())); // 700 in all
        assert_eq!(m.push_signal(3, text(36)), Err(Refused::Full));
        // Notices use the reserve.
        assert!(m.push_notice(text(236)));
        assert!(!m.push_notice(text(36)));
        assert_eq!(queued.load(Ordering::Relaxed), 1000);
        assert_eq!(m.pop().map(|t| t.map(|t| t.len())), Ok(Some(236)));
        assert_eq!(m.pop().map(|t| t.map(|t| t.len())), Ok(Some(336)));
        // Sender 1's share is free again, and the signals' part has room.
        assert_eq!(m.push_signal(1, text(336)), Ok(()));
        assert_eq!(queued.load(Ordering::Relaxed), 700);
        m.close();
        assert_eq!(queued.load(Ordering::Relaxed), 0);
        assert!(m.pop().is_err());
        assert!(!m.push_notice(text(1)));
    }

    #[test]
    fn dropping_releases_the_count() {
        let queued = Arc::new(AtomicUsize::new(0));
        let m = Mailbox::new(Budget::new(1000, 400), queued.clone());
        assert!(m.push_notice(text(10)));
        drop(m);
        assert_eq!(queued.load(Ordering::Relaxed), 0);
    }
}
