//! `ppspp seed FILE`: hash the file, print its swarm URI, serve it until interrupted.

use crate::file_store::FileStore;
use crate::metrics::{MetricsError, SeedMetrics};
use crate::net::{self, Flow};
use crate::presentation::error::PresentationSeedError;
use crate::root::{DEFAULT_CHUNK_SIZE, RootError, hash_with_progress, parse_chunk_size};
use crate::serve::{ListenArgs, Reports, ServeError};
use crate::stats::StatsPrinter;
use crate::udp::Clock;
use clap::Args;
use ppspp::engine::{Engine, EngineConfig, EngineError, Event};
use ppspp::merkle::{HashAlgorithm, MerkleTree};
use ppspp::store::{ChunkStore, StoreError};
use ppspp::uri::SwarmUri;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct SeedArgs {
    /// The file to serve; or a presentation's manifest (`NAME.ppspp.json`, from `ppspp hls
    /// prepare`): every rendition is served, each its own swarm, with the hash function and
    /// chunk size the manifest names.
    pub(crate) file: PathBuf,
    /// Chunk size in bytes (1 to 1 MiB; the RFC recommends 1024).
    #[arg(long = "chunk-size", default_value_t = DEFAULT_CHUNK_SIZE, value_parser = parse_chunk_size)]
    chunk_size: usize,
    /// Merkle hash function: sha1 (the RFC default), sha224, sha256, sha384 or sha512.
    #[arg(long = "hash", default_value = "sha1")]
    hash: HashAlgorithm,
    /// Upload limit in bytes per second.
    #[arg(long = "upload-limit")]
    pub(crate) upload_limit: Option<u64>,
    /// Most peers connected at once (a seeder is everyone's first contact).
    #[arg(long = "max-peers", default_value_t = 256)]
    pub(crate) max_peers: usize,
    /// Print one JSON line of figures per second on stdout (after the URI line).
    #[arg(long = "stats-json")]
    pub(crate) stats_json: bool,
    /// Serve Prometheus metrics on http://ADDR/metrics (e.g. 127.0.0.1:9464): bytes sent,
    /// peers, handshakes refused, chunks resent, per swarm. Off by default; anyone who can
    /// reach ADDR can read them.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<SocketAddr>,
    #[command(flatten)]
    pub(crate) listen: ListenArgs,
}

/// Why `ppspp seed FILE` stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(transparent)]
    Listen(#[from] ServeError),
    #[error(transparent)]
    Hash(#[from] RootError),
    /// The file could not be opened for serving after it was hashed.
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Its length or modification time moved while it was hashed.
    #[error("{} changed while it was hashed: seed it again once it is complete", .0.display())]
    Changed(PathBuf),
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    #[error(transparent)]
    Serve(#[from] ServeContentError),
    /// The file changed while served, so it is no longer this swarm's content.
    #[error("stopped seeding {}: {source}; run ppspp seed again to serve its new content (a new swarm)", .path.display())]
    Stopped {
        path: PathBuf,
        #[source]
        source: StoreError,
    },
    /// Seeding a presentation's manifest.
    #[error(transparent)]
    Presentation(#[from] PresentationSeedError),
}

/// Why serving one content could not start: what `seed` of a file and of a presentation
/// share.
#[derive(Debug, thiserror::Error)]
pub enum ServeContentError {
    #[error("cannot start: {0}")]
    Engine(#[source] EngineError),
    #[error(transparent)]
    Listen(#[from] ServeError),
    #[error(transparent)]
    Stdout(#[from] crate::StdoutError),
}

pub fn run(args: &SeedArgs) -> Result<(), SeedError> {
    args.listen.check()?;
    if args
        .file
        .to_string_lossy()
        .ends_with(crate::presentation::manifest::SUFFIX)
    {
        return Ok(crate::presentation::seed::run(args)?);
    }
    // Looked at before hashing and after opening: the store watches the file from then on,
    // so a change while it was hashed is caught here.
    let stamp = |p: &std::path::Path| std::fs::metadata(p).map(|m| (m.len(), m.modified().ok()));
    let before = stamp(&args.file).ok();
    let tree = hash_with_progress(&args.file, args.hash, args.chunk_size)?;
    let store = FileStore::open_complete(&args.file, args.chunk_size).map_err(|source| {
        SeedError::Open {
            path: args.file.clone(),
            source,
        }
    })?;
    if store.content_len() != tree.content_len() || stamp(&args.file).ok() != before {
        return Err(SeedError::Changed(args.file.clone()));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SeedError::Runtime)?;
    runtime.block_on(async {
        let name = args
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let served = Served {
            name,
            uri_prefix: None,
            shown: args.file.display().to_string(),
            stats: args.stats_json.then(StatsPrinter::new),
            metrics: start_metrics(args).await?,
        };
        let clock = Clock::new();
        match serve(
            args,
            0,
            &tree,
            store,
            &clock,
            served,
            crate::shutdown_signal(),
        )
        .await?
        {
            Some(source) => Err(SeedError::Stopped {
                path: args.file.clone(),
                source,
            }),
            None => Ok(()),
        }
    })
}

/// How one seeded content is named and reported.
pub struct Served {
    /// The swarm URI's `name=`.
    pub name: String,
    /// Printed before the URI on its line (a presentation's rendition id).
    pub uri_prefix: Option<String>,
    /// What is seeded, in the "seeding …" message.
    pub shown: String,
    pub stats: Option<StatsPrinter>,
    /// Where the swarm's figures go for `--metrics`.
    pub metrics: Option<Arc<SeedMetrics>>,
}

/// Starts `--metrics`' server, if asked for, and says where it listens.
pub async fn start_metrics(args: &SeedArgs) -> Result<Option<Arc<SeedMetrics>>, MetricsError> {
    let Some(addr) = args.metrics else {
        return Ok(None);
    };
    let metrics = Arc::new(SeedMetrics::new());
    let local = metrics.serve(addr).await?;
    eprintln!("metrics on http://{local}{}", crate::metrics::PATH);
    Ok(Some(metrics))
}

/// Serves complete content (`tree`, `store`) on `socket` and the signaling servers of
/// `args` until `stop`: prints its URI line, then runs the engine. Returns why the store
/// stopped serving (its files changed), or `None` when stopped.
pub async fn serve<S: ChunkStore>(
    args: &SeedArgs,
    index: usize,
    tree: &MerkleTree,
    store: S,
    clock: &Clock,
    served: Served,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Option<StoreError>, ServeContentError> {
    let config = EngineConfig {
        upload_limit: args.upload_limit,
        max_peers: args.max_peers.max(1),
        seed: crate::random_seed(),
        wall_clock_offset: clock.wall_clock_offset(),
        ..EngineConfig::default()
    };
    let mut engine =
        Engine::new_seeder(config, tree, store, clock.now()).map_err(ServeContentError::Engine)?;
    let mut uri = SwarmUri::new(engine.content());
    let root = uri.root.to_hex();
    let end = args
        .listen
        .open(index, &root, engine.config().max_peers)
        .await?;
    uri.udp.extend(end.udp.clone());
    // The URI names one server; the instances share its rooms.
    uri.signal = args.listen.signal_url();
    uri.name = Some(served.name.clone());
    let reports = Reports {
        stats: served.stats,
        metrics: served.metrics.map(|m| m.swarm(&root, &served.name)),
    };
    match &served.uri_prefix {
        Some(p) => crate::print_line(format_args!("{p} {uri}"))?,
        None => crate::print_line(&uri)?,
    }
    eprintln!(
        "seeding {} on {}; Ctrl-C stops",
        served.shown,
        end.described.join(" and ")
    );
    // A file that changed under us is no longer the content of this swarm: serving on
    // would only get us banned by every fetcher, so the seeder stops and says why.
    let mut changed = None;
    end.run(
        &mut engine,
        clock,
        reports,
        None,
        |engine, event| match event {
            Event::StoreReadFailed { error, .. } => {
                changed = Some(error);
                Flow::Stop
            }
            other => net::report_peers(engine, other),
        },
        stop,
    )
    .await;
    Ok(changed)
}
