//! `ppspp live`: reads a live WebM or fragmented MP4 stream from stdin, cuts it into
//! chunks at media segment boundaries, each segment with the initialisation segment in
//! front of it, signs them as they come (RFC 7574 §6.1, Unified Merkle Tree) and serves
//! them; prints the live URI first.

pub mod error;
pub mod key_file;
pub mod record;
pub mod segmenter;

use crate::net;
use crate::root::parse_chunk_size;
use crate::serve::{ListenArgs, Reports};
use crate::stats::StatsPrinter;
use crate::udp::Clock;
use clap::Args;
use error::{ChunkSizeTooLarge, InputError, KeyFileError, LiveError};
use ppspp::engine::{Engine, EngineConfig, LiveInfo, LiveParams};
use ppspp::live::LiveUri;
use ppspp::live::uri::DEFAULT_DISCARD_WINDOW;
use ppspp::live::{LiveAlgorithm, LiveSigningKey};
use ppspp::merkle::HashAlgorithm;
use ppspp::store::SparseStore;
use segmenter::{Chunker, Segmenter};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Seconds of a presentation's rendition its live swarm keeps (a player starts a few
/// segments behind the edge and may go back a little further).
pub const RENDITION_WINDOW_SECS: u64 = 45;

#[derive(Args, Debug)]
pub struct LiveArgs {
    /// Chunk size in bytes (1 to 1 MiB). Chunks are also cut where a media segment
    /// starts or ends, so some are shorter.
    #[arg(long = "chunk-size", default_value_t = 1024, value_parser = parse_chunk_size)]
    chunk_size: usize,
    /// Upload limit in bytes per second.
    #[arg(long = "upload-limit")]
    upload_limit: Option<u64>,
    /// Print one JSON line of figures per second on stdout (after the URI line).
    #[arg(long = "stats-json")]
    stats_json: bool,
    #[command(flatten)]
    source: LiveSourceArgs,
}

/// How a live source signs and serves: what `ppspp live` and `ppspp hls live` share.
#[derive(Args, Debug)]
pub struct LiveSourceArgs {
    #[command(flatten)]
    pub listen: ListenArgs,
    /// The signing key: read if the file exists, else made and saved there (owner-only).
    /// Keep it to keep the same swarm ID (a presentation: the same stream key) across
    /// restarts.
    #[arg(long, default_value = "ppspp-live.key")]
    pub key: PathBuf,
    /// Algorithm of a new key: ecdsa-p256 (the RFC's default) or ed25519.
    #[arg(long, default_value = "ecdsa-p256", value_parser = key_file::parse_algorithm)]
    pub algorithm: LiveAlgorithm,
    /// Chunks under one signature (a power of two, 2 to 65536): fewer signatures, or
    /// chunks announced sooner. 1 signs every chunk itself (RFC 7574's Sign All): no
    /// hashes travel, but each chunk costs a signature to make and to check.
    #[arg(long = "chunks-per-signature", default_value_t = 16)]
    pub chunks_per_signature: u64,
    /// Chunks kept behind the live edge (the discard window; what each viewer holds at
    /// most). Default: 4096; for a presentation's renditions, 45 s of each at the bandwidth
    /// its playlist or MPD declares (at least 256 chunks).
    #[arg(long)]
    pub window: Option<u64>,
    /// Merkle hash function: sha1, sha224, sha256, sha384 or sha512.
    #[arg(long = "hash", default_value = "sha256")]
    pub hash: HashAlgorithm,
    /// Seconds to keep serving after the input (or the playlists) end, so viewers get the
    /// stream's tail.
    #[arg(long, default_value_t = 10)]
    pub linger: u64,
    /// Most peers connected at once (per swarm).
    #[arg(long = "max-peers", default_value_t = 256)]
    pub max_peers: usize,
    /// Peers served at once; the others get the stream from them (they are choked here).
    /// About the upload rate divided by the stream's: a source serving every viewer
    /// itself becomes the bottleneck, and every viewer falls behind.
    #[arg(long = "max-unchoked", default_value_t = 8)]
    pub max_unchoked: usize,
}

impl LiveSourceArgs {
    /// An error unless somewhere to serve is given.
    /// The stream's parameters with chunks of `chunk_size` bytes.
    pub fn params(&self, chunk_size: usize) -> Result<LiveParams, ChunkSizeTooLarge> {
        Ok(LiveParams {
            hash: self.hash,
            chunk_size: u32::try_from(chunk_size).map_err(|_| ChunkSizeTooLarge)?,
            chunks_per_signature: self.chunks_per_signature,
            discard_window: self.window.unwrap_or(DEFAULT_DISCARD_WINDOW),
        })
    }

    /// A presentation rendition's parameters: without `--window`, a window of
    /// [`RENDITION_WINDOW_SECS`] at its declared `bandwidth` (bits per second), so a page
    /// holds what its player may ask for and not minutes more.
    pub fn rendition_params(
        &self,
        chunk_size: usize,
        bandwidth: Option<u64>,
    ) -> Result<LiveParams, ChunkSizeTooLarge> {
        let mut params = self.params(chunk_size)?;
        if let (None, Some(bps)) = (self.window, bandwidth) {
            let bytes = bps / 8 * RENDITION_WINDOW_SECS;
            params.discard_window = bytes.div_ceil(chunk_size.max(1) as u64).max(256);
        }
        Ok(params)
    }

    /// The source engine's configuration (peers, a random seed, the wall clock).
    pub fn engine_config(&self, clock: &Clock) -> EngineConfig {
        EngineConfig {
            max_peers: self.max_peers.max(1),
            max_unchoked: self.max_unchoked.max(1),
            seed: crate::random_seed(),
            wall_clock_offset: clock.wall_clock_offset(),
            ..EngineConfig::default()
        }
    }
}

/// The key in `path`, or a new one saved there.
pub(crate) fn load_or_make_key(
    path: &Path,
    alg: LiveAlgorithm,
) -> Result<LiveSigningKey, KeyFileError> {
    if path.exists() {
        let key = key_file::read(path)?;
        eprintln!("live: signing with the key in {}", path.display());
        Ok(key)
    } else {
        let key = key_file::create(path, alg)?;
        eprintln!(
            "live: made a new {} key and saved it to {} (owner-only). Keep it: restarted with it, the stream keeps its swarm ID and URI.",
            alg.name(),
            path.display()
        );
        Ok(key)
    }
}

/// What the reader thread found wrong with the input.
type ReadError = Arc<Mutex<Option<InputError>>>;

/// Reads stdin on a thread of its own: the initialisation segment goes to `init` (and in
/// front of every media segment), then every chunk to `chunks`, then `None` at the end of the input, and then `ended` fires.
fn read_stdin(
    chunk_size: usize,
    group: u64,
    init: oneshot::Sender<Vec<u8>>,
    chunks: mpsc::Sender<Option<Vec<u8>>>,
    ended: oneshot::Sender<()>,
    error: ReadError,
) {
    std::thread::spawn(move || {
        let mut init = Some(init);
        let mut in_band = Vec::new();
        let mut segmenter = Segmenter::new();
        let mut chunker = Chunker::new(chunk_size, group);
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut stdin = std::io::stdin().lock();
        loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    *error.lock().unwrap_or_else(|p| p.into_inner()) = Some(InputError::Read(e));
                    break;
                }
            };
            if let Err(e) = segmenter.push(&buf[..n]) {
                *error.lock().unwrap_or_else(|p| p.into_inner()) = Some(InputError::Segment(e));
                break;
            }
            if let Some(bytes) = segmenter.init()
                && let Some(tx) = init.take()
            {
                in_band = bytes.to_vec();
                let _ = tx.send(in_band.clone());
            }
            while let Some(mut piece) = segmenter.pop() {
                // Each media segment carries the initialisation segment in front of it: a
                // viewer joining anywhere finds it in the swarm, signed as every chunk is.
                if piece.starts_segment {
                    piece.bytes.splice(0..0, in_band.iter().copied());
                }
                chunker.add(&piece, &mut out);
            }
            for chunk in out.drain(..) {
                if chunks.blocking_send(Some(chunk)).is_err() {
                    return;
                }
            }
        }
        chunker.flush(&mut out);
        for chunk in out.drain(..) {
            let _ = chunks.blocking_send(Some(chunk));
        }
        let _ = chunks.blocking_send(None);
        let _ = ended.send(());
    });
}

pub fn run(args: &LiveArgs) -> Result<(), LiveError> {
    let source = &args.source;
    source.listen.check()?;
    let params = source.params(args.chunk_size)?;
    let key = load_or_make_key(&source.key, source.algorithm)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LiveError::Runtime)?;
    runtime.block_on(async {
        let (init_tx, init_rx) = oneshot::channel();
        let (chunk_tx, mut feed) = mpsc::channel(1024);
        let read_error = ReadError::default();
        let (ended_tx, ended_rx) = oneshot::channel::<()>();
        read_stdin(
            args.chunk_size,
            source.chunks_per_signature,
            init_tx,
            chunk_tx,
            ended_tx,
            read_error.clone(),
        );
        eprintln!("live: reading the stream from stdin (WebM, or fragmented MP4)");
        // Taken, not copied: nothing reads it after this failure.
        let init = init_rx.await.map_err(|_| {
            read_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .map_or(LiveError::NoMediaSegment, LiveError::Input)
        })?;
        let clock = Clock::new();
        let config = EngineConfig {
            upload_limit: args.upload_limit,
            ..source.engine_config(&clock)
        };
        let info = LiveInfo {
            key: key.public_key().clone(),
            params,
        };
        let mut engine = Engine::new_live_source(
            config,
            key,
            params,
            SparseStore::live(args.chunk_size),
            clock.now(),
        )
        .map_err(LiveError::Start)?;
        // The URI names the stream only: the initialisation segment travels in the stream,
        // in front of each media segment (it was read, so the input is one we can cut).
        drop(init);
        let mut uri = LiveUri::new(info.clone());
        let end = source
            .listen
            .open(0, &info.key.signaling_room(), engine.config().max_peers)
            .await?;
        uri.udp.extend(end.udp.clone());
        uri.signal = source.listen.signal_url();
        crate::print_line(&uri)?;
        eprintln!(
            "live: streaming on {}; Ctrl-C stops",
            end.described.join(" and ")
        );
        let linger = Duration::from_secs(source.linger);
        let stop = async move {
            tokio::select! {
                _ = crate::shutdown_signal() => {}
                _ = async {
                    if ended_rx.await.is_ok() {
                        eprintln!(
                            "live: the input ended; serving the stream's tail for {} s",
                            linger.as_secs()
                        );
                        tokio::time::sleep(linger).await;
                    } else {
                        std::future::pending::<()>().await;
                    }
                } => {}
            }
        };
        let reports = Reports {
            stats: args.stats_json.then(StatsPrinter::new),
            metrics: None,
        };
        end.run(
            &mut engine,
            &clock,
            reports,
            Some(&mut feed),
            net::report_peers,
            stop,
        )
        .await;
        match read_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        source: LiveSourceArgs,
    }

    fn args(extra: &[&str]) -> LiveSourceArgs {
        Cli::try_parse_from(std::iter::once("ppspp").chain(extra.iter().copied()))
            .unwrap()
            .source
    }

    #[test]
    fn a_rendition_keeps_45_s_at_its_bandwidth_unless_told_otherwise() {
        let a = args(&[]);
        assert_eq!(
            a.params(1024).unwrap().discard_window,
            DEFAULT_DISCARD_WINDOW
        );
        // 2.8 Mbit/s for 45 s in 8 KiB chunks.
        let hd = a.rendition_params(8192, Some(2_800_000)).unwrap();
        assert_eq!(hd.discard_window, (2_800_000u64 / 8 * 45).div_ceil(8192));
        // A low rendition still keeps a floor; one with no declared bandwidth the default.
        assert_eq!(
            a.rendition_params(8192, Some(64_000))
                .unwrap()
                .discard_window,
            256
        );
        assert_eq!(
            a.rendition_params(8192, None).unwrap().discard_window,
            DEFAULT_DISCARD_WINDOW
        );
        let told = args(&["--window", "1000"]);
        assert_eq!(
            told.rendition_params(8192, Some(2_800_000))
                .unwrap()
                .discard_window,
            1000
        );
    }
}
