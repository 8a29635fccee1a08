//! `ppspp hls live MASTER.m3u8` and `ppspp dash live MANIFEST.mpd`: follows a live
//! presentation a packager writes into a folder (ffmpeg's `hls` muxer: fMP4 or MPEG-TS, a
//! file per segment; its `dash` muxer: SegmentTemplate with a SegmentTimeline), makes each
//! rendition a signed live swarm (and serves it, if told where), and keeps
//! `NAME.ppspp.json` beside the master playlist or MPD (`live_manifest.rs`,
//! docs/FORMATS.md). The packager's files are left as they are: the web server keeps
//! serving them, and pages check what it serves against the manifest.
//!
//! Each media segment is cut so that it ends a signing group
//! (`ppspp::live::segment`): its munros cover it and nothing else, so a page can take it
//! whole from the web server and check it, and the part's record can list them.

use super::error::LivePresentationError;
use super::hls::{self, Variant};
use super::live_listing::{Listed, Listing};
use super::live_manifest::{InitEntry, LiveManifest, LivePartEntry, LiveRenditionEntry, ntp_hex};
use super::manifest::{FORMAT, VERSION, local_path, path_for, relative_uri};
use super::prepare::Packaging;
use crate::live::LiveSourceArgs;
use crate::net::{self, Flow};
use crate::root::parse_chunk_size;
use crate::serve::Reports;
use crate::udp::Clock;
use clap::Args;
use ppspp::engine::{Engine, EngineConfig, Event, LiveInfo, ntp_from_unix_micros};
use ppspp::live::segment::{segment_chunk_count, segment_chunk_lengths};
use ppspp::live::{InitSegment, LivePart, LiveRendition, LiveSigningKey, LiveUri, SignedMunro};
use ppspp::store::SparseStore;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;

#[derive(Args, Debug)]
pub struct LivePresentationArgs {
    /// The master playlist (or a lone media playlist) or the MPD the packager writes.
    pub master: PathBuf,
    /// Chunk size in bytes (1 to 1 MiB); a segment's last chunks are shorter.
    #[arg(long = "chunk-size", default_value_t = super::prepare::PRESENTATION_CHUNK_SIZE, value_parser = parse_chunk_size)]
    pub chunk_size: usize,
    /// Seconds to wait for the packager's first playlists.
    #[arg(long = "wait", default_value_t = 30)]
    pub wait: u64,
    // Its key is the stream key: pages are given its public half, and each rendition
    // signs with a key made from it.
    #[command(flatten)]
    pub source: LiveSourceArgs,
}

/// How often the playlists are read.
const POLL: Duration = Duration::from_millis(200);
/// Parts kept in the manifest beyond those the playlist still lists: players a little
/// behind still find theirs.
const EXTRA_PARTS: usize = 4;

/// A rendition being followed: its playlist, its swarm's feed, what is signed of it.
struct Follow {
    variant: Variant,
    listing: Listing,
    key: LiveSigningKey,
    info: LiveInfo,
    feed: mpsc::Sender<Option<Vec<u8>>>,
    signed: mpsc::UnboundedReceiver<SignedMunro>,
    /// The next media sequence number to take.
    next_sequence: Option<u64>,
    next_chunk: u64,
    /// The rendition's record (its initialisation segment in it) and its signature.
    record: Option<(LiveRendition, Vec<u8>)>,
    /// Segments pushed whose munros are not all in yet.
    pending: Vec<LivePart>,
    munros: BTreeMap<u64, SignedMunro>,
    parts: Vec<LivePartEntry>,
    /// Segments the playlist listed last time.
    listed: usize,
    ended: bool,
}

pub fn run(args: &LivePresentationArgs, packaging: Packaging) -> Result<(), LivePresentationError> {
    // Checked before waiting for the packager.
    args.source.params(args.chunk_size)?;
    let stream_key = crate::live::load_or_make_key(&args.source.key, args.source.algorithm)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LivePresentationError::Runtime)?;
    runtime.block_on(async {
        let variants =
            wait_for_renditions(&args.master, packaging, Duration::from_secs(args.wait)).await?;
        let clock = Clock::new();
        let config = args.source.engine_config(&clock);
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut follows = Vec::new();
        let mut serving = Vec::new();
        for (i, (variant, listing)) in variants.into_iter().enumerate() {
            let params = args
                .source
                .rendition_params(args.chunk_size, variant.bandwidth)?;
            let key = stream_key.derive(&variant.uri);
            let info = LiveInfo {
                key: key.public_key().clone(),
                params,
            };
            let engine = Engine::new_live_source(
                EngineConfig {
                    seed: config.seed.wrapping_add(i as u64),
                    ..config.clone()
                },
                stream_key.derive(&variant.uri),
                params,
                SparseStore::live(args.chunk_size),
                clock.now(),
            )
            .map_err(|source| LivePresentationError::Start {
                id: variant.uri.clone(),
                source,
            })?;
            let (feed_tx, feed_rx) = mpsc::channel(4096);
            let (signed_tx, signed_rx) = mpsc::unbounded_channel();
            serving.push(serve_rendition(
                args,
                i,
                variant.uri.clone(),
                engine,
                feed_rx,
                signed_tx,
                &clock,
                stop_rx.clone(),
            ));
            follows.push(Follow {
                variant,
                listing,
                key,
                info,
                feed: feed_tx,
                signed: signed_rx,
                next_sequence: None,
                next_chunk: 0,
                record: None,
                pending: Vec::new(),
                munros: BTreeMap::new(),
                parts: Vec::new(),
                listed: 0,
                ended: false,
            });
        }
        crate::print_line(ppspp::hex::encode(stream_key.public_key().swarm_id()))?;
        let manifest_path = path_for(&args.master);
        eprintln!(
            "live: following {} ({} renditions); the manifest is {}; pages are given the stream key printed above",
            args.master.display(),
            follows.len(),
            manifest_path.display()
        );
        let follow = follow_all(args, &stream_key, follows, &clock, &manifest_path, stop_tx);
        let (followed, served) = tokio::join!(follow, futures_util::future::join_all(serving));
        let failed: Vec<LivePresentationError> =
            served.into_iter().filter_map(Result::err).collect();
        followed?;
        if failed.is_empty() {
            Ok(())
        } else {
            Err(LivePresentationError::Renditions(failed))
        }
    })
}

/// The renditions and where each is listed, once the packager wrote its playlists or MPD.
async fn wait_for_renditions(
    master: &Path,
    packaging: Packaging,
    wait: Duration,
) -> Result<Vec<(Variant, Listing)>, LivePresentationError> {
    let until = tokio::time::Instant::now() + wait;
    loop {
        let error = match renditions(master, packaging) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if tokio::time::Instant::now() >= until {
            return Err(LivePresentationError::Waited {
                error: Box::new(error),
                secs: wait.as_secs(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The renditions of the master playlist or MPD at `master`, each with where it is listed.
fn renditions(
    master: &Path,
    packaging: Packaging,
) -> Result<Vec<(Variant, Listing)>, LivePresentationError> {
    let dir = master.parent().unwrap_or(Path::new("."));
    match packaging {
        Packaging::Hls => hls::variants(master)?
            .into_iter()
            .map(|v| {
                let playlist = local_path(dir, &v.uri)?;
                Ok((v, Listing::Hls(playlist)))
            })
            .collect(),
        Packaging::Dash => {
            let live = super::dash::read_live(master)?
                .ok_or_else(|| LivePresentationError::NotAnMpd(master.to_path_buf()))?;
            if live.representations.is_empty() {
                return Err(LivePresentationError::NoRepresentation(
                    master.to_path_buf(),
                ));
            }
            Ok(live
                .representations
                .into_iter()
                .map(|r| {
                    let id = r.variant.uri.clone();
                    let listing = Listing::Dash {
                        mpd: master.to_path_buf(),
                        id,
                    };
                    (r.variant, listing)
                })
                .collect())
        }
    }
}

/// Serves one rendition's swarm until `stop`, passing on what its engine signs.
#[allow(clippy::too_many_arguments)]
async fn serve_rendition(
    args: &LivePresentationArgs,
    index: usize,
    id: String,
    mut engine: Engine<crate::net::Peer, SparseStore>,
    mut feed: mpsc::Receiver<Option<Vec<u8>>>,
    signed: mpsc::UnboundedSender<SignedMunro>,
    clock: &Clock,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), LivePresentationError> {
    let room = engine
        .live_info()
        .map(|i| i.key.signaling_room())
        .unwrap_or_default();
    let end = args
        .source
        .listen
        .open(index, &room, engine.config().max_peers)
        .await
        .map_err(|source| LivePresentationError::Listen {
            id: id.clone(),
            source,
        })?;
    if end.described.is_empty() {
        eprintln!(
            "live: rendition {id} signed only (no --signal or --udp): pages take each segment's first copy from the web server"
        );
    } else {
        eprintln!("live: rendition {id} on {}", end.described.join(" and "));
    }
    let stopped = async move {
        while !*stop.borrow() {
            if stop.changed().await.is_err() {
                break;
            }
        }
    };
    end.run(
        &mut engine,
        clock,
        Reports::default(),
        Some(&mut feed),
        |e, event| match event {
            Event::LiveSigned { munro } => {
                let _ = signed.send(munro);
                Flow::Continue
            }
            other => net::report_peers(e, other),
        },
        stopped,
    )
    .await;
    Ok(())
}

/// Reads the playlists until they end (or Ctrl-C), feeding new segments to their swarms
/// and writing the manifest as their parts are signed.
async fn follow_all(
    args: &LivePresentationArgs,
    stream_key: &LiveSigningKey,
    mut follows: Vec<Follow>,
    clock: &Clock,
    manifest_path: &Path,
    stop: tokio::sync::watch::Sender<bool>,
) -> Result<(), LivePresentationError> {
    let master_dir = args.master.parent().unwrap_or(Path::new(".")).to_path_buf();
    let source = relative_uri(&master_dir, &args.master)?;
    let mut written: Option<LiveManifest> = None;
    let shutdown = crate::shutdown_signal();
    tokio::pin!(shutdown);
    let result = loop {
        let mut failure = None;
        for f in &mut follows {
            if let Err(e) = f.take_new_segments(&master_dir, stream_key, clock).await {
                failure = Some(LivePresentationError::Rendition {
                    id: f.variant.uri.clone(),
                    source: Box::new(e),
                });
                break;
            }
            f.sign_ready_parts();
        }
        if let Some(e) = failure {
            break Err(e);
        }
        let manifest = manifest_of(&follows, stream_key, &source);
        if let Some(m) = manifest
            && written.as_ref() != Some(&m)
        {
            super::manifest::write_json(manifest_path, &m)?;
            written = Some(m);
        }
        let ended = follows.iter().all(|f| f.ended && f.pending.is_empty());
        if ended {
            eprintln!(
                "live: the packager's lists ended; serving the stream's tail for {} s",
                args.source.linger
            );
            tokio::time::sleep(Duration::from_secs(args.source.linger)).await;
            break Ok(());
        }
        tokio::select! {
            _ = &mut shutdown => break Ok(()),
            _ = tokio::time::sleep(POLL) => {}
        }
    };
    let _ = stop.send(true);
    result
}

/// The manifest, once every rendition's record is signed.
fn manifest_of(
    follows: &[Follow],
    stream_key: &LiveSigningKey,
    source: &str,
) -> Option<LiveManifest> {
    let mut renditions = Vec::new();
    for f in follows {
        let (record, signature) = f.record.as_ref()?;
        renditions.push(LiveRenditionEntry {
            id: f.variant.uri.clone(),
            kind: f.variant.kind.to_string(),
            bandwidth: f.variant.bandwidth,
            resolution: f.variant.resolution.clone(),
            swarm: LiveUri::new(f.info.clone()).to_string(),
            init: record.init.as_ref().map(|i| InitEntry {
                uri: i.uri.clone(),
                length: i.length,
                hash: i.hash.to_hex(),
            }),
            signed_at: ntp_hex(record.timestamp),
            signature: ppspp::hex::encode(signature),
            parts: f.parts.clone(),
        });
    }
    Some(LiveManifest {
        format: FORMAT.into(),
        version: VERSION,
        kind: super::live_manifest::LIVE.into(),
        source: source.into(),
        key: ppspp::hex::encode(stream_key.public_key().swarm_id()),
        ended: follows.iter().all(|f| f.ended),
        renditions,
    })
}

impl Follow {
    /// Reads what the packager lists and feeds the segments not taken yet to the swarm.
    async fn take_new_segments(
        &mut self,
        master_dir: &Path,
        stream_key: &LiveSigningKey,
        clock: &Clock,
    ) -> Result<(), LivePresentationError> {
        if self.ended {
            return Ok(());
        }
        let Some(Listed { segments, ended }) = self.listing.read()? else {
            return Ok(());
        };
        let last = segments.last().map(|s| s.sequence + 1);
        if let (Some(last), Some(next)) = (last, self.next_sequence)
            && last < next
        {
            // Numbered from the start again: the packager restarted, and its segments'
            // names may be those of earlier ones. They go on in the same swarm; the
            // manifest forgets the earlier names.
            eprintln!(
                "live: rendition {}: the packager started again (segment {} after {}); the stream goes on",
                self.variant.uri,
                segments.first().map_or(0, |s| s.sequence),
                next
            );
            self.parts.clear();
            self.pending.clear();
            self.next_sequence = None;
        }
        self.listed = segments.len();
        for seg in &segments {
            if self.next_sequence.is_some_and(|n| seg.sequence < n) {
                continue;
            }
            match &seg.init {
                Some(path) => self.take_init(master_dir, path, stream_key, clock)?,
                None if self.record.is_none() => self.sign_record(None, stream_key, clock),
                None => {}
            }
            let uri = relative_uri(master_dir, &seg.path)?;
            let bytes = match std::fs::read(&seg.path) {
                Ok(b) => b,
                // Deleted since it was listed (a packager's window moved on): skipped.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.next_sequence = Some(seg.sequence + 1);
                    continue;
                }
                Err(source) => {
                    return Err(LivePresentationError::Read {
                        path: seg.path.clone(),
                        source,
                    });
                }
            };
            if bytes.is_empty() {
                self.next_sequence = Some(seg.sequence + 1);
                continue;
            }
            self.push_segment(uri, &bytes).await?;
            self.next_sequence = Some(seg.sequence + 1);
        }
        if ended {
            self.ended = true;
            let _ = self.feed.send(None).await;
        }
        Ok(())
    }

    /// Signs the rendition's record with the initialisation section at `path`, when it is
    /// new or changed.
    fn take_init(
        &mut self,
        master_dir: &Path,
        path: &Path,
        stream_key: &LiveSigningKey,
        clock: &Clock,
    ) -> Result<(), LivePresentationError> {
        let uri = relative_uri(master_dir, path)?;
        let bytes = std::fs::read(path).map_err(|source| LivePresentationError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let init = InitSegment {
            uri,
            length: bytes.len() as u64,
            hash: self.info.params.hash.digest(&bytes),
        };
        if self.record.as_ref().and_then(|(r, _)| r.init.as_ref()) == Some(&init) {
            return Ok(());
        }
        self.sign_record(Some(init), stream_key, clock);
        Ok(())
    }

    /// Signs the rendition's record naming `init` (none: segments that need no
    /// initialisation section, as MPEG-TS).
    fn sign_record(
        &mut self,
        init: Option<InitSegment>,
        stream_key: &LiveSigningKey,
        clock: &Clock,
    ) {
        let wall = clock.now() + clock.wall_clock_offset();
        let record = LiveRendition {
            id: self.variant.uri.clone(),
            info: self.info.clone(),
            init,
            timestamp: ntp_from_unix_micros(wall.as_micros()),
        };
        let signature = record.sign(stream_key);
        self.record = Some((record, signature));
    }

    /// Cuts a segment into chunks that end a signing group and feeds them to the swarm.
    async fn push_segment(
        &mut self,
        uri: String,
        bytes: &[u8],
    ) -> Result<(), LivePresentationError> {
        let cs = self.info.params.chunk_size as usize;
        let group = self.info.params.chunks_per_signature;
        let count = segment_chunk_count(bytes.len(), cs, group, self.next_chunk);
        let lengths = segment_chunk_lengths(bytes.len(), cs, count).ok_or_else(|| {
            LivePresentationError::CannotCut {
                uri: uri.clone(),
                count,
            }
        })?;
        let mut at = 0;
        for len in lengths {
            self.feed
                .send(Some(bytes[at..at + len].to_vec()))
                .await
                .map_err(|_| LivePresentationError::SwarmStopped)?;
            at += len;
        }
        self.pending.push(LivePart {
            uri,
            first_chunk: self.next_chunk,
            chunks: count,
            length: bytes.len() as u64,
            timestamp: 0,
        });
        self.next_chunk += count;
        Ok(())
    }

    /// Signs the parts whose munros are all in, and keeps the playlist's window of them.
    fn sign_ready_parts(&mut self) {
        while let Ok(m) = self.signed.try_recv() {
            self.munros.insert(m.bin.base_offset(), m);
        }
        while let Some(part) = self.pending.first() {
            let mut over = Vec::new();
            let mut next = part.first_chunk;
            while next < part.end_chunk() {
                let Some(m) = self.munros.get(&next) else {
                    break;
                };
                over.push(m.clone());
                next = m.bin.base_offset() + m.bin.base_length();
            }
            if next != part.end_chunk() {
                break;
            }
            let mut part = self.pending.remove(0);
            part.timestamp = over.iter().map(|m| m.timestamp).max().unwrap_or(0);
            let signature = part.sign(&self.key);
            self.parts.push(LivePartEntry::of(&part, &signature, &over));
            self.munros.retain(|&first, _| first >= part.end_chunk());
        }
        let keep = self.listed + EXTRA_PARTS;
        if self.parts.len() > keep {
            self.parts.drain(..self.parts.len() - keep);
        }
    }
}
