//! `ppspp fetch --live URI -o FILE`: joins a live stream at its edge and records it: the
//! initialisation segment, then every chunk in order from the first that begins a media
//! segment. The source puts the initialisation segment in front of each media segment: the
//! first one found is written, and the copies after it are left out, so the file has one
//! (an older URI's `init=` gives it too). A gap (chunks that left the window before they
//! came) skips to the next segment, so the file stays playable.

pub use super::error::RecordError;
use super::segmenter::{Container, Segmenter, container_of, starts_segment};
use crate::fetch::{MAX_RTC_OFFERS, PeerError, default_bind, give_up, join_rtc, resolve_peers};
use crate::net::{self, Flow, Links, Peer};
use crate::stats::StatsPrinter;
use crate::udp::{self, Clock};
use ppspp::engine::{Engine, EngineConfig, Event};
use ppspp::live::LiveUri;
use ppspp::store::{ChunkStore, SparseStore};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

/// What `fetch` passes on for a live stream.
pub struct LiveFetch<'a> {
    pub uri: &'a str,
    pub output: &'a Path,
    pub udp: &'a [String],
    pub signal: &'a [String],
    pub bind: Option<SocketAddr>,
    pub stats_json: bool,
    pub give_up_after: u64,
    pub ice: &'a crate::ice_args::IceArgs,
}

/// Writes the stream's chunks in order.
struct Recorder {
    /// The initialisation segment written (`None`: not found yet).
    init: Option<Vec<u8>>,
    file: std::io::BufWriter<std::fs::File>,
    /// The next chunk to write (`None`: waiting for a segment to start at).
    next: Option<u64>,
    /// A copy of the initialisation segment being left out: bytes of it seen so far, kept
    /// until they are all seen (a different one is written after all).
    copy: Option<Vec<u8>>,
    written: u64,
    chunks: u64,
    gaps: u64,
}

/// The initialisation segment at the start of `bytes` (a segment's first chunks), if they
/// hold it whole.
fn init_at(bytes: &[u8]) -> Option<Vec<u8>> {
    container_of(bytes)?;
    let mut s = Segmenter::new();
    s.push(bytes).ok()?;
    s.init().map(<[u8]>::to_vec)
}

impl Recorder {
    /// Writes what can be written now.
    fn catch_up(&mut self, engine: &mut Engine<Peer, SparseStore>) -> std::io::Result<()> {
        let floor = engine.live_floor().unwrap_or(0);
        if self.next.is_some_and(|n| n < floor) {
            // The window moved past chunks that never came.
            self.next = None;
            self.gaps += 1;
        }
        let mut data = Vec::new();
        if self.next.is_none() {
            let held: Vec<u64> = engine
                .have()
                .filled_ranges()
                .flat_map(|r| r.start..r.end)
                .filter(|&c| c >= floor)
                .collect();
            for c in held {
                data.clear();
                if !engine.store_mut().read_chunk(c, &mut data).unwrap_or(false) {
                    continue;
                }
                let starts = match &self.init {
                    Some(init) => {
                        container_of(&data).is_some() || starts_segment(kind(init), &data)
                    }
                    None => container_of(&data).is_some(),
                };
                if !starts {
                    continue;
                }
                if self.init.is_none() {
                    // Its initialisation segment, which may take a few chunks.
                    let mut head = data.clone();
                    let mut k = c + 1;
                    let mut more = Vec::new();
                    while head.len() < super::segmenter::MAX_INIT_LEN + 64 {
                        more.clear();
                        if !engine.store_mut().read_chunk(k, &mut more).unwrap_or(false) {
                            break;
                        }
                        head.extend_from_slice(&more);
                        k += 1;
                    }
                    let Some(init) = init_at(&head) else {
                        continue;
                    };
                    self.file.write_all(&init)?;
                    self.init = Some(init);
                }
                self.next = Some(c);
                break;
            }
        }
        while let Some(n) = self.next {
            data.clear();
            if !engine.store_mut().read_chunk(n, &mut data).unwrap_or(false) {
                break;
            }
            self.write_chunk(&data)?;
            self.chunks += 1;
            self.next = Some(n + 1);
        }
        self.file.flush()
    }

    /// Writes a chunk, leaving out a copy of the initialisation segment at its start.
    fn write_chunk(&mut self, data: &[u8]) -> std::io::Result<()> {
        let init = self.init.as_deref().unwrap_or_default();
        let mut rest = data;
        if self.copy.is_none() && !init.is_empty() && container_of(rest).is_some() {
            self.copy = Some(Vec::new());
        }
        if let Some(seen) = self.copy.as_mut() {
            let want = &init[seen.len()..];
            let n = want.len().min(rest.len());
            if rest[..n] == want[..n] {
                seen.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if seen.len() == init.len() {
                    self.copy = None;
                }
            } else {
                // Not the same initialisation segment (the source's input changed): kept.
                let seen = self.copy.take().unwrap_or_default();
                self.file.write_all(&seen)?;
                self.written += seen.len() as u64;
            }
        }
        self.file.write_all(rest)?;
        self.written += rest.len() as u64;
        Ok(())
    }
}

/// The container of an initialisation segment known to be one.
fn kind(init: &[u8]) -> Container {
    container_of(init).unwrap_or(Container::WebM)
}

pub fn run(req: &LiveFetch<'_>) -> Result<(), RecordError> {
    let uri: LiveUri = req
        .uri
        .trim()
        .parse()
        .map_err(|source| RecordError::BadUri {
            uri: req.uri.to_string(),
            source,
        })?;
    // An older URI gives the initialisation segment (`init=`); the stream carries it too.
    let init = uri.init.clone();
    if init.as_deref().is_some_and(|i| container_of(i).is_none()) {
        return Err(RecordError::InitNotMedia);
    }
    let signal: Vec<String> = match req.signal.is_empty() {
        true => uri.signal.clone().into_iter().collect(),
        false => req.signal.to_vec(),
    };
    let peers = resolve_peers(uri.udp.iter().chain(req.udp))?;
    if peers.is_empty() && signal.is_empty() {
        return Err(RecordError::NoPeerInUri);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RecordError::Runtime)?;
    let room = uri.info.key.signaling_room();
    let mut rtc = match signal.is_empty() {
        false => Some(runtime.block_on(join_rtc(&signal, &room, req.bind, req.ice))?),
        true => None,
    };
    let rtc_peers: Vec<String> = rtc
        .as_ref()
        .map(|r| r.welcome_peers().into_iter().take(MAX_RTC_OFFERS).collect())
        .unwrap_or_default();
    if peers.is_empty() && rtc_peers.is_empty() {
        return Err(RecordError::NobodyInRoom(
            rtc.as_ref().map_or("?", |r| r.signal_url()).to_string(),
        ));
    }
    // To a file: recorded into a new `NAME.<random>.part` (never through a path planted
    // there) and renamed over NAME once something was recorded, so an existing file is not
    // touched by a recording that gets nothing. To a pipe or a device (`-o /dev/stdout`,
    // a FIFO a player reads), written as it comes.
    let cannot = |source| RecordError::Write {
        path: req.output.to_path_buf(),
        source,
    };
    let own = std::fs::symlink_metadata(req.output).ok();
    let streamed = own.as_ref().is_some_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_fifo() || m.file_type().is_char_device()
    });
    if own.is_some_and(|m| m.file_type().is_symlink())
        && std::fs::metadata(req.output).is_ok_and(|m| !m.is_file())
    {
        // A link to a pipe or a device could be planted to make us write anywhere.
        return Err(RecordError::LinkToNonFile(req.output.to_path_buf()));
    }
    let (file, part) = if streamed {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(req.output)
            .map_err(cannot)?;
        (file, Unfinished(None))
    } else {
        crate::file_store::check_output(req.output).map_err(cannot)?;
        let (part, file) = crate::file_store::create_temporary(req.output).map_err(cannot)?;
        (file, Unfinished(Some(part)))
    };
    let mut recorder = Recorder {
        init: init.clone(),
        file: std::io::BufWriter::new(file),
        next: None,
        copy: None,
        written: 0,
        chunks: 0,
        gaps: 0,
    };
    if let Some(init) = &init {
        recorder.file.write_all(init).map_err(cannot)?;
    }
    let bind = req.bind.unwrap_or_else(|| default_bind(&peers));
    let (stats, failed) = runtime.block_on(async {
        let socket = match peers.is_empty() {
            true => None,
            false => Some(udp::bind(bind).map_err(|source| RecordError::BindUdp {
                addr: bind,
                source,
            })?),
        };
        let clock = Clock::new();
        let config = EngineConfig {
            seed: crate::random_seed(),
            wall_clock_offset: clock.wall_clock_offset(),
            ..EngineConfig::default()
        };
        let chunk_size = uri.info.params.chunk_size as usize;
        let mut engine = Engine::new_live(
            config,
            uri.info.clone(),
            SparseStore::live(chunk_size),
            clock.now(),
        )
        .map_err(RecordError::Start)?;
        for p in &peers {
            engine.connect(Peer::Udp(*p), clock.now());
        }
        if let Some(r) = rtc.as_mut() {
            for p in &rtc_peers {
                r.offer(p).map_err(PeerError::from)?;
            }
        }
        eprintln!("live: recording to {} (Ctrl-C stops)", req.output.display());
        let progressed = std::cell::Cell::new(Some(Instant::now()));
        let mut failed = None;
        net::run(
            &mut engine,
            Links {
                udp: socket.as_ref(),
                rtc: rtc.as_mut(),
                origin: None,
                live: None,
                metrics: None,
            },
            &clock,
            req.stats_json.then(StatsPrinter::new),
            |engine, event| {
                match event {
                    Event::ChunkVerified { .. } => {
                        progressed.set(Some(Instant::now()));
                        if let Err(e) = recorder.catch_up(engine) {
                            failed = Some(cannot(e));
                            return Flow::Stop;
                        }
                    }
                    Event::LiveRestarted => {
                        // A new run of the source: chunks from 0 again, perhaps another
                        // initialisation segment. The recording of this run ends here.
                        eprintln!("live: the stream restarted (a new run of its source); the recording ends");
                        return Flow::Stop;
                    }
                    Event::ChunkRejected {
                        chunk,
                        from,
                        reason,
                    } => eprintln!("rejected chunk {chunk} from {from}: {reason}"),
                    Event::PeerClosed { peer, reason } => eprintln!("peer {peer} left: {reason}"),
                    _ => {}
                }
                Flow::Continue
            },
            give_up(req.give_up_after, &progressed),
        )
        .await;
        Ok::<_, RecordError>((engine.stats(), failed))
    })?;
    if recorder.chunks == 0 {
        return Err(failed.unwrap_or(RecordError::NothingRecorded {
            verified: stats.chunks_verified,
            rejected: stats.chunks_rejected,
        }));
    }
    // What was recorded is kept even when writing failed later: it plays up to there.
    let _ = recorder.file.flush();
    part.keep_as(req.output).map_err(cannot)?;
    if let Some(e) = failed {
        return Err(e);
    }
    eprintln!(
        "recorded {}: {} bytes of media in {} chunks after the {}-byte header; {} gap(s); {} chunks verified, {} rejected",
        req.output.display(),
        recorder.written,
        recorder.chunks,
        recorder.init.as_ref().map_or(0, Vec::len),
        recorder.gaps,
        stats.chunks_verified,
        stats.chunks_rejected
    );
    Ok(())
}

/// A recording's `.part` file: removed unless it is kept under its final name.
struct Unfinished(Option<std::path::PathBuf>);

impl Unfinished {
    /// Renames the recording into place; if that fails, the recording stays where it is
    /// and the error names it.
    fn keep_as(mut self, output: &Path) -> std::io::Result<()> {
        match self.0.take() {
            Some(part) => std::fs::rename(&part, output).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("{e}; the recording is kept as {}", part.display()),
                )
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(part) = self.0.take() {
            let _ = std::fs::remove_file(part);
        }
    }
}
