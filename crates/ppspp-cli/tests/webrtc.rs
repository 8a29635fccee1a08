//! `ppspp seed --signal` and `ppspp fetch` over WebRTC data channels on loopback, as a user
//! runs them: an in-process signaling server, real `ppspp` processes, every wait bounded.

mod common;

use common::{content, finish, ppspp, spawn, spawn_command, stderr, temp_dir};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A task on its own thread and tokio runtime, stopped and joined when dropped.
struct Background {
    stop: mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Runs `task(ready, stop)` and waits (10 s at most) for the value it sends on `ready`;
    /// the task should end soon after [`stopped`] says so.
    fn spawn<T, F, Fut>(task: F) -> (Background, T)
    where
        T: Send + 'static,
        F: FnOnce(mpsc::Sender<T>, mpsc::Receiver<()>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()>,
    {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop, stop_rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(task(ready_tx, stop_rx));
        });
        let value = ready_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("background task started");
        let bg = Background {
            stop,
            thread: Some(thread),
        };
        (bg, value)
    }
}

/// True once the owner of the [`Background`] dropped it.
fn stopped(stop: &mpsc::Receiver<()>) -> bool {
    !matches!(stop.try_recv(), Err(mpsc::TryRecvError::Empty))
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A signaling server on its own thread and runtime, shut down when dropped.
struct Signal {
    url: String,
    _running: Background,
}

impl Signal {
    fn start() -> Signal {
        let (running, url) = Background::spawn(|ready, stop| async move {
            let server = ppspp_signal::spawn(
                "127.0.0.1:0".parse().unwrap(),
                ppspp_signal::Config::default(),
            )
            .await
            .unwrap();
            ready.send(server.url()).unwrap();
            while !stopped(&stop) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let _ = server.shutdown().await;
        });
        Signal {
            url,
            _running: running,
        }
    }
}

#[test]
fn three_fetchers_get_identical_files_over_webrtc() {
    let signal = Signal::start();
    let dir = temp_dir("three");
    let data = content(3 * 1024 * 1024 + 77, 3);
    let file = dir.join("video.webm");
    std::fs::write(&file, &data).unwrap();
    let seeder = spawn(&["seed", file.to_str().unwrap(), "--signal", &signal.url]);
    let uri = seeder
        .lines
        .recv_timeout(Duration::from_secs(30))
        .expect("the seeder prints its URI");
    assert!(uri.starts_with("ppspp://"), "first line is the URI: {uri}");
    assert!(uri.contains("signal="), "{uri}");
    // No UDP peer in the URI: every byte must come over WebRTC.
    assert!(!uri.contains("udp="), "{uri}");

    let started = Instant::now();
    let outputs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("out{i}.webm"))).collect();
    let fetchers: Vec<Child> = outputs
        .iter()
        .map(|o| {
            ppspp()
                .args(["fetch", &uri, "-o", o.to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, (f, out)) in fetchers.into_iter().zip(&outputs).enumerate() {
        let o = finish(f, Duration::from_secs(60), &format!("fetch {i}"));
        assert!(o.status.success(), "fetch {i}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("chunks verified, 0 rejected"),
            "{}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(out).unwrap(), data, "fetch {i} identical");
    }
    eprintln!("three WebRTC fetches done in {:?}", started.elapsed());
    drop(seeder);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn chunks_share_messages_to_a_fetcher_that_reads_them_so() {
    let signal = Signal::start();
    let dir = temp_dir("batches");
    let data = content(2 * 1024 * 1024 + 5, 4);
    let file = dir.join("video.webm");
    std::fs::write(&file, &data).unwrap();
    let seeder = spawn(&["seed", file.to_str().unwrap(), "--signal", &signal.url]);
    let uri = seeder
        .lines
        .recv_timeout(Duration::from_secs(30))
        .expect("the seeder prints its URI");
    let chunks = data.len().div_ceil(1024);
    // One fetcher at a time, so every datagram it gets is the seeder's.
    let mut got = Vec::new();
    for (i, batch) in ["32768", "0"].into_iter().enumerate() {
        let out = dir.join(format!("out{i}.webm"));
        let f = ppspp()
            .args(["fetch", &uri, "-o", out.to_str().unwrap()])
            .args(["--data-batch-bytes", batch])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let o = finish(f, Duration::from_secs(60), &format!("fetch {i}"));
        assert!(o.status.success(), "fetch {i}: {}", stderr(&o));
        assert!(stderr(&o).contains("chunks verified, 0 rejected"));
        assert_eq!(std::fs::read(&out).unwrap(), data, "fetch {i} identical");
        got.push(datagrams_received(&stderr(&o)));
    }
    // 1 KiB chunks: about 30 to a message to the fetcher that said it reads them so (fewer
    // while the young connection's path loses some), one each to the other.
    assert!(
        got[0] * 3 < chunks,
        "{} datagrams for {chunks} chunks",
        got[0]
    );
    assert!(got[1] >= chunks, "{} datagrams for {chunks} chunks", got[1]);
    drop(seeder);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The datagram count of `ppspp fetch`'s summary line.
fn datagrams_received(stderr: &str) -> usize {
    stderr
        .lines()
        .find_map(|l| l.strip_suffix(" datagrams received"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no datagram count in {stderr}"))
}

#[test]
fn a_bare_root_hash_is_enough_over_webrtc() {
    let signal = Signal::start();
    let dir = temp_dir("bareroot");
    let data = content(700 * 1024 + 9, 8);
    let file = dir.join("video.webm");
    std::fs::write(&file, &data).unwrap();
    let seeder = spawn(&[
        "seed",
        file.to_str().unwrap(),
        "--signal",
        &signal.url,
        "--chunk-size",
        "8192",
    ]);
    let uri = seeder
        .lines
        .recv_timeout(Duration::from_secs(30))
        .expect("the seeder prints its URI");
    let root = uri["ppspp://".len()..]
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let out = dir.join("out.webm");
    let f = ppspp()
        .args([
            "fetch",
            &root,
            "--signal",
            &signal.url,
            "-o",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(f, Duration::from_secs(60), "fetch by root");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("in chunks of 8192 bytes"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&out).unwrap(), data);
    drop(seeder);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TLS front on 127.0.0.1 for a plain `ws://` server, as a deployment puts a
/// TLS-terminating proxy before `ppspp-signal`: a self-signed certificate for 127.0.0.1,
/// written as PEM for the clients to trust (SSL_CERT_FILE).
struct TlsFront {
    url: String,
    cert_pem: PathBuf,
    _running: Background,
}

impl TlsFront {
    fn start(plain_url: &str, dir: &std::path::Path) -> TlsFront {
        use tokio_rustls::rustls;
        let backend = plain_url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let cert_pem = dir.join("signal-cert.pem");
        std::fs::write(&cert_pem, cert.cert.pem()).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        let (running, port) = Background::spawn(move |ready, stop| async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ready.send(listener.local_addr().unwrap().port()).unwrap();
            while !stopped(&stop) {
                let accepted =
                    tokio::time::timeout(Duration::from_millis(50), listener.accept()).await;
                let Ok(Ok((tcp, _))) = accepted else { continue };
                let (acceptor, backend) = (acceptor.clone(), backend.clone());
                tokio::spawn(async move {
                    // A client that does not trust us fails the handshake: nothing to do.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(&backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        TlsFront {
            url: format!("wss://127.0.0.1:{port}/ws"),
            cert_pem,
            _running: running,
        }
    }
}

#[test]
fn signaling_over_wss() {
    let signal = Signal::start();
    let dir = temp_dir("wss");
    let front = TlsFront::start(&signal.url, &dir);
    let data = content(200 * 1024 + 3, 9);
    let file = dir.join("video.webm");
    std::fs::write(&file, &data).unwrap();
    let mut seed = ppspp();
    seed.args(["seed", file.to_str().unwrap(), "--signal", &front.url])
        .env("SSL_CERT_FILE", &front.cert_pem);
    let seeder = spawn_command(seed);
    let uri = seeder
        .lines
        .recv_timeout(Duration::from_secs(30))
        .expect("the seeder prints its URI");
    assert!(
        uri.contains("signal=wss%3A%2F%2F127.0.0.1") || uri.contains("signal=wss://127.0.0.1"),
        "{uri}"
    );
    let out = dir.join("out.webm");
    let f = ppspp()
        .args(["fetch", &uri, "-o", out.to_str().unwrap()])
        .env("SSL_CERT_FILE", &front.cert_pem)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(f, Duration::from_secs(60), "fetch over wss");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), data);

    // A certificate nobody vouches for is refused, and said so.
    let f = ppspp()
        .args(["fetch", &uri, "-o", dir.join("x").to_str().unwrap()])
        .env_remove("SSL_CERT_FILE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(
        f,
        Duration::from_secs(30),
        "fetch with an untrusted certificate",
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot reach the signaling server")
            && stderr(&o).contains("certificate"),
        "{}",
        stderr(&o)
    );
    drop(seeder);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unreachable_signaling_server_fails_cleanly() {
    let dir = temp_dir("unreachable");
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let uri = format!(
        "ppspp://c89800bfc82ed01ed6e3bfd5408c51274491f7d4?len=26121&signal=ws%3A%2F%2F127.0.0.1%3A{port}%2Fws"
    );
    let out = dir.join("copy.webm");
    let child = ppspp()
        .args(["fetch", &uri, "-o", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(child, Duration::from_secs(30), "fetch");
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("cannot reach the signaling server")
            && err.contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
    assert!(
        common::files_in(&dir).is_empty(),
        "no output or partial file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fetch_from_an_empty_room_fails_cleanly() {
    let signal = Signal::start();
    let dir = temp_dir("empty");
    let uri = format!(
        "ppspp://c89800bfc82ed01ed6e3bfd5408c51274491f7d4?len=26121&signal={}",
        signal.url
    );
    let out = dir.join("copy.webm");
    let child = ppspp()
        .args(["fetch", &uri, "-o", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = finish(child, Duration::from_secs(30), "fetch");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("nobody else is in the swarm's room"),
        "{}",
        stderr(&o)
    );
    assert!(
        common::files_in(&dir).is_empty(),
        "no output or partial file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
