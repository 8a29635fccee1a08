//! UDP datagrams sent a batch at a time: with small chunks a system call per datagram was
//! a large part of a seeder's time (BENCHMARKS.md, "Native UDP at 1 KiB: where the time
//! goes"). On Linux one `sendmmsg` sends a batch; elsewhere each goes on its own.

use std::io::{self, ErrorKind};
use std::net::SocketAddr;
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Datagrams sent in one call at most: enough to spread the call's cost, few enough that
/// the first of a batch does not wait long for the last to be built.
pub const BATCH: usize = 32;
/// A batch holding this many bytes goes at once, however few its datagrams: large
/// datagrams gain little from batching, and a burst of them lands in the receiver's
/// socket buffer at once.
pub const BATCH_BYTES: usize = 64 * 1024;

/// Datagrams written by the engine and not yet sent, each in a buffer of its own that is
/// reused for the next batch.
#[derive(Debug)]
pub struct SendBatch {
    bufs: Vec<Vec<u8>>,
    to: Vec<SocketAddr>,
    bytes: usize,
}

impl Default for SendBatch {
    fn default() -> SendBatch {
        SendBatch {
            bufs: (0..BATCH).map(|_| Vec::new()).collect(),
            to: Vec::with_capacity(BATCH),
            bytes: 0,
        }
    }
}

impl SendBatch {
    /// The buffer the next datagram is to be written into.
    pub fn next_buf(&mut self) -> &mut Vec<u8> {
        &mut self.bufs[self.to.len()]
    }

    /// The datagram just written into [`next_buf`](Self::next_buf) goes to `to`. True
    /// when the batch is full and must be sent before the next.
    pub fn push(&mut self, to: SocketAddr) -> bool {
        self.bytes += self.bufs[self.to.len()].len();
        self.to.push(to);
        self.to.len() == BATCH || self.bytes >= BATCH_BYTES
    }

    /// How many datagrams wait.
    pub fn len(&self) -> usize {
        self.to.len()
    }

    pub fn is_empty(&self) -> bool {
        self.to.is_empty()
    }

    /// Sends every waiting datagram, waiting while the socket's buffer is full. One the
    /// kernel refuses (an ICMP error from a peer that went away, say) is dropped: a lost
    /// datagram, which the protocol recovers from.
    pub async fn send(&mut self, socket: &UdpSocket) {
        let mut sent = 0;
        while sent < self.to.len() {
            let bufs = &self.bufs[sent..self.to.len()];
            let to = &self.to[sent..];
            match socket.try_io(Interest::WRITABLE, || send_many(socket, bufs, to)) {
                Ok(n) => sent += n.max(1),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if socket.writable().await.is_err() {
                        break;
                    }
                }
                Err(_) => sent += 1,
            }
        }
        self.to.clear();
        self.bytes = 0;
    }
}

/// Sends the first datagrams of `bufs` to `to`; how many went.
#[cfg(target_os = "linux")]
fn send_many(socket: &UdpSocket, bufs: &[Vec<u8>], to: &[SocketAddr]) -> io::Result<usize> {
    use rustix::net::{MMsgHdr, SendAncillaryBuffer, SendFlags, SocketAddrAny, sendmmsg};
    use std::io::IoSlice;
    let addrs: Vec<SocketAddrAny> = to.iter().map(|a| SocketAddrAny::from(*a)).collect();
    let iovs: Vec<[IoSlice<'_>; 1]> = bufs.iter().map(|b| [IoSlice::new(b)]).collect();
    let mut controls: Vec<SendAncillaryBuffer<'_, '_, '_>> = (0..to.len())
        .map(|_| SendAncillaryBuffer::default())
        .collect();
    let mut msgs: Vec<MMsgHdr<'_>> = addrs
        .iter()
        .zip(&iovs)
        .zip(controls.iter_mut())
        .map(|((addr, iov), control)| MMsgHdr::new_with_addr(addr, iov, control))
        .collect();
    Ok(sendmmsg(socket, &mut msgs, SendFlags::empty())?)
}

#[cfg(not(target_os = "linux"))]
fn send_many(socket: &UdpSocket, bufs: &[Vec<u8>], to: &[SocketAddr]) -> io::Result<usize> {
    socket.try_send_to(&bufs[0], to[0]).map(|_| 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_arrives_whole_and_in_order_to_each_address() {
        let sender = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let mut batch = SendBatch::default();
        let mut expected = (Vec::new(), Vec::new());
        for i in 0..(BATCH + 5) {
            let datagram: Vec<u8> = (0..(100 + i)).map(|j| (i * 3 + j) as u8).collect();
            let buf = batch.next_buf();
            buf.clear();
            buf.extend_from_slice(&datagram);
            let to = if i % 3 == 0 {
                expected.1.push(datagram);
                b.local_addr().unwrap()
            } else {
                expected.0.push(datagram);
                a.local_addr().unwrap()
            };
            if batch.push(to) {
                assert_eq!(i, BATCH - 1, "full at BATCH datagrams");
                batch.send(&sender).await;
                assert!(batch.is_empty());
            }
        }
        assert_eq!(batch.len(), 5);
        batch.send(&sender).await;
        for (socket, want) in [(&a, expected.0), (&b, expected.1)] {
            let mut buf = vec![0u8; 2048];
            for datagram in want {
                let (n, from) = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    socket.recv_from(&mut buf),
                )
                .await
                .expect("arrives")
                .unwrap();
                assert_eq!(from, sender.local_addr().unwrap());
                assert_eq!(&buf[..n], &datagram[..]);
            }
        }
    }

    #[test]
    fn a_batch_of_large_datagrams_is_full_at_its_byte_bound() {
        let mut batch = SendBatch::default();
        let to: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let full_at = BATCH_BYTES.div_ceil(8192);
        for i in 1..=full_at {
            batch.next_buf().resize(8192, 0);
            assert_eq!(batch.push(to), i == full_at, "datagram {i}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_refused_datagram_is_dropped_and_the_rest_go() {
        let sender = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let mut batch = SendBatch::default();
        // Port 0 cannot be sent to: the kernel refuses that datagram alone.
        for (to, payload) in [
            ("127.0.0.1:0".parse().unwrap(), b"lost".as_slice()),
            (a.local_addr().unwrap(), b"kept".as_slice()),
        ] {
            let buf = batch.next_buf();
            buf.clear();
            buf.extend_from_slice(payload);
            batch.push(to);
        }
        batch.send(&sender).await;
        let mut buf = [0u8; 16];
        let (n, _) = tokio::time::timeout(std::time::Duration::from_secs(5), a.recv_from(&mut buf))
            .await
            .expect("arrives")
            .unwrap();
        assert_eq!(&buf[..n], b"kept");
    }
}
