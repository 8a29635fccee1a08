//! A connection's own queue in front of the WebRTC stack's buffer. Apart because it is a
//! policy of its own, shared with the page's client: what does not fit in the stack's
//! buffer waits here, so that the engine's LEDBAT sees a burst as delay, not as loss.

use super::peer_conn::PeerConn;
use std::collections::VecDeque;
use std::time::Instant;

/// At most this much is handed to the WebRTC stack: a large queue on an unordered,
/// unreliable channel mostly gets lost anyway. The page's client follows the same rule
/// (both are checked against tests/policy/adapters.json).
pub const MAX_BUFFERED: usize = 64 * 1024;
/// Messages beyond [`MAX_BUFFERED`] wait in the connection's queue up to this many bytes,
/// so LEDBAT sees slow start's overshoot as delay; more are dropped (a loss PPSPP recovers
/// from).
pub const MAX_QUEUED: usize = 2 * 1024 * 1024;

/// Messages not yet handed to the WebRTC stack, and their bytes.
#[derive(Default)]
pub(super) struct SendQueue {
    messages: VecDeque<Vec<u8>>,
    bytes: usize,
}

impl SendQueue {
    /// Queues `data`; false, and nothing queued, when that would pass [`MAX_QUEUED`].
    pub(super) fn push(&mut self, data: &[u8]) -> bool {
        if self.bytes + data.len() > MAX_QUEUED {
            return false;
        }
        self.bytes += data.len();
        self.messages.push_back(data.to_vec());
        true
    }

    /// The bytes waiting.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Hands the next message to `pc` while its buffer holds at most [`MAX_BUFFERED`]:
    /// `None` when nothing was handed, else whether the stack took it. Each write is a
    /// mutation of `pc`, so its output must be drained after it.
    pub(super) fn hand_one(&mut self, pc: &mut dyn PeerConn) -> Option<bool> {
        let msg = self.messages.front()?;
        if pc.buffered_amount().is_none_or(|b| b > MAX_BUFFERED) {
            return None;
        }
        let written = pc.write(Instant::now(), msg);
        self.bytes -= msg.len();
        self.messages.pop_front();
        Some(written)
    }
}
