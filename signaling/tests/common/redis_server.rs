//! A throwaway `redis-server` on a loopback port, for the tests of rooms in Redis. It keeps
//! nothing on disk, and is killed when dropped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    pub addr: SocketAddr,
    child: Option<Child>,
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

impl RedisServer {
    pub fn start() -> RedisServer {
        let mut server = RedisServer {
            addr: SocketAddr::from(([127, 0, 0, 1], free_port())),
            child: None,
        };
        server.run();
        server
    }

    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    fn run(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port"])
            .arg(self.addr.port().to_string())
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("redis-server not found: scripts/setup.sh web installs it");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.answers() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether it answers PING.
    fn answers(&self) -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let mut reply = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok()
            && s.read_exact(&mut reply).is_ok()
            && &reply == b"+PONG\r\n"
    }

    /// Kills it at once (SIGKILL): everything it held is lost.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops it (SIGSTOP) or lets it go on (SIGCONT): a stall, with its connections
    /// and data kept, as a swapped-out or overloaded Redis.
    pub fn stall(&self, stopped: bool) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let signal = if stopped { "-STOP" } else { "-CONT" };
        let ok = Command::new("kill")
            .args([signal, &pid])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {signal} {pid}");
    }

    /// Starts it again, empty, on the same port.
    pub fn restart(&mut self) {
        self.kill();
        self.run();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}
