//! How much a connection's kernel send buffer may hold unsent. Linux grows a TCP send
//! buffer to megabytes for a receiver that reads slowly, and wakes a blocked writer only
//! once half of it has drained, which for a slow reader outlasts `write_timeout`: a client
//! that read steadily was dropped as if it did not read at all. `TCP_NOTSENT_LOWAT` keeps
//! the unsent bytes near one message, so a write waits for about one message's worth of
//! the client's reading.

/// Unsent bytes a connection's kernel buffer may hold before a write waits: a little over
/// one signal (`max_message_bytes` is 16 KiB by default).
pub const UNSENT_LOW_WATER: u32 = 16 * 1024;

/// Applies [`UNSENT_LOW_WATER`] to an accepted connection (Linux; elsewhere nothing).
pub fn limit_unsent(stream: &tokio::net::TcpStream) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let value: libc::c_int = UNSENT_LOW_WATER as libc::c_int;
        // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from `value`, which lives
        // across the call, on a descriptor the stream owns.
        let r = unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_NOTSENT_LOWAT,
                (&raw const value).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stream;
    Ok(())
}
