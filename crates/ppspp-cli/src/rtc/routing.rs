//! Which connection an incoming datagram is for. One UDP socket carries every peer
//! connection (and the STUN/TURN clients), so each datagram is routed: to the connection
//! that took the last one on the same address pair, and only on a miss by asking every
//! connection. Apart because it is the transport's hot path.

use super::RtcTransport;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Instant;

impl RtcTransport {
    /// The datagram [`recv`](Self::recv) returned (`n` bytes from `from`, none on an
    /// error), then whatever else already arrived on the socket.
    pub(super) fn on_datagrams(&mut self, n: usize, from: SocketAddr) {
        if n > 0 {
            self.handle_datagram(n, from);
        }
        loop {
            match self.socket.try_recv_from(&mut self.buf) {
                Ok((n, from)) => self.handle_datagram(n, from),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
    }

    fn handle_datagram(&mut self, n: usize, from: SocketAddr) {
        let now = Instant::now();
        if let Some(g) = self.gatherer.as_mut()
            && g.owns(from)
        {
            g.handle(now, from, &self.buf[..n]);
            self.after_gatherer(now);
            return;
        }
        let data = std::mem::take(&mut self.buf);
        self.receive(now, from, self.local, &data[..n]);
        self.buf = data;
    }

    /// A datagram from `from` to our address `to` (the socket's, or a relayed one).
    pub(super) fn receive(&mut self, now: Instant, from: SocketAddr, to: SocketAddr, data: &[u8]) {
        let routed = self.routes.get(&(from, to)).copied().filter(|id| {
            self.conns
                .get_mut(id)
                .is_some_and(|c| !c.dead && c.pc.accepts(from, to, data))
        });
        let id = match routed {
            Some(id) => id,
            None => {
                let Some(&id) = self
                    .conns
                    .iter_mut()
                    .find(|(_, c)| !c.dead && c.pc.accepts(from, to, data))
                    .map(|(id, _)| id)
                else {
                    return;
                };
                self.routes.insert((from, to), id);
                id
            }
        };
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.pc.receive(now, from, to, data).is_err() {
            conn.dead = true;
        }
        self.drain(id);
    }
}
