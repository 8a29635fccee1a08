//! The UDP socket and the engine's clock shared by the transports (see `net.rs`).

use ppspp::time::Time;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::time::Instant;

/// Datagrams up to this size are accepted (an 8 KiB chunk plus hashes fits easily).
pub const RECV_BUFFER: usize = 65_536;
/// Kernel socket buffers asked for: enough for a window of 1 KiB datagrams at full speed.
const SOCKET_BUFFER: usize = 4 << 20;

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
pub struct Clock {
    start: Instant,
    /// The Unix time at `start`.
    unix_at_start: Duration,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
            // A clock set before 1970 is as good as any other base: only differences of
            // one-way delays matter to LEDBAT.
            unix_at_start: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default(),
        }
    }

    pub fn now(&self) -> Time {
        Time::from_micros(self.start.elapsed().as_micros() as u64)
    }

    pub fn instant(&self, t: Time) -> Instant {
        self.start + Duration::from_micros(t.as_micros())
    }

    /// For [`ppspp::engine::EngineConfig::wall_clock_offset`]: DATA timestamps on the Unix
    /// epoch, as libswift expects.
    pub fn wall_clock_offset(&self) -> Duration {
        self.unix_at_start
    }
}
