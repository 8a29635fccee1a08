//! Drives one engine over one UDP socket: every peer shares the socket, and one task
//! alternates between datagrams, the engine's timer and the stats tick. The engine decides
//! everything; this loop only moves bytes and time.

use crate::stats::StatsPrinter;
use ppspp::engine::{Engine, Event};
use ppspp::store::ChunkStore;
use ppspp::time::Time;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::time::Instant;

/// Datagrams up to this size are accepted (an 8 KiB chunk plus hashes fits easily).
const RECV_BUFFER: usize = 65_536;
/// Kernel socket buffers asked for: enough for a window of 1 KiB datagrams at full speed.
const SOCKET_BUFFER: usize = 4 << 20;

/// What the event handler tells the loop.
pub enum Flow {
    Continue,
    Stop,
}

/// Binds a UDP socket with large kernel buffers.
pub fn bind(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let domain = socket2::Domain::for_address(addr);
    let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    // Best effort: the kernel caps these at its own limits.
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    UdpSocket::from_std(socket.into())
}

/// The engine's clock: microseconds since the loop started.
pub struct Clock(Instant);

impl Clock {
    pub fn new() -> Clock {
        Clock(Instant::now())
    }

    pub fn now(&self) -> Time {
        Time::from_micros(self.0.elapsed().as_micros() as u64)
    }

    fn instant(&self, t: Time) -> Instant {
        self.0 + Duration::from_micros(t.as_micros())
    }
}

/// Runs until `on_event` says stop or `stop` resolves.
pub async fn run<S: ChunkStore>(
    engine: &mut Engine<SocketAddr, S>,
    socket: &UdpSocket,
    clock: &Clock,
    mut stats: Option<StatsPrinter>,
    mut on_event: impl FnMut(&mut Engine<SocketAddr, S>, Event<SocketAddr>) -> Flow,
    stop: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut buf = vec![0u8; RECV_BUFFER];
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        flush(engine, socket, clock).await;
        while let Some(event) = engine.poll_event() {
            if let Flow::Stop = on_event(engine, event) {
                flush(engine, socket, clock).await;
                if let Some(s) = stats.as_mut() {
                    s.print(engine, clock.now());
                }
                return;
            }
        }
        let deadline = engine
            .poll_timeout()
            .map(|t| clock.instant(t))
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            received = socket.recv_from(&mut buf) => {
                if let Ok((n, from)) = received {
                    engine.handle_datagram(clock.now(), from, &buf[..n]);
                }
                // Take whatever else already arrived before answering: fewer wake-ups.
                loop {
                    match socket.try_recv_from(&mut buf) {
                        Ok((n, from)) => engine.handle_datagram(clock.now(), from, &buf[..n]),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        // ICMP errors from peers that went away surface here; the engine's
                        // timers deal with those peers.
                        Err(_) => break,
                    }
                }
            }
            _ = tokio::time::sleep_until(deadline) => engine.handle_timeout(clock.now()),
            _ = tick.tick(), if stats.is_some() => {
                if let Some(s) = stats.as_mut() {
                    s.print(engine, clock.now());
                }
            }
            _ = &mut stop => {
                engine.close_all();
                flush(engine, socket, clock).await;
                if let Some(s) = stats.as_mut() {
                    s.print(engine, clock.now());
                }
                return;
            }
        }
    }
}

async fn flush<S: ChunkStore>(
    engine: &mut Engine<SocketAddr, S>,
    socket: &UdpSocket,
    clock: &Clock,
) {
    while let Some(t) = engine.poll_transmit(clock.now()) {
        // A failed send is a lost datagram; the protocol recovers from those.
        let _ = socket.send_to(&t.payload, t.to).await;
    }
}
